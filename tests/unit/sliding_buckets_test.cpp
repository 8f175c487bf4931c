// Sliding window with buckets: explicit-time tables worked out by hand from
// semantics.md. W is split into N sub-windows of W/N; admit iff the N
// sub-windows ending with the current one hold at most L − c.
// The tables are laid out by hand, one row a line:
// clang-format off
#include "sluice/core/sliding_buckets.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "sluice/core/fixed_window.hpp"
#include "sluice/core/sliding_log.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_sliding_buckets_test {
namespace {

using test::N;
using test::r;

constexpr std::int64_t big = std::int64_t{1} << 62;

// L = 4 per W = 12 ticks, N = 3 sub-windows of 4 ticks: sub-window j is
// [4j, 4j + 4) and the window at j is sub-windows j − 2 .. j.
TEST(SlidingBuckets, SmallTable) {
  const auto p = test::ok(sliding_buckets::make(rate{4, 12}, 3));
  test::play(p, {
                    r(0, 1, true, 3, 0, 12),
                    r(3, 2, true, 1, 0, 9),
                    r(5, 1, true, 0, 0, 11),     // j = 1: sub 0 holds 3
                    r(7, 1, false, 0, 5, 9),     // sub 0 leaves when j = 3, at 12
                    r(11, 1, false, 0, 1, 5),
                    r(12, 3, true, 0, 0, 12),    // j = 3: only sub 1 (1) left
                    r(13, 5, false, 0, N, 11),   // cost above L
                    r(15, 2, false, 0, 9, 9),    // needs sub 3 (3) gone: j = 6, at 24
                    r(16, 1, true, 0, 0, 12),    // j = 4: sub 3 holds 3
                    r(1, 1, false, 0, 23, 27),   // clock back: read as sub 4
                    r(24, 0, false, 3, N, 4),    // j = 6: sub 4 (1) left
                    r(24, 3, true, 0, 0, 12),
                    r(27, 1, false, 0, 1, 9),    // sub 4 leaves at 28
                    r(28, 1, true, 0, 0, 12),
                    r(100, 4, true, 0, 0, 12),   // long gap: all gone
                    r(103, -5, false, 0, N, 9),
                    r(111, 1, false, 0, 1, 1),
                    r(112, 4, true, 0, 0, 12),
                });
}

// N = 1 is a fixed window (origin 0); N = W is a sliding log on whole ticks.
TEST(SlidingBuckets, OneBucketIsAFixedWindowAndWBucketsALog) {
  const auto one = test::ok(sliding_buckets::make(rate{3, 10}, 1));
  const auto fixed = test::ok(fixed_window::make(rate{3, 10}));
  const auto every = test::ok(sliding_buckets::make(rate{3, 10}, 10));
  const auto log = test::ok(sliding_log::make(rate{3, 10}));
  sliding_buckets::state s1, s2;
  fixed_window::state f;
  sliding_log::state l;
  const tick times[] = {0, 1, 1, 5, 9, 10, 10, 11, 12, 19, 20, 20, 20, 21, 29, 30, 31, 45, 46, 47, 50, 55, 56};
  for (tick t : times) {
    SCOPED_TRACE(t);
    EXPECT_EQ(decide(one, s1, t, 1), decide(fixed, f, t, 1));
    EXPECT_EQ(decide(every, s2, t, 1), decide(log, l, t, 1));
  }
}

TEST(SlidingBuckets, ZeroLimitDeniesEverythingNever) {
  const auto p = test::ok(sliding_buckets::make(rate{0, 60}, 6));
  test::play(p, {
                    r(0, 1, false, 0, N, 0),
                    r(59, 1, false, 0, N, 0),
                    r(std::numeric_limits<tick>::max(), 1, false, 0, N, 0),
                });
}

// in_window + cost with both 2^62 is 2^63: it used to overflow int64.
TEST(SlidingBuckets, FullWindowOfTwoToThe62DoesNotOverflow) {
  const auto p = test::ok(sliding_buckets::make(rate{big, 10}, 5));
  sliding_buckets::state s;
  ASSERT_TRUE(decide(p, s, 0, big).allowed);
  const decision d = decide(p, s, 1, big);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.retry_after, 9);
  EXPECT_TRUE(decide(p, s, 10, big).allowed);
}

TEST(SlidingBuckets, RefusesBadConfigurationNamingTheField) {
  EXPECT_EQ(test::field_of(sliding_buckets::make(rate{-1, 10}, 2)), "limit");
  EXPECT_EQ(test::field_of(sliding_buckets::make(rate{1, 0}, 1)), "window");
  EXPECT_EQ(test::field_of(sliding_buckets::make(rate{1, 10}, 3)), "buckets");  // 3 does not divide 10
  EXPECT_EQ(test::field_of(sliding_buckets::make(rate{1, 10}, 0)), "buckets");
  EXPECT_EQ(test::field_of(sliding_buckets::make(rate{1, 10}, -2)), "buckets");
  EXPECT_EQ(test::field_of(sliding_buckets::make(rate{1, 10}, 20)), "buckets");
  EXPECT_TRUE(sliding_buckets::make(rate{1, 10}, 5).ok());
  EXPECT_TRUE(sliding_buckets::make(rate{1, 10}, 10).ok());
}

}  // namespace
}  // namespace sluice::unit_sliding_buckets_test
