// Policy expressions: every form of the grammar, the canonical printer, and
// the error for each way an expression can be wrong (with its column).
#include "sluice/core/policy_expr.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::unit_policy_expr_test {
namespace {

constexpr tick s = 1'000'000'000;

any_policy parsed(const std::string& text) {
  auto p = parse_policy(text);
  EXPECT_TRUE(p.ok()) << text << ": " << (p.ok() ? "" : p.err().what());
  return p.ok() ? *p : any_policy{always_deny{}};
}

TEST(PolicyExpr, EveryAlgorithmParsesToItsPolicy) {
  {
    const auto p = parsed("token-bucket 10/1s burst=5");
    const auto& tb = std::get<token_bucket>(p);
    EXPECT_EQ(tb.limit(), (rate{10, s}));
    EXPECT_EQ(tb.burst(), 5);
  }
  EXPECT_EQ(std::get<gcra>(parsed("gcra 1/1s")).burst(), 1);  // burst defaults to L
  EXPECT_EQ(std::get<fixed_window>(parsed("fixed-window 1000/1h")).limit(), (rate{1000, 3600 * s}));
  EXPECT_EQ(std::get<fixed_window>(parsed("fixed-window 10/1m origin=90s")).origin(), 30 * s);  // mod W
  EXPECT_EQ(std::get<sliding_log>(parsed("sliding-log 5/10s")).limit(), (rate{5, 10 * s}));
  EXPECT_EQ(std::get<sliding_counter>(parsed("sliding-counter 5/10s")).limit(), (rate{5, 10 * s}));
  EXPECT_EQ(std::get<sliding_buckets>(parsed("sliding-buckets 5/10s buckets=5")).buckets(), 5);
  EXPECT_EQ(std::get<leaky_queue>(parsed("leaky-queue 2/1s queue=15")).queue(), 15);
  EXPECT_EQ(std::get<leaky_queue>(parsed("leaky-queue 2/1s")).queue(), 2);
  EXPECT_EQ(std::get<quota>(parsed("quota 100")).units(), 100);
  EXPECT_TRUE(std::holds_alternative<always_allow>(parsed("always-allow")));
  EXPECT_TRUE(std::holds_alternative<always_deny>(parsed("always-deny")));
  EXPECT_EQ(std::get<token_bucket>(parsed("token-bucket 0/1s")).burst(), 1);  // L = 0: burst 1, as make_policy
}

TEST(PolicyExpr, CompositesNestAndKeepTheirOrder) {
  const auto p = parsed("all(token-bucket 10/1s burst=5, fixed-window 1000/1h)");
  const auto& a = std::get<all_of>(p);
  ASSERT_EQ(a.parts().size(), 2U);
  EXPECT_TRUE(std::holds_alternative<token_bucket>(a.parts()[0]));
  EXPECT_TRUE(std::holds_alternative<fixed_window>(a.parts()[1]));
  const auto q = parsed("any(quota 100, gcra 1/1s)");
  EXPECT_EQ(std::get<any_of>(q).parts().size(), 2U);
  const auto n = parsed("all(any(quota 1, all(gcra 1/1s, sliding-log 2/1m)), always-allow)");
  const auto& outer = std::get<all_of>(n);
  const auto& inner = std::get<any_of>(outer.parts()[0]);
  EXPECT_TRUE(std::holds_alternative<all_of>(inner.parts()[1]));
  EXPECT_EQ(format_policy(n), "all(any(quota 1, all(gcra 1/1s, sliding-log 2/1m)), always-allow)");
}

TEST(PolicyExpr, WhitespaceIsFreeAndRatesAreWrittenAsParseRateReadsThem) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"  token-bucket   10/1s   burst=5  ", "token-bucket 10/1s burst=5"},
      {"token-bucket 10 / 1 s burst = 5", "token-bucket 10/1s burst=5"},
      {"token-bucket 10 per 2 minutes", "token-bucket 10/2m"},
      {"gcra 5/s", "gcra 5/1s"},
      {"gcra 100/min", "gcra 100/1m"},
      {"gcra 2/500ms", "gcra 2/500ms"},
      {"gcra 3/1.5h", "gcra 3/90m"},
      {"gcra 3/90s", "gcra 3/90s"},
      {"gcra 1/7ns", "gcra 1/7ns"},
      {"gcra 1/1d", "gcra 1/1d"},
      {"all(\n  quota 1 ,\tgcra 1/1s\n)", "all(quota 1, gcra 1/1s)"},
      {"any ( quota 1 )", "any(quota 1)"},
      {"token-bucket 10/1s burst=10", "token-bucket 10/1s"},  // the default is left out
      {"leaky-queue 2/1s queue=2", "leaky-queue 2/1s"},
      {"fixed-window 10/1m origin=0s", "fixed-window 10/1m"},
  };
  for (const auto& [text, canonical] : rows) {
    SCOPED_TRACE(text);
    EXPECT_EQ(format_policy(parsed(text)), canonical);
  }
}

