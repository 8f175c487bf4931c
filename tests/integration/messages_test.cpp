// Messages name the real problem: each row a command line, its input and
// the exact message (exit 2). Non-ASCII bytes are shown escaped.
// The table is laid out by hand, one row a line:
// clang-format off
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "cli_support.hpp"

namespace sluice::cli_messages_test {
namespace {

using test::run_cli;

struct message_case {
  std::vector<std::string> args;
  std::string input;
  std::string message;  // the whole of standard error
};

void PrintTo(const message_case& c, std::ostream* os) { *os << c.message; }

const std::vector<std::string> gcra = {"replay", "--algorithm", "gcra", "--limit", "1/1s"};

std::vector<std::string> with(std::vector<std::string> base, std::initializer_list<std::string> more) {
  base.insert(base.end(), more);
  return base;
}

const message_case message_cases[] = {
    // Trace times that are not written as times.
    {gcra, ".5\n", "sluice: trace line 1: '.5' is not a time in seconds\n"},
    {gcra, "5.\n", "sluice: trace line 1: '5.' is not a time in seconds\n"},
    {gcra, "1..2\n", "sluice: trace line 1: '1..2' is not a time in seconds\n"},
    {gcra, "1.2.3\n", "sluice: trace line 1: '1.2.3' is not a time in seconds\n"},
    {gcra, "-\n", "sluice: trace line 1: '-' is not a time in seconds\n"},
    {gcra, ".\n", "sluice: trace line 1: '.' is not a time in seconds\n"},
    {gcra, "-.5\n", "sluice: trace line 1: '-.5' is not a time in seconds\n"},
    {gcra, "\xff\n", "sluice: trace line 1: '\\xff' is not a time in seconds\n"},
    // ... and ones that are, but too far.
    {gcra, "9999999999999\n", "sluice: trace line 1: '9999999999999' is out of range (times must fit in int64 nanoseconds, about 292 years)\n"},
    {gcra, "-9999999999.5\n", "sluice: trace line 1: '-9999999999.5' is out of range (times must fit in int64 nanoseconds, about 292 years)\n"},
    // Whole numbers too large, not "not a whole number".
    {with(gcra, {"--burst", "9223372036854775808"}), "", "sluice: --burst: '9223372036854775808' is too large (at most 9223372036854775807)\n"},
    {with(gcra, {"--burst", "-9223372036854775809"}), "", "sluice: --burst: '-9223372036854775809' is too large (at most 9223372036854775807)\n"},
    {with(gcra, {"--burst", "1x"}), "", "sluice: --burst: '1x' is not a whole number\n"},
    {with(gcra, {"--burst", "++1"}), "", "sluice: --burst: '++1' is not a whole number\n"},
    {{"replay", "--policy", "gcra 1/1s burst=99999999999999999999"}, "", "sluice: --policy: burst='99999999999999999999' at column 17: burst is too large (at most 9223372036854775807)\n"},
    {{"replay", "--policy", "gcra 1/1s burst=+-1"}, "", "sluice: --policy: burst='+-1' at column 17: burst must be a whole number\n"},
    // What is missing from a rate.
    {{"replay", "--algorithm", "gcra", "--limit", "10 per"}, "", "sluice: --limit: window: is missing after 'per' in '10 per' (write it as L/W, e.g. 10/60s, 100/min, 5/s or '10 per minute')\n"},
    {{"replay", "--algorithm", "gcra", "--limit", "10/"}, "", "sluice: --limit: window: is missing in '10/' (write it as L/W, e.g. 10/60s, 100/min, 5/s or '10 per minute')\n"},
    // A non-ASCII character is named, escaped.
    {{"replay", "--algorithm", "gcra", "--limit", "1/1\xef\xbd\x93"}, "", "sluice: --limit: window: unknown unit '\\xef\\xbd\\x93' at column 4 (use ns, us, ms, s, m or min, h, d)\n"},
    {{"replay", "--policy", "gcra 1/1\xef\xbd\x93"}, "", "sluice: --policy: unknown unit '\\xef\\xbd\\x93' at column 9 (use ns, us, ms, s, m or min, h, d)\n"},
    {{"replay", "--algorithm", "gcr\xff"}, "", "sluice: --algorithm: unknown algorithm 'gcr\\xff' (choose from fixed-window, sliding-log, sliding-counter, sliding-buckets, token-bucket, gcra, leaky-queue, quota, always-allow, always-deny, concurrency)\n"},
    {{"replay", "--algorithm", "gcra", "--limit", "1/1s", "--format", "j\xc3\xa9"}, "", "sluice: --format: 'j\\xc3\\xa9' is not a format (csv, json or table)\n"},
    {{"replay", "--\xff"}, "", "sluice: The following argument was not expected: --\\xff\n(run 'sluice --help' for usage)\n"},
};

class Message : public ::testing::TestWithParam<message_case> {};

TEST_P(Message, NamesTheRealProblem) {
  const auto r = run_cli(GetParam().args, GetParam().input);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(Table, Message, ::testing::ValuesIn(message_cases));

// Counts may carry a sign, in the flags as in the expressions
// (docs/policy-expressions.md: count = [ "+" | "-" ] digits).
TEST(Message, PlusSignedCountsAreAccepted) {
  const auto flag = run_cli({"replay", "--algorithm", "sliding-buckets", "--limit", "10/1s", "--buckets", "+5"}, "0\n");
  EXPECT_EQ(flag.status, 0) << flag.err;
  const auto expr = run_cli({"replay", "--policy", "sliding-buckets 10/1s buckets=+5"}, "0\n");
  EXPECT_EQ(expr.status, 0) << expr.err;
  EXPECT_EQ(flag.out, expr.out);
  const auto minus = run_cli({"replay", "--policy", "sliding-buckets 10/1s buckets=-5"}, "0\n");
  EXPECT_EQ(minus.status, 2);
  EXPECT_EQ(minus.err.find("whole number"), std::string::npos) << minus.err;  // a range error, not a syntax one
}

TEST(Message, SaturatedWorstCaseIsTheNumberNotUnbounded) {
  const std::vector<std::string> base = {"worst-case", "--policy", "gcra 4611686018427387904/1ns", "--window", "100000000000000000ns"};
  const auto table = run_cli(with(base, {"--format", "table"}));
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_TRUE(table.out.starts_with(
      "# policy: gcra 4611686018427387904/1ns\n"
      "# worst case: at least 9223372036854775807 requests in 100000000 s (saturated: sluice counts to 2^63 - 1; any time)\n"
      "# witness: at least 9223372036854775807 requests (saturated) from 0 s, too many to list here (see --format json)\n"))
      << table.out.substr(0, 400);
  const auto csv = run_cli(with(base, {"--format", "csv"}));
  EXPECT_EQ(csv.out, "policy,window,granularity,worst_case,exact,reached,start\n"
                     "gcra 4611686018427387904/1ns,100000000,0.000000001,9223372036854775807,no,9223372036854775807,0\n");
  const auto json = run_cli(with(base, {"--format", "json"}));
  EXPECT_TRUE(json.out.starts_with("{\"policy\":\"gcra 4611686018427387904/1ns\",\"window\":100000000,\"granularity\":0.000000001,"
                                   "\"worst_case\":9223372036854775807,\"unbounded\":false,\"saturated\":true,\"exact\":false,"))
      << json.out.substr(0, 300);
  // Unbounded stays unbounded.
  const auto allow = run_cli({"worst-case", "--policy", "any(always-allow, quota 1)", "--window", "1s"});
  EXPECT_TRUE(allow.out.starts_with("# policy: any(always-allow, quota 1)\n# worst case: unbounded in any 1 s\n")) << allow.out;
  // compare shows it too.
  const auto cmp = run_cli({"compare", "--policy", "gcra 4611686018427387904/1ns", "--window", "100000000000000000ns"}, "0\n");
  ASSERT_EQ(cmp.status, 0) << cmp.err;
  EXPECT_NE(cmp.out.find(">=9223372036854775807"), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find("(>=: saturated; sluice counts to 2^63 - 1, and the worst case is at least that.)\n"), std::string::npos) << cmp.out;
}

TEST(Message, OneRequestIsSingular) {
  const auto r = run_cli({"worst-case", "--policy", "quota 1", "--window", "1s"});
  EXPECT_EQ(r.out, "# policy: quota 1\n"
                   "# worst case: 1 request in 1 s (exact; any time)\n"
                   "# witness: 1 request from 0 s to 0 s, every one admitted; pipe into sluice replay\n"
                   "0\n");
}

}  // namespace
}  // namespace sluice::cli_messages_test
