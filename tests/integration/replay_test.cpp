// `sluice replay`: outputs worked out by hand from semantics.md, and every
// error path (exit status 2, a message naming the field or line).
// The tables are laid out by hand, one row a line:
// clang-format off
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli_support.hpp"

namespace sluice::cli_replay_test {
namespace {

using test::run_cli;

TEST(Replay, TokenBucketSeedNumbersCsv) {
  // A bucket of 10 refilling 2/s: 10 of 11 instant requests, one more 0.6 s later.
  std::string trace;
  for (int i = 0; i < 11; ++i) trace += "0\n";
  trace += "0.6\n";
  auto r = run_cli({"replay", "--algorithm", "token-bucket", "--limit", "2/s", "--burst", "10"}, trace);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string expected =
      "request,time,key,cost,allowed,remaining,retry_after,reset_after\n"
      "1,0,,1,yes,9,0,0.5\n"
      "2,0,,1,yes,8,0,1\n"
      "3,0,,1,yes,7,0,1.5\n"
      "4,0,,1,yes,6,0,2\n"
      "5,0,,1,yes,5,0,2.5\n"
      "6,0,,1,yes,4,0,3\n"
      "7,0,,1,yes,3,0,3.5\n"
      "8,0,,1,yes,2,0,4\n"
      "9,0,,1,yes,1,0,4.5\n"
      "10,0,,1,yes,0,0,5\n"
      "11,0,,1,no,0,0.5,5\n"
      "12,0.6,,1,yes,0,0,4.9\n";  // 1.2 tokens had accrued; 0.2 left, 4.9 s to full
  EXPECT_EQ(r.out, expected);
}

TEST(Replay, FixedWindowBoundaryVersusSlidingLog) {
  // 10 between 55 and 59.5, 10 between 60.5 and 65: the fixed window of
  // 10/60 s lets all 20 through, the sliding log 10.
  std::string trace;
  for (int i = 0; i < 10; ++i) trace += std::to_string(55 + i / 2) + (i % 2 ? ".5\n" : "\n");
  for (int i = 0; i < 10; ++i) trace += std::to_string(60 + (i + 1) / 2) + (i % 2 ? "\n" : ".5\n");
  auto count_yes = [](const std::string& csv) {
    std::size_t n = 0;
    for (std::size_t p = 0; (p = csv.find(",yes,", p)) != std::string::npos; ++p) ++n;
    return n;
  };
  auto fixed = run_cli({"replay", "--algorithm", "fixed-window", "--limit", "10/60s"}, trace);
  auto log = run_cli({"replay", "--algorithm", "sliding-log", "--limit", "10/60s"}, trace);
  ASSERT_EQ(fixed.status, 0) << fixed.err;
  ASSERT_EQ(log.status, 0) << log.err;
  EXPECT_EQ(count_yes(fixed.out), 20U);
  EXPECT_EQ(count_yes(log.out), 10U);
  // The first refusal of the log: at 60.5, retry when the unit of 55 leaves (115), 54.5 s later.
  EXPECT_NE(log.out.find("11,60.5,,1,no,0,54.5,"), std::string::npos) << log.out;
}

TEST(Replay, KeysAreIsolatedAndCostsCount) {
  const std::string trace =
      "# time key cost\n"
      "0 alice 2\n"
      "0 bob\n"
      "\n"
      "   # a comment: '#' first on its line\n"
      "0 alice\n"
      "0\tbob\t1\n"
      "0.25 alice\r\n"
      "1 alice 3\n";
  auto r = run_cli({"replay", "--algorithm", "fixed-window", "--limit", "3/1s"}, trace);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "request,time,key,cost,allowed,remaining,retry_after,reset_after\n"
            "1,0,alice,2,yes,1,0,1\n"
            "2,0,bob,1,yes,2,0,1\n"
            "3,0,alice,1,yes,0,0,1\n"
            "4,0,bob,1,yes,1,0,1\n"
            "5,0.25,alice,1,no,0,0.75,0.75\n"
            "6,1,alice,3,yes,0,0,1\n");
}

TEST(Replay, LeakyQueueAdmitsFifteenOfTwentyWithReleaseTimes) {
  std::string trace;
  for (int i = 0; i < 20; ++i) trace += "0\n";
  auto r = run_cli({"replay", "--algorithm", "leaky-queue", "--limit", "1/s", "--queue", "15"}, trace);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("request,time,key,cost,allowed,remaining,retry_after,reset_after,release_after\n"), std::string::npos);
  EXPECT_NE(r.out.find("\n1,0,,1,yes,14,0,1,0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n15,0,,1,yes,0,0,15,14\n"), std::string::npos) << r.out;
  // The 16th waits until the first unit has left: one tick after second 0.
  // Denied, it is not queued: no release time.
  EXPECT_NE(r.out.find("\n16,0,,1,no,0,0.000000001,15,\n"), std::string::npos) << r.out;
  std::size_t yes = 0;
  for (std::size_t p = 0; (p = r.out.find(",yes,", p)) != std::string::npos; ++p) ++yes;
  EXPECT_EQ(yes, 15U);
}