TEST(PolicyExpr, FormatDurationUsesTheLargestExactUnit) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(1), "1ns");
  EXPECT_EQ(format_duration(1500), "1500ns");
  EXPECT_EQ(format_duration(1'500'000), "1500us");
  EXPECT_EQ(format_duration(2 * s), "2s");
  EXPECT_EQ(format_duration(90 * s), "90s");
  EXPECT_EQ(format_duration(3600 * s), "1h");
  EXPECT_EQ(format_duration(86400 * s), "1d");
  EXPECT_EQ(format_duration(-60 * s), "-1m");
  EXPECT_EQ(format_duration(never), "9223372036854775807ns");
  EXPECT_EQ(format_duration(-never - 1), "-9223372036854775808ns");
}

struct error_row {
  std::string text;
  std::string message;
};

TEST(PolicyExpr, ErrorsSayWhatAndWhere) {
  const std::vector<error_row> rows = {
      {"all(bukcet 1/s)",
       "policy: unknown algorithm 'bukcet' at column 5 (choose from fixed-window, sliding-log, sliding-counter, "
       "sliding-buckets, token-bucket, gcra, leaky-queue, quota, always-allow, always-deny, concurrency, all(...), "
       "any(...))"},
      {"all(token-bucket 10/1s burst=5, fixed-window 1000/1h", "policy: expected ')' at column 53"},
      {"all(token-bucket 10/1s burst=0)", "policy: burst=0 at column 24: burst must be at least 1 (got 0)"},
      {"token-bucket 10/1s burst=abc", "policy: burst='abc' at column 26: burst must be a whole number"},
      {"", "policy: empty expression at column 1; write e.g. token-bucket 10/1s burst=5"},
      {"  ", "policy: empty expression at column 3; write e.g. token-bucket 10/1s burst=5"},
      {"10/1s", "policy: expected an algorithm, found '10/1s' at column 1"},
      {"gcra", "policy: expected a rate after 'gcra' at column 5, e.g. gcra 10/1s"},
      {"gcra x", "policy: expected a rate after 'gcra', found 'x' at column 6, e.g. gcra 10/1s"},
      {"gcra 1", "policy: expected '/' after the limit at column 7, e.g. gcra 10/1s"},
      {"gcra 1/", "policy: expected a window after '/' at column 8, e.g. gcra 10/1s"},
      {"gcra 1/1x", "policy: unknown unit 'x' at column 9 (use ns, us, ms, s, m or min, h, d)"},
      {"gcra 1/1 burst=2", "policy: window '1' needs a unit at column 8 (use ns, us, ms, s, m or min, h, d)"},
      {"gcra 1/1s5", "policy: window '1s5' is not a duration at column 8 (use ns, us, ms, s, m or min, h, d)"},
      {"gcra 1/0s", "policy: rate '1/0s' at column 6: window: must be positive (got 0)"},
      {"gcra 1/1.5ns", "policy: window '1.5ns' at column 8: '1.5ns' is not a whole number of nanoseconds"},
      {"gcra 99999999999999999999/1s", "policy: limit '99999999999999999999' at column 6: must be at most 2^62"},
      {"gcra 1/s burst=2 burst=3", "policy: burst= given twice at column 18"},
      {"gcra 1/s queue=2", "policy: unknown option 'queue' at column 10 (gcra takes burst=N)"},
      {"gcra 1/s burst 5", "policy: expected '=' after 'burst' at column 16 (gcra takes burst=N)"},
      {"gcra 1/s x", "policy: unexpected 'x' at column 10"},
      {"gcra 1/s)", "policy: unexpected ')' at column 9"},
      {"all()", "policy: all(...) needs at least one limiter at column 5"},
      {"all gcra 1/s", "policy: expected '(' after 'all' at column 5"},
      {"all(gcra 1/s,)", "policy: expected an algorithm, found ')' at column 14"},
      {"all(gcra 1/s gcra 2/s)", "policy: expected ',' or ')', found 'gcra' at column 14"},
      {"foo(gcra 1/s)", "policy: unknown composite 'foo' at column 1 (use all(...) or any(...))"},
      {"quota", "policy: expected the number of units after 'quota' at column 6, e.g. quota 100"},
      {"quota 5x", "policy: expected the number of units after 'quota', found '5x' at column 7, e.g. quota 100"},
      {"quota 99999999999999999999", "policy: quota '99999999999999999999' at column 7: too large (at most 2^62)"},
      {"quota 5 burst=2", "policy: unknown option 'burst' at column 9 (quota takes no options)"},
      {"sliding-buckets 5/10s",
       "policy: sliding-buckets needs buckets=N (the number of sub-windows, dividing the window) "
       "at column 1"},
      {"sliding-buckets 5/10s buckets=3",
       "policy: buckets=3 at column 23: buckets 3 does not divide the window of 10000000000 ticks into equal "
       "sub-windows"},
      {"leaky-queue 1/1s queue=-3", "policy: queue=-3 at column 18: queue must be at least 1 (got -3)"},
      {"fixed-window 1/1s origin=-1s",
       "policy: origin='-1s' at column 19: '-1s': a duration cannot have a sign; it must be positive"},
      {"gcra 1/s \x01", "policy: unexpected '\\x01' at column 10"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.text);
    auto p = parse_policy(row.text);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.err().field, "policy");
    EXPECT_EQ(p.err().what(), row.message);
  }
}

