// GCRA: explicit-time tables worked out by hand from semantics.md. With
// u = tat·L and b = max(u, now·L): admit iff b + c·W − now·L ≤ S·W, then
// u = b + c·W. Every table is also played through the token bucket with the
// same L, W, S, which must decide the same.
// The tables are laid out by hand, one row a line:
// clang-format off
#include "sluice/core/gcra.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "sluice/core/token_bucket.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_gcra_test {
namespace {

using test::N;
using test::r;

constexpr std::int64_t big = std::int64_t{1} << 62;

static_assert(std::is_trivially_copyable_v<gcra::state>);

void play_both(rate rt, std::int64_t burst, const std::vector<test::row>& rows) {
  {
    SCOPED_TRACE("gcra");
    test::play(test::ok(gcra::make(rt, burst)), rows);
  }
  {
    SCOPED_TRACE("token_bucket");
    test::play(test::ok(token_bucket::make(rt, burst)), rows);
  }
}

// L = 1 per W = 10 ticks (one unit every 10 ticks), S = 3: the tolerance
// S·W is 30 and, with L = 1, u is the tat itself. The comments give u after
// each row.
TEST(Gcra, SmallTable) {
  play_both(rate{1, 10}, 3,
            {
                r(0, 1, true, 2, 0, 10),     // u = 10
                r(0, 2, true, 0, 0, 30),     // u = 30
                r(5, 1, false, 0, 5, 25),    // 40 − 5 > 30; fits at 10
                r(9, 1, false, 0, 1, 21),
                r(10, 1, true, 0, 0, 30),    // 40 − 10 = 30; u = 40
                r(25, 2, false, 1, 5, 15),   // 60 − 25 > 30; held 30 − 15 = 15: one token
                r(25, 1, true, 0, 0, 25),    // u = 50
                r(26, 4, false, 0, N, 24),   // cost above S
                r(0, 1, false, 0, 30, 50),   // clock back: read as 25; fits at 30
                r(100, 3, true, 0, 0, 30),   // tat in the past: b = 100; u = 130
                r(100, 0, false, 0, N, 30),
                r(119, 1, true, 0, 0, 21),   // 140 − 119 = 21; u = 140
                r(120, 1, true, 0, 0, 30),   // u = 150
                r(129, 1, false, 0, 1, 21),
                r(130, 1, true, 0, 0, 30),   // u = 160
                r(200, 1, true, 2, 0, 10),   // u = 210
                r(-5, -3, false, 2, N, 215),
            });
}

// The same meter in nanoseconds: 100 per second, burst 1 (a pure rate: one
// every 10 ms, no burst).
TEST(Gcra, PureRateWithoutBurst) {
  constexpr tick ms = 1'000'000;
  play_both(rate{100, 1000 * ms}, 1,
            {
                r(0, 1, true, 0, 0, 10 * ms),
                r(1, 1, false, 0, 10 * ms - 1, 10 * ms - 1),
                r(10 * ms - 1, 1, false, 0, 1, 1),
                r(10 * ms, 1, true, 0, 0, 10 * ms),
                r(25 * ms, 1, true, 0, 0, 10 * ms),
                r(25 * ms, 2, false, 0, N, 10 * ms),
            });
}

TEST(Gcra, ZeroLimitDoesNotPassEvenTheFirstBurst) {
  play_both(rate{0, 10}, 100,
            {
                r(0, 1, false, 0, N, 0),
                r(std::numeric_limits<tick>::min(), 1, false, 0, N, 0),
                r(std::numeric_limits<tick>::max(), 100, false, 0, N, 0),
            });
}

TEST(Gcra, FreshStateAtTheEdgesOfTime) {
  const auto p = test::ok(gcra::make(rate{big, big}, big));
  for (tick t : {std::numeric_limits<tick>::min(), tick{0}, std::numeric_limits<tick>::max()}) {
    gcra::state s;
    const decision d = decide(p, s, t, big);
    EXPECT_TRUE(d.allowed) << t;
    EXPECT_EQ(d.remaining, 0);
  }
}

TEST(Gcra, RefusesBadConfigurationNamingTheField) {
  EXPECT_EQ(test::field_of(gcra::make(rate{-1, 10}, 1)), "limit");
  EXPECT_EQ(test::field_of(gcra::make(rate{1, 0}, 1)), "window");
  EXPECT_EQ(test::field_of(gcra::make(rate{1, 10}, 0)), "burst");
  EXPECT_EQ(test::field_of(gcra::make(rate{1, 10}, -7)), "burst");
}

}  // namespace
}  // namespace sluice::unit_gcra_test
