// manual_clock: starts at 0 (or where told), moves only forward, saturates.
#include "sluice/time.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace sluice::unit_time_test {
namespace {

constexpr tick max = std::numeric_limits<tick>::max();
constexpr tick min = std::numeric_limits<tick>::min();

static_assert(manual_clock{}.now() == 0);
static_assert(manual_clock{42}.now() == 42);
static_assert([] {
  manual_clock c;
  c.advance(5);
  c.advance(0);
  c.advance(-3);
  return c.now();
}() == 5);

TEST(ManualClock, StartsAtZero) {
  manual_clock c;
  EXPECT_EQ(c.now(), 0);
  EXPECT_EQ(manual_clock(-7).now(), -7);
  EXPECT_EQ(manual_clock(min).now(), min);
}

TEST(ManualClock, AdvanceZeroOrNegativeChangesNothing) {
  manual_clock c(100);
  c.advance(0);
  EXPECT_EQ(c.now(), 100);
  c.advance(-1);
  EXPECT_EQ(c.now(), 100);
  c.advance(min);
  EXPECT_EQ(c.now(), 100);
}

TEST(ManualClock, AdvancesByExactlyD) {
  manual_clock c;
  c.advance(1);
  EXPECT_EQ(c.now(), 1);
  c.advance(999);
  EXPECT_EQ(c.now(), 1000);
  manual_clock m(min);
  m.advance(max);
  EXPECT_EQ(m.now(), -1);
}

TEST(ManualClock, SaturatesAtTheEndOfTime) {
  manual_clock c(max - 3);
  c.advance(3);
  EXPECT_EQ(c.now(), max);
  c.advance(1);
  EXPECT_EQ(c.now(), max);
  manual_clock d(max - 3);
  d.advance(10);
  EXPECT_EQ(d.now(), max);
  manual_clock e(1);
  e.advance(max);
  EXPECT_EQ(e.now(), max);
  manual_clock f(0);
  f.advance(max);
  EXPECT_EQ(f.now(), max);
}

TEST(SteadyClock, NeverGoesBackwards) {
  const tick a = steady_clock::now();
  const tick b = steady_clock::now();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace sluice::unit_time_test
