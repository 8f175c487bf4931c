// Sliding log: explicit-time tables worked out by hand from semantics.md. A
// unit admitted at t is in the window at `now` iff now − W < t ≤ now; admit
// iff in_window + c ≤ L.
// The tables are laid out by hand, one row a line:
// clang-format off
#include "sluice/core/sliding_log.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "unit/rows.hpp"

namespace sluice::unit_sliding_log_test {
namespace {

using test::N;
using test::r;

constexpr tick ms = 1;
constexpr tick sec = 1000 * ms;
constexpr std::int64_t big = std::int64_t{1} << 62;

// L = 3 per 10 ticks.
TEST(SlidingLog, SmallTable) {
  const auto p = test::ok(sliding_log::make(rate{3, 10}));
  test::play(p, {
                    r(0, 1, true, 2, 0, 10),
                    r(2, 1, true, 1, 0, 10),
                    r(2, 1, true, 0, 0, 10),
                    r(5, 1, false, 0, 5, 7),    // the unit at 0 leaves at 10
                    r(9, 2, false, 0, 3, 3),    // needs the two at 2 gone too: 12
                    r(10, 1, true, 0, 0, 10),   // 0 ≤ 10 − 10: out
                    r(11, 1, false, 0, 1, 9),
                    r(12, 2, true, 0, 0, 10),
                    r(12, 4, false, 0, N, 10),  // cost above L
                    r(12, 0, false, 0, N, 10),
                    r(12, -1, false, 0, N, 10),
                    r(3, 1, false, 0, 17, 19),  // clock back: read as 12, durations from 3
                    r(19, 1, false, 0, 1, 3),
                    r(20, 1, true, 0, 0, 10),
                    r(21, 3, false, 0, 9, 9),   // the runs at 12 (2) and 20 (1) must leave
                    r(30, 3, true, 0, 0, 10),
                    r(100, 1, true, 2, 0, 10),
                    r(15, 1, true, 1, 0, 95),   // clock back: admitted at 100
                });
}

// The fixed window's boundary trace: 10 per 60 s, 10 requests over 55..59.5 s
// and 10 over 60.5..65 s. The log lets only the first 10 through.
TEST(SlidingLog, LetsTenThroughAcrossABoundary) {
  const auto p = test::ok(sliding_log::make(rate{10, 60 * sec}));
  test::play(p, {
                    r(55000, 1, true, 9, 0, 60000),
                    r(55500, 1, true, 8, 0, 60000),
                    r(56000, 1, true, 7, 0, 60000),
                    r(56500, 1, true, 6, 0, 60000),
                    r(57000, 1, true, 5, 0, 60000),
                    r(57500, 1, true, 4, 0, 60000),
                    r(58000, 1, true, 3, 0, 60000),
                    r(58500, 1, true, 2, 0, 60000),
                    r(59000, 1, true, 1, 0, 60000),
                    r(59500, 1, true, 0, 0, 60000),
                    r(59999, 1, false, 0, 55001, 59501),
                    r(60500, 1, false, 0, 54500, 59000),
                    r(61000, 1, false, 0, 54000, 58500),
                    r(61500, 1, false, 0, 53500, 58000),
                    r(62000, 1, false, 0, 53000, 57500),
                    r(62500, 1, false, 0, 52500, 57000),
                    r(63000, 1, false, 0, 52000, 56500),
                    r(63500, 1, false, 0, 51500, 56000),
                    r(64000, 1, false, 0, 51000, 55500),
                    r(64500, 1, false, 0, 50500, 55000),
                    r(65000, 1, false, 0, 50000, 54500),
                    r(115000, 1, true, 0, 0, 60000),  // the unit at 55 s has left
                    r(115000, 2, false, 0, 1000, 60000),
                });
}

TEST(SlidingLog, TwentyInsideOneWindowGetTen) {
  const auto p = test::ok(sliding_log::make(rate{10, 60 * sec}));
  sliding_log::state s;
  int admitted = 0;
  for (int i = 0; i < 20; ++i) {
    const tick t = 10 * sec + i * 500 * ms;  // 10 s .. 19.5 s
    const decision d = decide(p, s, t, 1);
    admitted += d.allowed ? 1 : 0;
    if (i >= 10) {
      EXPECT_EQ(d.retry_after, 70 * sec - t);  // the unit at 10 s leaves at 70 s
    }
  }
  EXPECT_EQ(admitted, 10);
}

TEST(SlidingLog, MergesUnitsAdmittedAtOneInstant) {
  const auto p = test::ok(sliding_log::make(rate{100, 10}));
  sliding_log::state s;
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(decide(p, s, 7, 2).allowed);
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(s.at(0), (sliding_log::entry{7, 100}));
  EXPECT_EQ(s.units(), 100);
  EXPECT_EQ(s.last(), 7);
}

TEST(SlidingLog, HoldsAtMostLEntries) {
  const auto p = test::ok(sliding_log::make(rate{5, 1000}));
  sliding_log::state s;
  for (tick t = 0; t < 100000; t += 7) {
    (void)decide(p, s, t, 1);
    ASSERT_LE(s.size(), 5u);
  }
}

TEST(SlidingLog, ZeroLimitDeniesEverythingNever) {
  const auto p = test::ok(sliding_log::make(rate{0, 60}));
  test::play(p, {
                    r(0, 1, false, 0, N, 0),
                    r(1000, 1, false, 0, N, 0),
                    r(std::numeric_limits<tick>::max(), 1, false, 0, N, 0),
                });
}

// in_window + cost with both 2^62 is 2^63: it used to overflow int64.
TEST(SlidingLog, FullLogOfTwoToThe62DoesNotOverflow) {
  const auto p = test::ok(sliding_log::make(rate{big, 10}));
  sliding_log::state s;
  ASSERT_TRUE(decide(p, s, 0, big).allowed);
  const decision d = decide(p, s, 1, big);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.retry_after, 9);
  EXPECT_TRUE(decide(p, s, 10, big).allowed);
}

TEST(SlidingLog, EntryLeavingPastTheEndOfTimeIsNever) {
  const tick max = std::numeric_limits<tick>::max();
  const auto p = test::ok(sliding_log::make(rate{1, 100}));
  sliding_log::state s;
  ASSERT_TRUE(decide(p, s, max - 10, 1).allowed);
  const decision d = decide(p, s, max, 1);
  EXPECT_EQ(d.retry_after, never);
  EXPECT_EQ(d.reset_after, never);
}

TEST(SlidingLog, RefusesBadConfigurationNamingTheField) {
  EXPECT_EQ(test::field_of(sliding_log::make(rate{-1, 10})), "limit");
  EXPECT_EQ(test::field_of(sliding_log::make(rate{1, 0})), "window");
  EXPECT_EQ(test::field_of(sliding_log::make(rate{1, -1})), "window");
}

}  // namespace
}  // namespace sluice::unit_sliding_log_test
