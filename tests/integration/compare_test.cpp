// `sluice compare`: the P096 figures on the P096 traces, keys, formats, the
// plot, and the error paths.
// The tables are laid out by hand, one row a line:
// clang-format off
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cli_support.hpp"

namespace sluice::cli_compare_test {
namespace {

using test::run_cli;

std::string lines(std::initializer_list<int> times) {
  std::string s;
  for (int t : times) s += std::to_string(t) + "\n";
  return s;
}

TEST(Compare, TheP096BurstTable) {
  std::string trace;
  for (int i = 0; i < 10; ++i) trace += "59\n";
  for (int i = 0; i < 10; ++i) trace += "60\n";
  auto r = run_cli({"compare", "--limit", "10/60s"}, trace);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "20 requests from 59 s to 60 s, no keys; the limit is 10 per 60 s (burst 10):\n"
            "  limiter            through   refused  most in any 60 s   worst case\n"
            "  fixed-window            20         0                20           20  over the limit, from 59 s\n"
            "  sliding-log             10        10                10           10\n"
            "  token-bucket            10        10                10           19\n"
            "Worst case: the most each limiter lets into any 60 s, whatever the trace.\n");
}

TEST(Compare, TheP096SteadyTraceInCsv) {
  std::string trace;
  for (int i = 0; i < 75; ++i) trace += std::to_string(4 * i) + "\n";
  auto r = run_cli({"compare", "--limit", "10/60s", "--format", "csv"}, trace);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "scope,key,limiter,through,refused,busiest,busiest_start,over_limit,worst_case\n"
            "total,,fixed-window,50,25,10,0,no,20\n"
            "total,,sliding-log,50,25,10,0,no,10\n"
            "total,,token-bucket,59,16,15,0,yes,19\n");
}

