// `--policy EXPR` in `replay` and `compare`, and `sluice worst-case`: outputs
// worked out by hand from semantics.md and docs/worst-case.md, the witness
// piped back through `replay`, and every error (exit status 2, a message
// naming the flag, the column for a bad expression).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_support.hpp"

namespace sluice::cli_policy_flag_test {
namespace {

using test::run_cli;

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = 0; (p = text.find(what, p)) != std::string::npos; p += what.size()) ++n;
  return n;
}

// ---- replay ----

TEST(PolicyFlag, ReplayWithAPolicyIsReplayWithTheSameFlags) {
  std::string trace;
  for (int i = 0; i < 11; ++i) trace += "0\n";
  trace += "0.6 k 2\n";
  auto by_flags = run_cli({"replay", "--algorithm", "token-bucket", "--limit", "2/s", "--burst", "10"}, trace);
  auto by_policy = run_cli({"replay", "--policy", "token-bucket 2/s burst=10"}, trace);
  ASSERT_EQ(by_policy.status, 0) << by_policy.err;
  EXPECT_EQ(by_policy.out, by_flags.out);
  EXPECT_EQ(by_policy.err, "");
}

TEST(PolicyFlag, ReplayOfACompositeConsumesOnlyWhenEveryPartAdmits) {
  // 2 per 10 s and 1 per second together: the second request at 0 is
  // refused by the GCRA (retry 1 s) and the fixed window keeps its unit; at
  // 2 s the window is full until 10 s.
  auto r = run_cli({"replay", "--policy", "all(fixed-window 2/10s, gcra 1/1s)"}, "0\n0\n1\n2\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "request,time,key,cost,allowed,remaining,retry_after,reset_after\n"
            "1,0,,1,yes,0,0,10\n"
            "2,0,,1,no,0,1,10\n"
            "3,1,,1,yes,0,0,9\n"
            "4,2,,1,no,0,8,8\n");
}

TEST(PolicyFlag, ReplayShowsReleaseTimesWhenALeakyQueueIsAPart) {
  // The queue takes the first (it leaves at once), the quota the second.
  // After the first, the untouched quota still has its unit and is fresh:
  // remaining 1, and the composite is fresh when the queue is, in 1 s.
  // The third, denied, has no release time.
  auto r = run_cli({"replay", "--policy", "any(leaky-queue 1/1s queue=1, quota 1)"}, "0\n0\n0\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "request,time,key,cost,allowed,remaining,retry_after,reset_after,release_after\n"
            "1,0,,1,yes,1,0,1,0\n"
            "2,0,,1,yes,0,0,never,0\n"
            "3,0,,1,no,0,0.000000001,never,\n");
}

struct error_row {
  std::vector<std::string> args;
  std::string message;  // the whole of stderr
};

void expect_usage_errors(const std::string& command, const std::vector<error_row>& rows, const std::string& input) {
  for (const auto& row : rows) {
    std::vector<std::string> args = {command};
    args.insert(args.end(), row.args.begin(), row.args.end());
    auto r = run_cli(args, input);
    SCOPED_TRACE(row.message);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, row.message);
    EXPECT_EQ(r.out, "");
  }
}

TEST(PolicyFlag, ReplayErrors) {
  expect_usage_errors(
      "replay",
      {
          {{"--policy", "gcra 1/s", "--algorithm", "gcra"},
           "sluice: --policy: cannot be combined with --algorithm (the expression names the algorithm)\n"},
          {{"--policy", "gcra 1/s", "--limit", "1/s"},
           "sluice: --policy: cannot be combined with --limit (write it in the expression, e.g. 'token-bucket 10/1s "
           "burst=5')\n"},
          {{"--policy", "gcra 1/s", "--burst", "3"},
           "sluice: --policy: cannot be combined with --burst (write it in the expression, e.g. 'token-bucket 10/1s "
           "burst=5')\n"},
          {{"--policy", "all(gcra 1/s, bukcet 2/s)"},
           "sluice: --policy: unknown algorithm 'bukcet' at column 15 (choose from fixed-window, sliding-log, "
           "sliding-counter, sliding-buckets, token-bucket, gcra, leaky-queue, quota, always-allow, always-deny, "
           "concurrency, "
           "all(...), any(...))\n"},
          {{"--policy", "all(token-bucket 10/1s burst=5, fixed-window 1000/1h"},
           "sluice: --policy: expected ')' at column 53\n"},
          {{"--policy", "token-bucket 10/1s burst=0"},
           "sluice: --policy: burst=0 at column 20: burst must be at least 1 (got 0)\n"},
          {{"--policy", ""}, "sluice: --policy: empty expression at column 1; write e.g. token-bucket 10/1s burst=5\n"},
          {{}, "sluice: --algorithm is required (or --policy EXPR)\n"},
      },
      "0\n");
}

