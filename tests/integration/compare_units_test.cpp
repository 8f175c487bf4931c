// `compare` counts units of cost, not requests, in the busiest window (the
// limit is in units), in every format and in the plot; and says "units"
// where costs appear. With every cost 1 the words stay "requests".
// clang-format off
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cli_support.hpp"

namespace sluice::cli_compare_units_test {
namespace {

using test::run_cli;

TEST(CompareUnits, BusiestWindowCountsUnits) {
  // 2 + 2 units within 0.1 s, at a limit of 2 per 1 s: over the limit.
  const auto r = run_cli({"compare", "--limit", "2/1s", "--algorithms", "fixed-window,sliding-log"},
                         "0.9 k 2\n1 k 2\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "2 requests (4 units) from 0.9 s to 1 s, 1 key; the limit is 2 per 1 s for each key:\n"
            "  limiter            through   refused  most units in any 1 s   worst case\n"
            "  fixed-window             2         0                      4            4\n"
            "  sliding-log              1         1                      2            2\n"
            "Worst case: the most units each limiter lets into any 1 s for one key, whatever the trace.\n"
            "\n"
            "Per key, the 1 of 1 refused most:\n"
            "  key                 limiter            through   refused  most units in any 1 s\n"
            "  k                   fixed-window             2         0                      4  over the limit, from 0.9 s\n"
            "                      sliding-log              1         1                      2\n");
}

TEST(CompareUnits, CsvAndJsonCountUnits) {
  const std::string trace = "0.9 k 2\n1 k 2\n";
  const auto csv = run_cli({"compare", "--limit", "2/1s", "--algorithms", "fixed-window", "--format", "csv"}, trace);
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_EQ(csv.out, "scope,key,limiter,through,refused,busiest,busiest_start,over_limit,worst_case\n"
                     "total,,fixed-window,2,0,4,0.9,no,4\n"   // the total is not held to each key's limit
                     "key,k,fixed-window,2,0,4,0.9,yes,\n");
  const auto js = run_cli({"compare", "--limit", "2/1s", "--algorithms", "fixed-window", "--format", "json"}, trace);
  ASSERT_EQ(js.status, 0) << js.err;
  const auto doc = nlohmann::json::parse(js.out);
  EXPECT_EQ(doc["requests"], 2);
  EXPECT_EQ(doc["units"], 4);
  EXPECT_EQ(doc["limiters"][0]["busiest"], 4);
  EXPECT_EQ(doc["top_keys"][0]["limiters"][0]["busiest"], 4);
  EXPECT_EQ(doc["top_keys"][0]["limiters"][0]["over_limit"], true);
}

TEST(CompareUnits, PlotShowsUnits) {
  const auto svg = std::filesystem::temp_directory_path() / ("sluice_units_" + std::to_string(::getpid()) + ".svg");
  const auto r = run_cli({"compare", "--limit", "2/1s", "--algorithms", "fixed-window", "--plot", svg.string()},
                         "0.9 k 2\n1 k 2\n");
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream f(svg);
  const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  std::filesystem::remove(svg);
  EXPECT_NE(text.find(">4 units in 1 s</text>"), std::string::npos) << text;
  EXPECT_NE(text.find("2 requests (4 units); the limit is 2 per 1 s"), std::string::npos) << text;
}

TEST(CompareUnits, UnitCostsKeepTheWordRequests) {
  const auto r = run_cli({"compare", "--limit", "2/1s", "--algorithms", "fixed-window"}, "0\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "1 request from 0 s to 0 s, no keys; the limit is 2 per 1 s:\n"
            "  limiter            through   refused   most in any 1 s   worst case\n"
            "  fixed-window             1         0                 1            4\n"
            "Worst case: the most each limiter lets into any 1 s, whatever the trace.\n");
}

TEST(CompareUnits, OneKeyIsSingular) {
  const auto r = run_cli({"compare", "--limit", "2/1s", "--algorithms", "fixed-window"}, "0 a\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("1 request from 0 s to 0 s, 1 key; ")) << r.out;
}

}  // namespace
}  // namespace sluice::cli_compare_units_test