TEST(Compare, TheP096TypedTraceWithASmallBucket) {
  // 3 per 10 s with a bucket of 2, on a 1 s grid: the bucket's worst case is 4.
  auto r = run_cli({"compare", "--limit", "3/10s", "--burst", "2", "--granularity", "1s", "--format", "csv"},
                   lines({0, 0, 0, 5, 5, 5, 9, 10, 11, 12, 19, 20}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "scope,key,limiter,through,refused,busiest,busiest_start,over_limit,worst_case\n"
            "total,,fixed-window,7,5,3,0,no,6\n"
            "total,,sliding-log,7,5,3,0,no,3\n"
            "total,,token-bucket,7,5,4,0,yes,4\n");
}

TEST(Compare, KeysAreCountedApartAndTheMostRefusedListed) {
  auto r = run_cli({"compare", "--limit", "1/10s", "--algorithms", "gcra", "--format", "csv", "--top", "2"},
                   "0 a\n0 a\n0 b\n1 a\n1 c\n2 c\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "scope,key,limiter,through,refused,busiest,busiest_start,over_limit,worst_case\n"
            "total,,gcra,3,3,3,0,no,1\n"
            "key,a,gcra,1,2,1,0,no,\n"
            "key,c,gcra,1,1,1,1,no,\n");
}

TEST(Compare, JsonHasTheSameFigures) {
  auto r = run_cli({"compare", "--limit", "2/1s", "--algorithms", "sliding-log,fixed-window", "--format", "json"},
                   "0.5\n0.5\n0.5\n1\n1\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"requests\":5,\"units\":5,\"first\":0.5,\"last\":1,\"keys\":0,\"limit\":2,\"window\":1,\"limiters\":["
            "{\"limiter\":\"sliding-log\",\"through\":2,\"refused\":3,\"busiest\":2,\"busiest_start\":0.5,"
            "\"over_limit\":false,\"worst_case\":2},"
            "{\"limiter\":\"fixed-window\",\"through\":4,\"refused\":1,\"busiest\":4,\"busiest_start\":0.5,"
            "\"over_limit\":true,\"worst_case\":4}],\"top_keys\":[]}\n");
}

TEST(Compare, ThePlotIsAnSvgWithALanePerLimiter) {
  const std::string path = ::testing::TempDir() + "/sluice_compare_plot.svg";
  std::string trace;
  for (int i = 0; i < 10; ++i) trace += "59\n";
  for (int i = 0; i < 10; ++i) trace += "60\n";
  auto r = run_cli({"compare", "--limit", "10/60s", "--plot", path}, trace);
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream f(path);
  std::stringstream svg;
  svg << f.rdbuf();
  const std::string s = svg.str();
  EXPECT_EQ(s.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0U);
  EXPECT_NE(s.find("the limit is 10 per 60 s (burst 10)"), std::string::npos);
  for (const char* lane : {">fixed-window<", ">sliding-log<", ">token-bucket<"}) EXPECT_NE(s.find(lane), std::string::npos);
  EXPECT_NE(s.find("20 in 60 s — over the limit"), std::string::npos);
  // 20 requests in 3 lanes: 60 marks; 10 refused by each of two lanes.
  std::size_t refused = 0;
  for (std::size_t p = 0; (p = s.find("fill=\"#d1342f\"/>", p)) != std::string::npos; ++p) ++refused;
  EXPECT_EQ(refused, 20U + 1U);  // + the legend swatch
  EXPECT_EQ(s.substr(s.size() - 7), "</svg>\n");
}

TEST(Compare, LongTracesArePlottedInColumns) {
  const std::string path = ::testing::TempDir() + "/sluice_compare_long.svg";
  std::string trace;
  for (int i = 0; i < 20000; ++i) trace += std::to_string(i / 10) + "." + std::to_string(i % 10) + "\n";
  auto r = run_cli({"compare", "--limit", "5/1s", "--plot", path}, trace);
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream f(path);
  std::stringstream svg;
  svg << f.rdbuf();
  EXPECT_NE(svg.str().find("20000 requests, in columns of"), std::string::npos);
  EXPECT_LT(svg.str().size(), 1U << 20);  // bounded, whatever the trace length
}

struct error_row {
  std::vector<std::string> args;
  std::string input;
  std::string message;
};

TEST(Compare, ErrorsAreUsageErrors) {
  const std::vector<error_row> rows = {
      {{}, "", "sluice: --limit: is required by fixed-window (e.g. --limit 10/60s)\n"},
      {{"--limit", "10/0s"}, "", "sluice: --limit: window: must be positive (got '0s')\n"},
      {{"--limit", "1/s", "--algorithms", "gcra,nope"},
       "",
       "sluice: --algorithms: unknown algorithm 'nope' (choose from fixed-window, sliding-log, sliding-counter, "
       "sliding-buckets, token-bucket, gcra, leaky-queue, quota, always-allow, always-deny, concurrency)\n"},
      {{"--limit", "1/s", "--algorithms", "gcra,gcra"}, "", "sluice: --algorithms: 'gcra' is listed twice\n"},
      {{"--limit", "1/s", "--algorithms", "gcra,"}, "", "sluice: --algorithms: ends with a comma\n"},
      {{"--limit", "1/s", "--algorithms", "fixed-window", "--burst", "3"},
       "",
       "sluice: --burst: applies only to token-bucket and gcra, and neither is compared\n"},
      {{"--limit", "1/s", "--granularity", "0s"}, "", "sluice: --granularity: must be positive\n"},
      {{"--limit", "1/s", "--granularity", "1"}, "", "sluice: --granularity: '1' needs a unit: ns, us, ms, s, m (or min), h or d\n"},
      {{"--limit", "1/s", "--top", "-1"}, "", "sluice: --top: must not be negative\n"},
      {{"--limit", "1/s", "--format", "yaml"}, "", "sluice: --format: 'yaml' is not a format (table, csv or json)\n"},
      {{"--limit", "1/s", "--plot", "/nonexistent/dir/x.svg"}, "", "sluice: --plot: cannot write '/nonexistent/dir/x.svg': No such file or directory\n"},
      {{"--limit", "1/s"}, "5\n4\n",
       "sluice: trace line 2: time 4 is earlier than the line before (5); compare needs times in order\n"},
      {{"--limit", "1/s"}, "5\nfive\n", "sluice: trace line 2: 'five' is not a time in seconds\n"},
  };
  for (const auto& row : rows) {
    std::vector<std::string> args = {"compare"};
    args.insert(args.end(), row.args.begin(), row.args.end());
    auto r = run_cli(args, row.input);
    SCOPED_TRACE(row.message);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, row.message);
  }
}

TEST(Compare, AnEmptyTraceIsNotAnError) {
  auto r = run_cli({"compare", "--limit", "1/s"}, "# nothing\n\n");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "No requests in the trace.\n");
}

}  // namespace
}  // namespace sluice::cli_compare_test
