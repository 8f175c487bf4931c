// What the rows say: JSON that any parser reads whatever the key bytes, keys
// that start with '#', and a denied leaky-queue request with no release time.
// clang-format off
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"

namespace sluice::cli_output_format_test {
namespace {

using test::run_cli;
using json = nlohmann::json;

/// Every line of `jsonl` parsed strictly (nlohmann refuses invalid UTF-8).
std::vector<json> parse_lines(const std::string& jsonl) {
  std::vector<json> rows;
  std::istringstream in(jsonl);
  std::string line;
  while (std::getline(in, line)) rows.push_back(json::parse(line));
  return rows;
}

// ---- JSON keys ----

TEST(JsonKeys, ValidUtf8IsAStringAndAnythingElseIsNullWithHex) {
  const std::string trace =
      "0 \xff\xfe\n"             // not UTF-8
      "0 caf\xc3\xa9\n"          // UTF-8 "café"
      "0 a\"b\\c\n"              // quote and backslash
      "0 \x01\x7f\n"             // control bytes, valid UTF-8
      "0 \xed\xa0\x80\n"         // an encoded surrogate: not UTF-8
      "0 \xc0\xaf\n"             // an overlong '/': not UTF-8
      "0 \xf4\x90\x80\x80\n"     // above U+10FFFF: not UTF-8
      "0 \xf0\x9f\x98\x80\n"     // U+1F600, four bytes
      "0 \xe2\x80\xa8\n"         // U+2028
      "0\n";                     // no key
  const auto r = run_cli({"replay", "--limit", "1/1s", "--algorithm", "gcra", "--format", "json"}, trace);
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<json> rows;
  ASSERT_NO_THROW(rows = parse_lines(r.out)) << r.out;
  ASSERT_EQ(rows.size(), 10U);
  EXPECT_TRUE(rows[0]["key"].is_null());
  EXPECT_EQ(rows[0]["key_hex"], "fffe");
  EXPECT_EQ(rows[1]["key"], "caf\xc3\xa9");
  EXPECT_FALSE(rows[1].contains("key_hex"));
  EXPECT_EQ(rows[2]["key"], "a\"b\\c");
  EXPECT_EQ(rows[3]["key"], "\x01\x7f");
  EXPECT_TRUE(rows[4]["key"].is_null());
  EXPECT_EQ(rows[4]["key_hex"], "eda080");
  EXPECT_EQ(rows[5]["key_hex"], "c0af");
  EXPECT_EQ(rows[6]["key_hex"], "f4908080");
  EXPECT_EQ(rows[7]["key"], "\xf0\x9f\x98\x80");
  EXPECT_EQ(rows[8]["key"], "\xe2\x80\xa8");
  EXPECT_EQ(rows[9]["key"], "");
  // Every key is its own: the two invalid ones are not merged into one.
  for (const auto& row : rows) EXPECT_EQ(row["allowed"], true);
}

TEST(JsonKeys, CompareTopKeysFollowTheSameRule) {
  const std::string trace = "0 \xff\xfe\n0 \xff\xfe\n0 ok\n";
  const auto r = run_cli({"compare", "--limit", "1/1s", "--format", "json"}, trace);
  ASSERT_EQ(r.status, 0) << r.err;
  json doc;
  ASSERT_NO_THROW(doc = json::parse(r.out)) << r.out;
  ASSERT_EQ(doc["top_keys"].size(), 2U);
  EXPECT_TRUE(doc["top_keys"][0]["key"].is_null());
  EXPECT_EQ(doc["top_keys"][0]["key_hex"], "fffe");
  EXPECT_EQ(doc["top_keys"][1]["key"], "ok");
  EXPECT_FALSE(doc["top_keys"][1].contains("key_hex"));
}

TEST(JsonKeys, CsvKeepsTheBytesAsTheyAre) {
  const auto r = run_cli({"replay", "--limit", "1/1s", "--algorithm", "gcra"}, "0 \xff\xfe\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "request,time,key,cost,allowed,remaining,retry_after,reset_after\n"
                   "1,0,\xff\xfe,1,yes,0,0,1\n");
}

// ---- '#' in traces ----

TEST(TraceComments, AKeyMayStartWithHash) {
  const auto r = run_cli({"replay", "--limit", "1/1s", "--algorithm", "fixed-window"},
                         "# a comment line\n"
                         "   # an indented comment line\n"
                         "\t#\ttab-indented\n"
                         "0 #admin\n"
                         "0\n"
                         "0 #admin 1\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "request,time,key,cost,allowed,remaining,retry_after,reset_after\n"
                   "1,0,#admin,1,yes,0,0,1\n"
                   "2,0,,1,yes,0,0,1\n"        // the anonymous key is its own
                   "3,0,#admin,1,no,0,1,1\n");
}

TEST(TraceComments, HashAfterTheFieldsIsNotAComment) {
  const auto r = run_cli({"replay", "--limit", "1/1s", "--algorithm", "fixed-window"}, "0 k 1 # note\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "sluice: trace line 1: unexpected '#' after the cost; a line is TIME [KEY [COST [OP]]], OP one of "
                   "report, id=NAME, refund=NAME, release=NAME (a comment is a whole line starting with '#')\n");
  const auto cost = run_cli({"replay", "--limit", "1/1s", "--algorithm", "fixed-window"}, "0 k #2\n");
  EXPECT_EQ(cost.status, 2);
  EXPECT_EQ(cost.err, "sluice: trace line 1: '#2' is not a cost (a whole number from 1 to 9223372036854775807)\n");
}

TEST(TraceComments, CompareKeepsHashKeysApart) {
  const auto r = run_cli({"compare", "--limit", "1/1s", "--algorithms", "fixed-window", "--format", "csv"},
                         "0 #a\n0 #b\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("key,#a,fixed-window,1,0,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("key,#b,fixed-window,1,0,"), std::string::npos) << r.out;
}

// ---- release_after of a denied leaky-queue request ----

TEST(ReleaseAfter, DeniedHasNoneInCsvJsonAndTable) {
  // A queue of 1 unit at 1/s: the first is released now, the second (the
  // queue full) denied; at 0.5 one is queued for release at 1, at 1 denied.
  const std::vector<std::string> base = {"replay", "--algorithm", "leaky-queue", "--limit", "1/1s", "--queue", "1"};
  const std::string trace = "0\n0\n0.5\n1\n";
  const auto csv = run_cli(base, trace);
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_EQ(csv.out, "request,time,key,cost,allowed,remaining,retry_after,reset_after,release_after\n"
                     "1,0,,1,yes,0,0,1,0\n"
                     "2,0,,1,no,0,0.000000001,1,\n"
                     "3,0.5,,1,yes,0,0,1.5,0.5\n"
                     "4,1,,1,no,0,0.000000001,1,\n");
  auto with = base;
  with.insert(with.end(), {"--format", "json"});
  const auto js = run_cli(with, trace);
  ASSERT_EQ(js.status, 0) << js.err;
  const auto rows = parse_lines(js.out);
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_EQ(rows[0]["release_after"], 0);
  EXPECT_TRUE(rows[1]["release_after"].is_null());
  EXPECT_EQ(rows[2]["release_after"], 0.5);
  EXPECT_TRUE(rows[3]["release_after"].is_null());
  with.back() = "table";
  const auto table = run_cli(with, trace);
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_EQ(table.out,
            "request            time  key            cost  allowed  remaining  retry_after  reset_after  release_after\n"
            "      1               0                    1  yes              0            0            1              0\n"
            "      2               0                    1  no               0  0.000000001            1               \n"
            "      3             0.5                    1  yes              0            0          1.5            0.5\n"
            "      4               1                    1  no               0  0.000000001            1               \n");
}

TEST(ReleaseAfter, DeniedByACompositeWithAQueueHasNone) {
  const auto r = run_cli({"replay", "--policy", "all(leaky-queue 1/1s queue=1, gcra 5/1s)"}, "0\n0\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string out = r.out;
  EXPECT_NE(out.find("\n1,0,,1,yes,"), std::string::npos) << out;
  EXPECT_TRUE(out.find("\n2,0,,1,no,") != std::string::npos && out.ends_with(",\n")) << out;
}

}  // namespace
}  // namespace sluice::cli_output_format_test