TEST(Replay, QuotaAndZeroLimitSayNever) {
  auto q = run_cli({"replay", "--algorithm", "quota", "--quota", "2"}, "0\n5\n9\n");
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_EQ(q.out,
            "request,time,key,cost,allowed,remaining,retry_after,reset_after\n"
            "1,0,,1,yes,1,0,never\n"
            "2,5,,1,yes,0,0,never\n"
            "3,9,,1,no,0,never,never\n");
  auto z = run_cli({"replay", "--algorithm", "gcra", "--limit", "0/1s"}, "0\n");
  ASSERT_EQ(z.status, 0) << z.err;
  EXPECT_EQ(z.out, "request,time,key,cost,allowed,remaining,retry_after,reset_after\n1,0,,1,no,0,never,0\n");
  auto big = run_cli({"replay", "--algorithm", "token-bucket", "--limit", "5/s"}, "0 k 6\n");
  EXPECT_NE(big.out.find("1,0,k,6,no,5,never,0\n"), std::string::npos) << big.out;
}

TEST(Replay, JsonLinesAndTable) {
  auto j = run_cli({"replay", "--algorithm", "gcra", "--limit", "1/s", "--burst", "1", "--format", "json"},
                   "0 \"q\\\n0.5 \"q\\\n");
  ASSERT_EQ(j.status, 0) << j.err;
  EXPECT_EQ(j.out,
            "{\"request\":1,\"time\":0,\"key\":\"\\\"q\\\\\",\"cost\":1,\"allowed\":true,\"remaining\":0,"
            "\"retry_after\":0,\"reset_after\":1}\n"
            "{\"request\":2,\"time\":0.5,\"key\":\"\\\"q\\\\\",\"cost\":1,\"allowed\":false,\"remaining\":0,"
            "\"retry_after\":0.5,\"reset_after\":0.5}\n");
  auto t = run_cli({"replay", "--algorithm", "sliding-counter", "--limit", "2/10s", "--format", "table"}, "1\n");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_EQ(t.out.substr(0, t.out.find('\n')),
            "request            time  key            cost  allowed  remaining  retry_after  reset_after");
}

TEST(Replay, CsvQuotesKeysThatNeedIt) {
  auto r = run_cli({"replay", "--algorithm", "quota", "--quota", "1"}, "0 a,b\n0 say\"hi\"\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1,0,\"a,b\",1,yes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2,0,\"say\"\"hi\"\"\",1,yes"), std::string::npos) << r.out;
}