// ---- compare ----

TEST(PolicyFlag, CompareLanesArePolicies) {
  std::string trace = "59\n59\n59\n60\n60\n60\n";
  auto r = run_cli({"compare", "--policy", "fixed-window 2/1m", "--policy",
                    "all(token-bucket 10/1s burst=5, fixed-window 1000/1h)", "--policy", "sliding-counter 2/1m"},
                   trace);
  ASSERT_EQ(r.status, 0) << r.err;
  // Measured over the largest window in the expressions, an hour.
  EXPECT_EQ(r.out,
            "6 requests from 59 s to 60 s, no keys; 3 limiters:\n"
            "  limiter                                                  through   refused  most in any 3600 s"
            "   worst case\n"
            "  fixed-window 2/1m                                              4         2                   4"
            "          122\n"
            "  all(token-bucket 10/1s burst=5, fixed-window 1000/1h)          6         0                   6"
            "         2000\n"
            "  sliding-counter 2/1m                                           2         4                   2"
            "           62\n"
            "Worst case: the most each limiter lets into any 3600 s, whatever the trace.\n");
}

TEST(PolicyFlag, ComparePoliciesGiveTheFiguresOfTheSameAlgorithms) {
  std::string trace;
  for (int i = 0; i < 75; ++i) trace += std::to_string(4 * i) + (i % 3 ? " a\n" : " b\n");
  auto by_flags = run_cli(
      {"compare", "--limit", "10/60s", "--algorithms", "fixed-window,sliding-counter", "--format", "csv"}, trace);
  auto by_policy = run_cli(
      {"compare", "--policy", "fixed-window 10/60s", "--policy", "sliding-counter 10/1m", "--format", "csv"}, trace);
  ASSERT_EQ(by_policy.status, 0) << by_policy.err;
  ASSERT_EQ(by_flags.status, 0) << by_flags.err;
  std::string renamed = by_policy.out;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {",fixed-window 10/1m,", ",fixed-window,"}, {",sliding-counter 10/1m,", ",sliding-counter,"}}) {
    for (std::size_t p; (p = renamed.find(from)) != std::string::npos;) renamed.replace(p, from.size(), to);
  }
  EXPECT_EQ(renamed, by_flags.out);
}

TEST(PolicyFlag, CompareCsvQuotesExpressionsAndTakesATraceFileAfterThePolicies) {
  const std::string path = ::testing::TempDir() + "/sluice_policy_trace.txt";
  {
    std::ofstream f(path);
    f << "59 a\n59 b\n60 a\n";
  }
  auto r = run_cli(
      {"compare", "--policy", "fixed-window 2/1m", "--policy", "any(quota 1, gcra 1/1s)", "--format", "csv", path});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "scope,key,limiter,through,refused,busiest,busiest_start,over_limit,worst_case\n"
            "total,,fixed-window 2/1m,3,0,3,59,no,4\n"
            "total,,\"any(quota 1, gcra 1/1s)\",3,0,3,59,no,61\n"
            "key,a,fixed-window 2/1m,2,0,2,59,no,\n"
            "key,a,\"any(quota 1, gcra 1/1s)\",2,0,2,59,no,\n"
            "key,b,fixed-window 2/1m,1,0,1,59,no,\n"
            "key,b,\"any(quota 1, gcra 1/1s)\",1,0,1,59,no,\n");
}

TEST(PolicyFlag, CompareWindowFlagAndJson) {
  auto r = run_cli({"compare", "--policy", "fixed-window 2/1m", "--window", "1s", "--format", "json"}, "59\n59\n60\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"requests\":3,\"units\":3,\"first\":59,\"last\":60,\"keys\":0,\"limit\":null,\"window\":1,\"limiters\":["
            "{\"limiter\":\"fixed-window 2/1m\",\"through\":3,\"refused\":0,\"busiest\":2,\"busiest_start\":59,"
            "\"over_limit\":false,\"worst_case\":4}],\"top_keys\":[]}\n");
  auto q = run_cli({"compare", "--policy", "quota 2", "--window", "1s", "--format", "csv"}, "1\n");
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_EQ(q.out,
            "scope,key,limiter,through,refused,busiest,busiest_start,over_limit,worst_case\n"
            "total,,quota 2,1,0,1,1,no,2\n");
}

