// Fixed window: explicit-time tables worked out by hand from semantics.md.
// Window k = floor((now − origin) / W); admit iff count + c ≤ L; the next
// chance is the start of window k + 1.
// The tables are laid out by hand, one row a line:
// clang-format off
#include "sluice/core/fixed_window.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "unit/rows.hpp"

namespace sluice::unit_fixed_window_test {
namespace {

using test::N;
using test::r;

constexpr tick ms = 1;  // ticks are milliseconds in the 10/60 s tables
constexpr tick sec = 1000 * ms;
constexpr std::int64_t big = std::int64_t{1} << 62;

static_assert(std::is_trivially_copyable_v<fixed_window::state>);

// 10 per 60 s: 10 requests spread over 55..59.5 s fill window 0, 10 more over
// 60.5..65 s fill window 1. Twenty get through in ten seconds.
TEST(FixedWindow, LetsTwentyThroughAcrossABoundary) {
  const auto p = test::ok(fixed_window::make(rate{10, 60 * sec}));
  test::play(p, {
                    r(55000, 1, true, 9, 0, 5000),
                    r(55500, 1, true, 8, 0, 4500),
                    r(56000, 1, true, 7, 0, 4000),
                    r(56500, 1, true, 6, 0, 3500),
                    r(57000, 1, true, 5, 0, 3000),
                    r(57500, 1, true, 4, 0, 2500),
                    r(58000, 1, true, 3, 0, 2000),
                    r(58500, 1, true, 2, 0, 1500),
                    r(59000, 1, true, 1, 0, 1000),
                    r(59500, 1, true, 0, 0, 500),
                    r(59999, 1, false, 0, 1, 1),  // full until the boundary, exactly
                    r(60500, 1, true, 9, 0, 59500),
                    r(61000, 1, true, 8, 0, 59000),
                    r(61500, 1, true, 7, 0, 58500),
                    r(62000, 1, true, 6, 0, 58000),
                    r(62500, 1, true, 5, 0, 57500),
                    r(63000, 1, true, 4, 0, 57000),
                    r(63500, 1, true, 3, 0, 56500),
                    r(64000, 1, true, 2, 0, 56000),
                    r(64500, 1, true, 1, 0, 55500),
                    r(65000, 1, true, 0, 0, 55000),
                    r(65000, 1, false, 0, 55000, 55000),
                    r(65000, 0, false, 0, N, 55000),   // cost 0: never
                    r(65000, 11, false, 0, N, 55000),  // cost above L: never
                    r(120000, 10, true, 0, 0, 60000),
                    r(100000, 1, false, 0, 80000, 80000),  // clock back into window 1: read as window 2
                    r(179999, 1, false, 0, 1, 1),
                    r(180000, 3, true, 7, 0, 60000),
                });
}

TEST(FixedWindow, CountsTwentyBetween55And65Seconds) {
  const auto p = test::ok(fixed_window::make(rate{10, 60 * sec}));
  fixed_window::state s;
  int admitted = 0;
  for (tick t = 55000; t <= 59500; t += 500) admitted += decide(p, s, t, 1).allowed ? 1 : 0;
  for (tick t = 60500; t <= 65000; t += 500) admitted += decide(p, s, t, 1).allowed ? 1 : 0;
  EXPECT_EQ(admitted, 20);
}

TEST(FixedWindow, TwentyInsideOneWindowGetTen) {
  const auto p = test::ok(fixed_window::make(rate{10, 60 * sec}));
  fixed_window::state s;
  int admitted = 0;
  for (int i = 0; i < 20; ++i) {
    const tick t = 10 * sec + i * 500 * ms;  // 10 s .. 19.5 s
    const decision d = decide(p, s, t, 1);
    admitted += d.allowed ? 1 : 0;
    if (i >= 10) {
      EXPECT_FALSE(d.allowed);
      EXPECT_EQ(d.retry_after, 60 * sec - t);
    }
  }
  EXPECT_EQ(admitted, 10);
}

// L = 3 per 10 ticks with origin 23, which is the same windows as origin 3:
// [−7, 3), [3, 13), [13, 23), ...
TEST(FixedWindow, OriginShiftsTheWindows) {
  const auto p = test::ok(fixed_window::make(rate{3, 10}, 23));
  EXPECT_EQ(p.origin(), 3);
  EXPECT_EQ(p.window_of(2), -1);
  EXPECT_EQ(p.window_of(3), 0);
  test::play(p, {
                    r(0, 1, true, 2, 0, 3),
                    r(2, 2, true, 0, 0, 1),
                    r(2, 1, false, 0, 1, 1),
                    r(3, 3, true, 0, 0, 10),
                    r(12, 1, false, 0, 1, 1),
                    r(-50, 1, false, 0, 63, 63),  // clock back six windows: read as window 0
                    r(13, 4, false, 3, N, 0),      // cost above L, in a fresh window
                    r(13, 2, true, 1, 0, 10),
                    r(20, 2, false, 1, 3, 3),
                    r(20, 1, true, 0, 0, 3),
                    r(22, 0, false, 0, N, 1),
                    r(23, 3, true, 0, 0, 10),
                    r(1003, 1, true, 2, 0, 10),
                    r(1012, 2, true, 0, 0, 1),
                    r(1012, 1, false, 0, 1, 1),
                    r(1013, 1, true, 2, 0, 10),
                    r(1013, -1, false, 2, N, 10),
                });
}

TEST(FixedWindow, NegativeOriginAndTimes) {
  const auto p = test::ok(fixed_window::make(rate{2, 10}, -7));  // windows [3 + 10k, 13 + 10k)
  EXPECT_EQ(p.origin(), 3);
  test::play(p, {
                    r(-8, 2, true, 0, 0, 1),  // window [−17, −7)
                    r(-8, 1, false, 0, 1, 1),
                    r(-7, 1, true, 1, 0, 10),
                });
}

TEST(FixedWindow, ZeroLimitDeniesEverythingNever) {
  const auto p = test::ok(fixed_window::make(rate{0, 60}));
  test::play(p, {
                    r(0, 1, false, 0, N, 0),
                    r(59, 1, false, 0, N, 0),
                    r(60, 1, false, 0, N, 0),
                    r(std::numeric_limits<tick>::min(), 1, false, 0, N, 0),
                    r(std::numeric_limits<tick>::max(), 1, false, 0, N, 0),
                });
}

TEST(FixedWindow, CostAboveLimitIsNeverNotLater) {
  const auto p = test::ok(fixed_window::make(rate{5, 10}));
  fixed_window::state s;
  const decision d = decide(p, s, 0, 6);
  EXPECT_TRUE(d.never_allowed());
  EXPECT_FALSE(d.retry_later());
  EXPECT_EQ(decide(p, s, 0, std::numeric_limits<std::int64_t>::max()).retry_after, never);
  EXPECT_EQ(decide(p, s, 0, std::numeric_limits<std::int64_t>::min()).retry_after, never);
  EXPECT_EQ(s, fixed_window::state{});
}

// A window of L = 2^62 already holding 2^62 units, and a second request of
// 2^62: count + cost is 2^63, one past INT64_MAX. It used to overflow (UB;
// with wrapping, a wrong admit).
TEST(FixedWindow, FullWindowOfTwoToThe62DoesNotOverflow) {
  const auto p = test::ok(fixed_window::make(rate{big, 10}));
  fixed_window::state s;
  ASSERT_TRUE(decide(p, s, 0, big).allowed);
  const decision d = decide(p, s, 1, big);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.retry_after, 9);
  EXPECT_TRUE(decide(p, s, 10, big).allowed);
}

TEST(FixedWindow, NextWindowPastTheEndOfTimeIsNever) {
  const tick max = std::numeric_limits<tick>::max();
  const auto p = test::ok(fixed_window::make(rate{1, big}));
  fixed_window::state s;
  ASSERT_TRUE(decide(p, s, max - 5, 1).allowed);
  const decision d = decide(p, s, max, 1);
  EXPECT_FALSE(d.allowed);
  // Window k starts at k·2^62 ≤ INT64_MAX; window k + 1 starts past it.
  EXPECT_EQ(d.retry_after, never);
  EXPECT_EQ(d.reset_after, never);
}

TEST(FixedWindow, RefusesBadConfigurationNamingTheField) {
  EXPECT_EQ(test::field_of(fixed_window::make(rate{-1, 10})), "limit");
  EXPECT_EQ(test::field_of(fixed_window::make(rate{big + 1, 10})), "limit");
  EXPECT_EQ(test::field_of(fixed_window::make(rate{1, 0})), "window");
  EXPECT_EQ(test::field_of(fixed_window::make(rate{1, -5})), "window");
  EXPECT_EQ(test::field_of(fixed_window::make(rate{1, big + 1})), "window");
  EXPECT_TRUE(fixed_window::make(rate{0, 1}).ok());
  EXPECT_TRUE(fixed_window::make(rate{big, big}, std::numeric_limits<tick>::min()).ok());
}

}  // namespace
}  // namespace sluice::unit_fixed_window_test