TEST(Replay, TimesAreExactToTheNanosecond) {
  auto r = run_cli({"replay", "--algorithm", "token-bucket", "--limit", "1/1ns", "--burst", "1"},
                   "9223372036.854775806\n9223372036.854775806\n-9223372036.854775808\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "request,time,key,cost,allowed,remaining,retry_after,reset_after\n"
            "1,9223372036.854775806,,1,yes,0,0,0.000000001\n"
            "2,9223372036.854775806,,1,no,0,0.000000001,0.000000001\n"
            // A clock that steps back is read as the latest admit; the wait counts from the caller's now,
            // which would pass INT64_MAX ticks: never.
            "3,-9223372036.854775808,,1,no,0,never,never\n");
}

struct error_row {
  std::vector<std::string> args;
  std::string input;
  std::string message;  // the whole of stderr
};

TEST(Replay, EveryErrorIsAClearUsageError) {
  const std::vector<error_row> rows = {
      {{"--algorithm", "token-bucket", "--limit", "10/0s"}, "", "sluice: --limit: window: must be positive (got '0s')\n"},
      {{"--algorithm", "token-bucket", "--limit", "10"},
       "",
       "sluice: --limit: rate: '10': expected '/' or 'per' at column 3 (write it as L/W, e.g. 10/60s, 100/min, 5/s or "
       "'10 per minute')\n"},
      {{"--algorithm", "token-bucket", "--limit", "-1/s"}, "", "sluice: --limit: limit: must not be negative (got '-1')\n"},
      {{"--algorithm", "bucket", "--limit", "1/s"},
       "",
       "sluice: --algorithm: unknown algorithm 'bucket' (choose from fixed-window, sliding-log, sliding-counter, "
       "sliding-buckets, token-bucket, gcra, leaky-queue, quota, always-allow, always-deny, concurrency)\n"},
      {{"--algorithm", "token-bucket"}, "", "sluice: --limit: is required by token-bucket (e.g. --limit 10/60s)\n"},
      {{"--algorithm", "token-bucket", "--limit", "1/s", "--burst", "0"},
       "",
       "sluice: --burst: must be at least 1 (got 0)\n"},
      {{"--algorithm", "token-bucket", "--limit", "1/s", "--burst", "ten"},
       "",
       "sluice: --burst: 'ten' is not a whole number\n"},
      {{"--algorithm", "fixed-window", "--limit", "1/s", "--burst", "3"},
       "",
       "sluice: --burst: does not apply to fixed-window (only to token-bucket and gcra)\n"},
      {{"--algorithm", "sliding-buckets", "--limit", "1/60s", "--buckets", "7"},
       "",
       "sluice: --buckets: 7 does not divide the window of 60000000000 ticks into equal sub-windows\n"},
      {{"--algorithm", "sliding-buckets", "--limit", "1/60s"},
       "",
       "sluice: --buckets: is required by sliding-buckets (the number of sub-windows)\n"},
      {{"--algorithm", "quota", "--limit", "1/s"}, "", "sluice: --limit: does not apply to quota (it takes --quota N)\n"},
      {{"--algorithm", "quota"}, "", "sluice: --quota: is required by quota (the number of units in all)\n"},
      {{"--algorithm", "leaky-queue", "--limit", "1/s", "--queue", "-4"}, "", "sluice: --queue: must be at least 1 (got -4)\n"},
      {{"--algorithm", "gcra", "--limit", "1/s", "--format", "xml"},
       "",
       "sluice: --format: 'xml' is not a format (csv, json or table)\n"},
      {{"--algorithm", "gcra", "--limit", "1/s", "/nonexistent/trace"},
       "",
       "sluice: cannot open trace '/nonexistent/trace': No such file or directory\n"},
      {{"--algorithm", "gcra", "--limit", "1/s", "/"}, "", "sluice: cannot open trace '/': it is a directory\n"},
      {{"--algorithm", "gcra", "--limit", "1/s"}, "0\n\n\n# x\nabc\n", "sluice: trace line 5: 'abc' is not a time in seconds\n"},
      {{"--algorithm", "gcra", "--limit", "1/s"}, "1.0000000001\n",
       "sluice: trace line 1: '1.0000000001' has more than 9 decimal places (times are exact to the nanosecond)\n"},
      {{"--algorithm", "gcra", "--limit", "1/s"}, "99999999999\n",
       "sluice: trace line 1: '99999999999' is out of range (times must fit in int64 nanoseconds, about 292 years)\n"},
      {{"--algorithm", "gcra", "--limit", "1/s"}, "1 k 0\n",
       "sluice: trace line 1: '0' is not a cost (a whole number from 1 to 9223372036854775807)\n"},
      {{"--algorithm", "gcra", "--limit", "1/s"}, "1 k 1.5\n",
       "sluice: trace line 1: '1.5' is not a cost (a whole number from 1 to 9223372036854775807)\n"},
      {{"--algorithm", "gcra", "--limit", "1/s"}, "1 k 99999999999999999999\n",
       "sluice: trace line 1: '99999999999999999999' is not a cost (a whole number from 1 to 9223372036854775807)\n"},
      {{"--algorithm", "gcra", "--limit", "1/s"}, "1 k 1 extra\n",
       "sluice: trace line 1: unexpected 'extra' after the cost; a line is TIME [KEY [COST [OP]]], OP one of report, "
       "id=NAME, refund=NAME, release=NAME\n"},
      {{"--algorithm", "gcra", "--limit", "1/s"}, std::string("1\n\x01\x02\n", 5),
       "sluice: trace line 2: '\\x01\\x02' is not a time in seconds\n"},
      {{"--algorithm", "gcra", "--limit", "1/s"}, "1e3\n", "sluice: trace line 1: '1e3' is not a time in seconds\n"},
  };
  for (const auto& row : rows) {
    std::vector<std::string> args = {"replay"};
    args.insert(args.end(), row.args.begin(), row.args.end());
    auto r = run_cli(args, row.input);
    SCOPED_TRACE(row.message);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, row.message);
  }
}