TEST(PolicyFlag, CompareShowsTheWorstCaseOfEveryAlgorithm) {
  // 10/60s: the counter's 10 + 9, two runs of the bucketed window, the
  // queue's 5 + 10 that leave, the quota's 7, no bound, nothing.
  auto r =
      run_cli({"compare", "--algorithms", "sliding-counter,sliding-buckets,leaky-queue,quota,always-allow,always-deny",
               "--limit", "10/60s", "--buckets", "6", "--queue", "5", "--quota", "7"},
              "0\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "1 request from 0 s to 0 s, no keys; the limit is 10 per 60 s:\n"
            "  limiter            through   refused  most in any 60 s   worst case\n"
            "  sliding-counter          1         0                 1           19\n"
            "  sliding-buckets          1         0                 1           20\n"
            "  leaky-queue              1         0                 1           15\n"
            "  quota                    1         0                 1            7\n"
            "  always-allow             1         0                 1    unbounded\n"
            "  always-deny              0         1                 0            0\n"
            "Worst case: the most each limiter lets into any 60 s, whatever the trace.\n");
  auto as_json = run_cli({"compare", "--algorithms", "always-allow", "--limit", "1/s", "--format", "json"}, "0\n");
  EXPECT_NE(as_json.out.find("\"worst_case\":null"), std::string::npos) << as_json.out;
}