TEST(PolicyExpr, NestingIsBounded) {
  std::string deep;
  for (int i = 0; i < max_policy_depth; ++i) deep += "all(";
  deep += "quota 1";
  for (int i = 0; i < max_policy_depth; ++i) deep += ")";
  EXPECT_TRUE(parse_policy(deep).ok());
  const std::string deeper = "any(" + deep + ")";
  auto p = parse_policy(deeper);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.err().what(),
            "policy: nesting deeper than 32 levels at column " + std::to_string(4 * max_policy_depth + 1));
  // Far deeper input is refused without recursing through it.
  EXPECT_FALSE(parse_policy(std::string(100000, '(')).ok());
  EXPECT_FALSE(parse_policy(std::string(50000 * 4, ' ').replace(0, 0, std::string(50000, 'a'))).ok());
}

TEST(PolicyExpr, CanonicalFormRoundTrips) {
  const std::vector<std::string> texts = {
      "token-bucket 10/1s burst=5",
      "gcra 1/1s",
      "fixed-window 1000/1h origin=15m",
      "sliding-log 5/10s",
      "sliding-counter 5/10s",
      "sliding-buckets 5/10s buckets=5",
      "leaky-queue 2/1s queue=15",
      "quota 100",
      "quota 0",
      "always-allow",
      "always-deny",
      "all(token-bucket 10/1s burst=5, fixed-window 1000/1h)",
      "any(quota 100, gcra 1/1s)",
      "any(all(sliding-log 4611686018427387904/1ns, gcra 0/1d burst=3), leaky-queue 1/4611686018427387904ns)",
  };
  for (const auto& t : texts) {
    SCOPED_TRACE(t);
    const auto p = parsed(t);
    EXPECT_EQ(format_policy(p), t);
    EXPECT_EQ(format_policy(parsed(format_policy(p))), t);
  }
}

}  // namespace
}  // namespace sluice::unit_policy_expr_test