TEST(Replay, ArgumentErrorsFromTheParserAreUsageErrorsToo) {
  auto missing = run_cli({"replay", "--limit", "1/s"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("sluice: --algorithm is required"), std::string::npos) << missing.err;
  auto unknown = run_cli({"replay", "--algorithm", "gcra", "--limit", "1/s", "--nope"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_EQ(unknown.err.rfind("sluice: ", 0), 0U) << unknown.err;
  auto help = run_cli({"replay", "--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--algorithm"), std::string::npos);
}

TEST(Replay, RowsBeforeABadLineAreKept) {
  auto r = run_cli({"replay", "--algorithm", "gcra", "--limit", "1/s"}, "0\n1\nbad\n2\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out,
            "request,time,key,cost,allowed,remaining,retry_after,reset_after\n"
            "1,0,,1,yes,0,0,1\n"
            "2,1,,1,yes,0,0,1\n");
}

TEST(Replay, AnOverlongLineIsRefusedNotLoaded) {
  std::string input = "0\n" + std::string(3 << 20, '7');
  auto r = run_cli({"replay", "--algorithm", "gcra", "--limit", "1/s"}, input);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "sluice: trace line 2: longer than 1 MiB\n");
}

TEST(Replay, TheRealBinaryReadsAFileArgument) {
  const std::string path = ::testing::TempDir() + "/sluice_replay_trace.txt";
  {
    std::ofstream f(path);
    f << "0 a\n0 a\n";
  }
  auto r = test::run_binary("replay --algorithm fixed-window --limit 1/s " + path, "/dev/null");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "request,time,key,cost,allowed,remaining,retry_after,reset_after\n1,0,a,1,yes,0,0,1\n2,0,a,1,no,0,1,1\n");
  auto bad = test::run_binary("replay --algorithm fixed-window --limit 1/0s " + path, "/dev/null");
  EXPECT_EQ(bad.status, 2);
}

}  // namespace
}  // namespace sluice::cli_replay_test
