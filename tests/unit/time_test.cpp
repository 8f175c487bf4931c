// manual_clock: starts at 0 (or where told), moves only forward, saturates.
// std::chrono durations as nanosecond ticks: exact, or refused.
#include "sluice/core/time.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <ratio>

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

using namespace std::chrono_literals;
using thirds = std::chrono::duration<std::int64_t, std::ratio<1, 3>>;
using picoseconds = std::chrono::duration<std::int64_t, std::pico>;

// Only integral durations whose every value is whole nanoseconds may be
// given where no error can be answered; any integral one goes to ticks_of.
static_assert(whole_ns_duration<std::chrono::nanoseconds> && whole_ns_duration<std::chrono::hours> &&
              whole_ns_duration<std::chrono::days> && whole_ns_duration<std::chrono::duration<int, std::milli>>);
static_assert(!whole_ns_duration<thirds> && !whole_ns_duration<picoseconds>);
static_assert(chrono_duration<thirds> && chrono_duration<picoseconds>);
static_assert(!chrono_duration<std::chrono::duration<double>> &&
              !chrono_duration<std::chrono::duration<float, std::milli>>);
static_assert(!chrono_duration<tick>);
static_assert(ticks_of(1500ms) == tick{1'500'000'000});

TEST(TicksOf, IsExactInNanoseconds) {
  EXPECT_EQ(ticks_of(1ns), 1);
  EXPECT_EQ(ticks_of(250us), 250'000);
  EXPECT_EQ(ticks_of(-2s), -2'000'000'000);
  EXPECT_EQ(ticks_of(std::chrono::hours{24}), 86'400'000'000'000);
  EXPECT_EQ(ticks_of(std::chrono::days{1}), 86'400'000'000'000);
  EXPECT_EQ(ticks_of(thirds{3}), 1'000'000'000);
  EXPECT_EQ(ticks_of(picoseconds{5000}), 5);
  EXPECT_EQ(ticks_of(std::chrono::duration<std::uint8_t, std::milli>{200}), 200'000'000);
  EXPECT_EQ(ticks_of(std::chrono::nanoseconds{max}), max);
  EXPECT_EQ(ticks_of(std::chrono::nanoseconds{min}), min);
}

TEST(TicksOf, RefusesWhatIsNotWholeNanosecondsOrPastInt64) {
  EXPECT_EQ(ticks_of(thirds{1}), std::nullopt);  // 333333333.33 ns
  EXPECT_EQ(ticks_of(picoseconds{1}), std::nullopt);
  EXPECT_EQ(ticks_of(picoseconds{-1500}), std::nullopt);
  EXPECT_EQ(ticks_of(std::chrono::seconds{max / 1'000'000'000 + 1}), std::nullopt);
  EXPECT_EQ(ticks_of(std::chrono::seconds{min / 1'000'000'000 - 1}), std::nullopt);
  EXPECT_EQ(ticks_of(std::chrono::hours{max}), std::nullopt);
  EXPECT_EQ(ticks_of(std::chrono::duration<std::uint64_t, std::nano>{std::uint64_t{1} << 63}), std::nullopt);
  EXPECT_EQ(ticks_of(std::chrono::duration<std::uint64_t, std::milli>{~std::uint64_t{0}}), std::nullopt);
}

TEST(ManualClock, AdvancesByAChronoDurationInNanoseconds) {
  manual_clock c;
  c.advance(600ms);
  EXPECT_EQ(c.now(), 600'000'000);
  c.advance(1ns);
  EXPECT_EQ(c.now(), 600'000'001);
  c.advance(-1s);
  EXPECT_EQ(c.now(), 600'000'001);
  c.advance(std::chrono::hours{max});  // past int64 nanoseconds: saturates
  EXPECT_EQ(c.now(), max);
}

TEST(SteadyClock, NeverGoesBackwards) {
  const tick a = steady_clock::now();
  const tick b = steady_clock::now();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace sluice::unit_time_test