TEST(PolicyFlag, CompareMarksABoundAsABound) {
  auto r =
      run_cli({"compare", "--policy",
               "all(fixed-window 2/3ns origin=2ns, any(sliding-buckets 2/4ns buckets=2, leaky-queue 2/3ns queue=1))",
               "--window", "3ns", "--granularity", "2ns"},
              "0\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("<=4\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(<=: an upper bound; sluice could not pin the exact worst case down.)\n"), std::string::npos);
  auto as_json = run_cli({"compare", "--policy",
                          "all(fixed-window 2/3ns origin=2ns, any(sliding-buckets 2/4ns buckets=2, leaky-queue 2/3ns "
                          "queue=1))",
                          "--window", "3ns", "--granularity", "2ns", "--format", "json"},
                         "0\n");
  EXPECT_NE(as_json.out.find("\"worst_case\":4,\"worst_case_exact\":false"), std::string::npos) << as_json.out;
}

TEST(PolicyFlag, CompareErrors) {
  expect_usage_errors(
      "compare",
      {
          {{"--policy", "gcra 1/s", "--algorithms", "gcra"},
           "sluice: --policy: cannot be combined with --algorithms (the expression names the algorithm)\n"},
          {{"--policy", "gcra 1/s", "--limit", "1/s"},
           "sluice: --policy: cannot be combined with --limit (write it in the expression, e.g. 'token-bucket 10/1s "
           "burst=5')\n"},
          {{"--policy", "gcra 1/s", "--policy", "gcra 1/1x"},
           "sluice: --policy: unknown unit 'x' at column 9 (use ns, us, ms, s, m or min, h, d)\n"},
          {{"--policy", "quota 3"}, "sluice: --window: is required: no limiter in the policies has a window\n"},
          {{"--policy", "gcra 1/s", "--window", "0s"}, "sluice: --window: must be positive\n"},
          {{"--policy", "gcra 1/s", "--window", "5"},
           "sluice: --window: '5' needs a unit: ns, us, ms, s, m (or min), h or d\n"},
      },
      "0\n");
}

// ---- worst-case ----

TEST(PolicyFlag, WorstCasePrintsTheNumberAndAWitnessTrace) {
  auto r = run_cli({"worst-case", "--policy", "token-bucket 10/1s burst=5"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "# policy: token-bucket 10/1s burst=5\n"
            "# worst case: 14 requests in 1 s (exact; any time)\n"
            "# witness: 14 requests from 0 s to 0.9 s, every one admitted; pipe into sluice replay\n"
            "0\n0\n0\n0\n0\n0.1\n0.2\n0.3\n0.4\n0.5\n0.6\n0.7\n0.8\n0.9\n");
  auto grid = run_cli({"worst-case", "--policy", "fixed-window 10/1m", "--granularity", "1s", "--window", "2m"});
  ASSERT_EQ(grid.status, 0) << grid.err;
  EXPECT_EQ(grid.out.substr(0, grid.out.find('\n', grid.out.find("# witness"))),
            "# policy: fixed-window 10/1m\n"
            "# worst case: 30 requests in 120 s (exact; times on a 1 s grid)\n"
            "# witness: 30 requests from -1 s to 60 s, every one admitted; pipe into sluice replay");
}

TEST(PolicyFlag, TheWitnessReplaysToTheNumber) {
  for (const char* expr :
       {"all(token-bucket 10/1s burst=5, fixed-window 1000/1h)", "sliding-counter 10/1m", "any(quota 100, gcra 1/1s)",
        "leaky-queue 2/1s queue=15", "sliding-buckets 5/10s buckets=5"}) {
    SCOPED_TRACE(expr);
    auto w = run_cli({"worst-case", "--policy", expr, "--format", "json"});
    ASSERT_EQ(w.status, 0) << w.err;
    ASSERT_NE(w.out.find("\"exact\":true"), std::string::npos) << w.out;
    const std::string key = "\"worst_case\":";
    const std::size_t number = std::stoul(w.out.substr(w.out.find(key) + key.size()));
    auto trace = run_cli({"worst-case", "--policy", expr});
    ASSERT_EQ(trace.status, 0);
    auto replayed = run_cli({"replay", "--policy", expr}, trace.out);
    ASSERT_EQ(replayed.status, 0) << replayed.err;
    EXPECT_EQ(count_of(replayed.out, ",yes,"), number);
    EXPECT_EQ(count_of(replayed.out, ",no,"), 0U);
  }
}

TEST(PolicyFlag, WorstCaseCsvJsonAndBounds) {
  auto csv = run_cli({"worst-case", "--policy", "fixed-window 10/1m", "--format", "csv"});
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_EQ(csv.out,
            "policy,window,granularity,worst_case,exact,reached,start\n"
            "fixed-window 10/1m,60,0.000000001,20,yes,20,-0.000000001\n");
  auto as_json = run_cli({"worst-case", "--policy", "fixed-window 10/1m", "--format", "json"});
  ASSERT_EQ(as_json.status, 0) << as_json.err;
  EXPECT_EQ(
      as_json.out,
      "{\"policy\":\"fixed-window 10/1m\",\"window\":60,\"granularity\":0.000000001,\"worst_case\":20,"
      "\"unbounded\":false,\"saturated\":false,\"exact\":true,\"reached\":20,\"start\":-0.000000001,\"complete\":true,"
      "\"witness\":[{\"time\":-0.000000001,\"count\":10},{\"time\":0,\"count\":10}]}\n");
  auto bound = run_cli({"worst-case", "--policy",
                        "all(fixed-window 2/3ns origin=2ns, any(sliding-buckets 2/4ns buckets=2, leaky-queue 2/3ns "
                        "queue=1))",
                        "--window", "3ns", "--granularity", "2ns"});
  ASSERT_EQ(bound.status, 0) << bound.err;
  EXPECT_NE(bound.out.find("# worst case: at most 4 requests in 0.000000003 s (an upper bound; the witness gets 3; "
                           "times on a 0.000000002 s grid)\n"),
            std::string::npos)
      << bound.out;
  auto unbounded = run_cli({"worst-case", "--policy", "any(always-allow, quota 1)", "--window", "1s"});
  ASSERT_EQ(unbounded.status, 0) << unbounded.err;
  EXPECT_EQ(unbounded.out,
            "# policy: any(always-allow, quota 1)\n"
            "# worst case: unbounded in any 1 s\n"
            "# witness: unboundedly many requests from 0 s, too many to list here (see --format json)\n");
  auto none = run_cli({"worst-case", "--policy", "always-deny", "--window", "1s"});
  EXPECT_EQ(none.out,
            "# policy: always-deny\n"
            "# worst case: 0 requests in 1 s (exact; any time)\n"
            "# witness: none (nothing is ever admitted)\n");
}

TEST(PolicyFlag, WorstCaseErrors) {
  expect_usage_errors(
      "worst-case",
      {
          {{}, "sluice: --policy: is required, e.g. --policy 'token-bucket 10/1s burst=5'\n"},
          {{"--policy", "any(quota 1,"}, "sluice: --policy: expected an algorithm at column 13\n"},
          {{"--policy", "quota 1"}, "sluice: --window: is required: the policy has no window of its own\n"},
          {{"--policy", "gcra 1/s", "--window", "-1s"},
           "sluice: --window: '-1s': a duration cannot have a sign; it must be positive\n"},
          {{"--policy", "gcra 1/s", "--granularity", "0s"}, "sluice: --granularity: must be positive\n"},
          {{"--policy", "gcra 1/s", "--format", "yaml"},
           "sluice: --format: 'yaml' is not a format (table, csv or json)\n"},
      },
      "");
}

TEST(PolicyFlag, TheRealBinaryPipesAWitnessIntoReplay) {
  const std::string path = ::testing::TempDir() + "/sluice_witness.txt";
  {
    auto w = run_cli({"worst-case", "--policy", "sliding-log 3/1s"});
    ASSERT_EQ(w.status, 0);
    std::ofstream f(path);
    f << w.out;
  }
  auto r = test::run_binary("replay --policy 'sliding-log 3/1s'", path);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(count_of(r.out, ",yes,"), 3U);
}

}  // namespace
}  // namespace sluice::cli_policy_flag_test
