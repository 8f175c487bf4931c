// Sliding window counter: explicit-time tables worked out by hand from
// semantics.md. At offset o = now − kW the estimate is prev·(W − o)/W + curr;
// admit iff prev·(W − o) + (curr + c)·W ≤ L·W.
// The tables are laid out by hand, one row a line:
// clang-format off
#include "sluice/core/sliding_counter.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "unit/rows.hpp"

namespace sluice::unit_sliding_counter_test {
namespace {

using test::N;
using test::r;

constexpr std::int64_t big = std::int64_t{1} << 62;

static_assert(std::is_trivially_copyable_v<sliding_counter::state>);

// L = 10 per W = 10 ticks. In the comments "used" is the estimate times W.
TEST(SlidingCounter, SmallTable) {
  const auto p = test::ok(sliding_counter::make(rate{10, 10}));
  test::play(p, {
                    r(0, 4, true, 6, 0, 20),
                    r(5, 6, true, 0, 0, 15),
                    r(9, 1, false, 0, 2, 11),    // next window: 10·(10 − o) + 10 ≤ 100 from o = 1
                    r(10, 1, false, 0, 1, 10),   // prev 10 at o = 0: used 100
                    r(11, 1, true, 0, 0, 19),    // used 90 + 10
                    r(15, 5, false, 4, 1, 15),   // used 10·5 + 10 = 60 (estimate 6); 60 + 50 > 100
                    r(15, 4, true, 0, 0, 15),
                    r(17, 2, true, 0, 0, 13),    // used 10·3 + 50 = 80
                    r(18, 2, false, 1, 1, 12),   // used 90; room from o = 9
                    r(18, 1, true, 0, 0, 12),
                    r(19, 3, false, 1, 3, 11),   // window 2, prev 8: 8·(10 − o) + 30 ≤ 100 from o = 2
                    r(22, 3, true, 0, 0, 18),    // used 64 + 30 = 94
                    r(25, 1, true, 2, 0, 15),    // used 40 + 30 = 70, + 10
                    r(20, 3, false, 2, 7, 20),   // clock back: read as 25, used 80; fits at o = 7
                    r(11, 11, false, 2, N, 29),  // cost above L
                    r(45, 10, true, 0, 0, 15),   // two windows later: prev is 0
                    r(50, 1, false, 0, 1, 10),
                    r(60, 10, true, 0, 0, 20),   // window 6 after window 4: prev is 0
                });
}

// 10 per 60 s (ms ticks): 8 in window 0, 2 early in window 1, and at 18 s into
// window 1 the estimate is 8·42/60 + 2 = 7.6, so 2 more fit and 3 do not.
TEST(SlidingCounter, WeightedEstimateAtAPartialOffset) {
  const auto p = test::ok(sliding_counter::make(rate{10, 60000}));
  test::play(p, {
                    r(1000, 8, true, 2, 0, 119000),
                    r(61000, 2, true, 0, 0, 119000),  // 8·59/60 + 2 = 9.87
                    r(78000, 3, false, 2, 4500, 102000),  // 8·(60000 − o) ≤ 300000 from o = 22500
                    r(78000, 2, true, 0, 0, 102000),
                    r(82500, 2, false, 1, 7500, 97500),   // 8·37.5/60 + 4 = 9; 8·30/60 + 4 + 2 = 10
                    r(90000, 2, true, 0, 0, 90000),
                });
}

TEST(SlidingCounter, ZeroLimitDeniesEverythingNever) {
  const auto p = test::ok(sliding_counter::make(rate{0, 60}));
  test::play(p, {
                    r(0, 1, false, 0, N, 0),
                    r(1000, 1, false, 0, N, 0),
                    r(std::numeric_limits<tick>::min(), 1, false, 0, N, 0),
                });
}

TEST(SlidingCounter, TwoToThe62Everywhere) {
  const auto p = test::ok(sliding_counter::make(rate{big, big}));
  sliding_counter::state s;
  ASSERT_TRUE(decide(p, s, 0, big).allowed);
  const decision d = decide(p, s, 1, 1);
  EXPECT_FALSE(d.allowed);
  // Window 1 (starting at 2^62), prev = 2^62: 2^62·(2^62 − o) + 2^62 ≤ 2^124
  // from o = 1.
  EXPECT_EQ(d.retry_after, big);
  EXPECT_TRUE(decide(p, s, big + 1, 1).allowed);
}

TEST(SlidingCounter, RefusesBadConfigurationNamingTheField) {
  EXPECT_EQ(test::field_of(sliding_counter::make(rate{-1, 10})), "limit");
  EXPECT_EQ(test::field_of(sliding_counter::make(rate{1, 0})), "window");
  EXPECT_EQ(test::field_of(sliding_counter::make(rate{1, -10})), "window");
}

}  // namespace
}  // namespace sluice::unit_sliding_counter_test
