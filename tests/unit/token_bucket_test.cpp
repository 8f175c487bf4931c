// Token bucket: explicit-time tables worked out by hand from semantics.md.
// Tokens T in 1/W token; T = min(S·W, T + (now − last)·L); admit iff
// T ≥ c·W; retry_after = ceil((c·W − T) / L). Every table is also played
// through GCRA, which must decide the same.
// The tables are laid out by hand, one row a line:
// clang-format off
#include "sluice/core/token_bucket.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "sluice/core/gcra.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_token_bucket_test {
namespace {

using test::N;
using test::r;

constexpr tick ms = 1;  // ticks are milliseconds
constexpr tick sec = 1000 * ms;
constexpr std::int64_t big = std::int64_t{1} << 62;

static_assert(std::is_trivially_copyable_v<token_bucket::state>);

void play_both(rate rt, std::int64_t burst, const std::vector<test::row>& rows) {
  {
    SCOPED_TRACE("token_bucket");
    test::play(test::ok(token_bucket::make(rt, burst)), rows);
  }
  {
    SCOPED_TRACE("gcra");
    test::play(test::ok(gcra::make(rt, burst)), rows);
  }
}

// 10 tokens, 2 per second: 10 of 11 instant requests pass, one more 0.6 s
// later (1.2 tokens), and a drained bucket re-allows at exactly 1 s after the
// last token went (the 0.2 left + 0.8 refilled), not one tick earlier.
TEST(TokenBucket, TenOfElevenThenOneMoreAfterSixTenths) {
  play_both(rate{2, sec}, 10,
            {
                r(0, 1, true, 9, 0, 500),
                r(0, 1, true, 8, 0, 1000),
                r(0, 1, true, 7, 0, 1500),
                r(0, 1, true, 6, 0, 2000),
                r(0, 1, true, 5, 0, 2500),
                r(0, 1, true, 4, 0, 3000),
                r(0, 1, true, 3, 0, 3500),
                r(0, 1, true, 2, 0, 4000),
                r(0, 1, true, 1, 0, 4500),
                r(0, 1, true, 0, 0, 5000),
                r(0, 1, false, 0, 500, 5000),
                r(600, 1, true, 0, 0, 4900),     // 1.2 tokens: take 1, 0.2 left
                r(600, 1, false, 0, 400, 4900),  // 0.8 more at 2/s
                r(999, 1, false, 0, 1, 4501),    // 0.998 tokens
                r(1000, 1, true, 0, 0, 5000),    // exactly 1
                r(1000, 11, false, 0, N, 5000),  // cost above the burst
                r(1000, 0, false, 0, N, 5000),
                r(100000, 10, true, 0, 0, 5000),       // full again after the idle time
                r(50000, 1, false, 0, 50500, 55000),   // clock back: read as 100 s
                r(102500, 5, true, 0, 0, 5000),
            });
}

// 5 tokens, 10 per second: drained at 0, 0.3 s later 3 tokens: 3 of 5 pass.
TEST(TokenBucket, ThreeOfFiveThreeTenthsAfterDraining) {
  play_both(rate{10, sec}, 5,
            {
                r(0, 1, true, 4, 0, 100),
                r(0, 1, true, 3, 0, 200),
                r(0, 1, true, 2, 0, 300),
                r(0, 1, true, 1, 0, 400),
                r(0, 1, true, 0, 0, 500),
                r(0, 1, false, 0, 100, 500),
                r(300, 1, true, 2, 0, 300),
                r(300, 1, true, 1, 0, 400),
                r(300, 1, true, 0, 0, 500),
                r(300, 1, false, 0, 100, 500),
                r(300, 1, false, 0, 100, 500),
            });
}

// 2 tokens, 3 per 10 ticks: a token takes 10/3 ticks, so a drained bucket
// re-allows 4 ticks later (12/10 of a token), not at 3 (9/10).
TEST(TokenBucket, RefillThatDoesNotDivideTheWindow) {
  play_both(rate{3, 10}, 2,
            {
                r(0, 2, true, 0, 0, 7),   // T = 0; 20 to refill at 3 a tick
                r(0, 1, false, 0, 4, 7),
                r(3, 1, false, 0, 1, 4),  // T = 9
                r(4, 1, true, 0, 0, 6),   // T = 12 − 10 = 2
                r(7, 1, true, 0, 0, 7),   // T = 11 − 10 = 1
                r(10, 1, true, 0, 0, 7),  // T = 10 − 10 = 0
                r(10, 1, false, 0, 4, 7),
                r(13, 1, false, 0, 1, 4),
                r(14, 1, true, 0, 0, 6),
                r(14, 2, false, 0, 6, 6),  // T = 2: 18 more
                r(20, 2, true, 0, 0, 7),
                r(1000, 3, false, 2, N, 0),  // full, cost above S
            });
}

TEST(TokenBucket, ZeroLimitDoesNotPassEvenTheFirstBurst) {
  play_both(rate{0, sec}, 5,
            {
                r(0, 1, false, 0, N, 0),
                r(1000000, 1, false, 0, N, 0),
                r(std::numeric_limits<tick>::max(), 5, false, 0, N, 0),
            });
}

TEST(TokenBucket, FullAfterTwoHundredYearsIdle) {
  constexpr tick ns_per_year = 31'556'952'000'000'000;  // 365.2425 days
  const auto p = test::ok(token_bucket::make(rate{10, 1'000'000'000}, 10));
  token_bucket::state s;
  ASSERT_TRUE(decide(p, s, 0, 10).allowed);
  const decision d = decide(p, s, 200 * ns_per_year, 1);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 9);
}

TEST(TokenBucket, RetryPastTheEndOfTimeIsNever) {
  const tick max = std::numeric_limits<tick>::max();
  const auto p = test::ok(token_bucket::make(rate{1, big}, 1));  // one token per 2^62 ticks
  token_bucket::state s;
  ASSERT_TRUE(decide(p, s, max - 10, 1).allowed);
  const decision d = decide(p, s, max - 5, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, never);
  EXPECT_TRUE(d.never_allowed());
}

TEST(TokenBucket, RefusesBadConfigurationNamingTheField) {
  EXPECT_EQ(test::field_of(token_bucket::make(rate{-1, 10}, 1)), "limit");
  EXPECT_EQ(test::field_of(token_bucket::make(rate{1, 0}, 1)), "window");
  EXPECT_EQ(test::field_of(token_bucket::make(rate{1, -3}, 1)), "window");
  EXPECT_EQ(test::field_of(token_bucket::make(rate{1, 10}, 0)), "burst");
  EXPECT_EQ(test::field_of(token_bucket::make(rate{1, 10}, -1)), "burst");
  EXPECT_EQ(test::field_of(token_bucket::make(rate{1, 10}, big + 1)), "burst");
  EXPECT_TRUE(token_bucket::make(rate{big, big}, big).ok());
}

}  // namespace
}  // namespace sluice::unit_token_bucket_test
