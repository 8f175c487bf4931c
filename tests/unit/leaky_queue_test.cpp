// Leaky bucket as a queue: explicit-time tables worked out by hand from
// semantics.md. Units leave one every W/L ticks; R is the release time of the
// last admitted unit scaled by L; in_bucket = floor((R − now·L)/W) + 1 (0 if
// R < now·L); admit iff in_bucket + c ≤ Q, then R = max(now·L, R + W) +
// (c − 1)·W and release_after = ceil(R/L) − now.
//
// reset_after is the time until the state is fresh again, i.e. until a new
// unit would be released on arrival: R + W ≤ t·L. That is later than the
// moment the queue empties (R < t·L) whenever W > L.
// The tables are laid out by hand, one row a line:
// clang-format off
#include "sluice/core/leaky_queue.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "unit/rows.hpp"

namespace sluice::unit_leaky_queue_test {
namespace {

using test::N;
using test::row;

constexpr std::int64_t big = std::int64_t{1} << 62;

static_assert(std::is_trivially_copyable_v<leaky_queue::state>);

// Q = 15, one unit per second (ms ticks): 20 requests at once, 15 admitted,
// released at 0 s, 1 s, ... 14 s.
TEST(LeakyQueue, FifteenOfTwentyInstantRequests) {
  const auto p = test::ok(leaky_queue::make(rate{1, 1000}, 15));
  leaky_queue::state s;
  std::vector<row> rows;
  for (std::int64_t i = 1; i <= 15; ++i) rows.push_back(row{0, 1, true, 15 - i, 0, i * 1000, (i - 1) * 1000});
  // Full: the unit released at 0 still counts at 0, and is gone at 1.
  for (int i = 0; i < 5; ++i) rows.push_back(row{0, 1, false, 0, 1, 15000, 0});
  rows.push_back(row{1, 1, true, 0, 0, 15999, 14999});  // released 1 s after the 15th
  test::play(p, s, rows);
}

// L = 2 per W = 5 ticks (a unit every 2.5 ticks), Q = 3. R is in half ticks;
// the comments give the release instants of the units still queued.
TEST(LeakyQueue, SmallTable) {
  const auto p = test::ok(leaky_queue::make(rate{2, 5}, 3));
  test::play(p, {
                    row{0, 1, true, 2, 0, 3, 0},      // {0}
                    row{0, 2, true, 0, 0, 8, 5},      // {0, 2.5, 5}
                    row{1, 1, true, 0, 0, 9, 7},      // {2.5, 5, 7.5}
                    row{2, 1, false, 0, 1, 8, 0},     // 2.5 leaves by 3
                    row{2, 4, false, 0, N, 8, 0},     // cost above Q
                    row{3, 2, false, 1, 3, 7, 0},     // {5, 7.5}: room for 2 at 6
                    row{3, 1, true, 0, 0, 10, 7},     // {5, 7.5, 10}
                    row{0, 1, false, 0, 6, 13, 0},    // clock back: read as 3
                    row{6, 1, true, 0, 0, 9, 7},      // {7.5, 10, 12.5}
                    row{13, 0, false, 3, N, 2, 0},    // empty, but a new unit would wait until 15
                    row{13, 1, true, 2, 0, 5, 2},     // {15}
                    row{20, 3, true, 0, 0, 8, 5},     // fresh again: {20, 22.5, 25}
                    row{20, 1, false, 0, 1, 8, 0},
                    row{21, 1, true, 0, 0, 9, 7},     // {22.5, 25, 27.5}
                    row{21, 3, false, 0, 7, 9, 0},    // empty after 27.5: at 28
                    row{28, 3, true, 0, 0, 10, 7},    // {30, 32.5, 35}: spaced from 27.5
                    row{100, -1, false, 3, N, 0, 0},
                });
}

// A unit released at 0 leaves at 0; one admitted at 1 is still released at
// 1000, one interval later. The state is not fresh before 1000 and must say
// so: a store that dropped it at reset_after would release the second unit
// at once. It used to report the moment the queue emptied (1).
TEST(LeakyQueue, ResetAfterWaitsForTheSpacingNotJustTheEmptyQueue) {
  const auto p = test::ok(leaky_queue::make(rate{1, 1000}, 5));
  leaky_queue::state s;
  const decision first = decide(p, s, 0, 1);
  EXPECT_EQ(first.release_after, 0);
  EXPECT_EQ(first.reset_after, 1000);
  const decision idle = decide(p, s, 1, 0);
  EXPECT_EQ(idle.remaining, 5);  // empty queue
  EXPECT_EQ(idle.reset_after, 999);
  const decision second = decide(p, s, 1, 1);
  EXPECT_EQ(second.release_after, 999);
}

TEST(LeakyQueue, ZeroLimitDeniesEverythingNever) {
  const auto p = test::ok(leaky_queue::make(rate{0, 10}, 4));
  test::play(p, {
                    row{0, 1, false, 0, N, 0, 0},
                    row{100, 4, false, 0, N, 0, 0},
                    row{std::numeric_limits<tick>::max(), 1, false, 0, N, 0, 0},
                });
}

TEST(LeakyQueue, ReleasePastTheEndOfTimeIsNever) {
  const tick max = std::numeric_limits<tick>::max();
  const auto p = test::ok(leaky_queue::make(rate{1, big}, 2));  // one unit per 2^62 ticks
  leaky_queue::state s;
  const decision a = decide(p, s, max - 1, 1);
  EXPECT_TRUE(a.allowed);
  EXPECT_EQ(a.release_after, 0);
  const decision b = decide(p, s, max - 1, 1);  // released 2^62 ticks later: past the end
  EXPECT_TRUE(b.allowed);
  EXPECT_EQ(b.release_after, never);
  const decision c = decide(p, s, max - 1, 1);  // full; the first unit leaves at max
  EXPECT_FALSE(c.allowed);
  EXPECT_EQ(c.retry_after, 1);
  const decision d = decide(p, s, max, 1);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.release_after, never);
  const decision e = decide(p, s, max, 1);  // room only after b's unit leaves, past the end
  EXPECT_FALSE(e.allowed);
  EXPECT_EQ(e.retry_after, never);
  EXPECT_EQ(e.reset_after, never);
}

TEST(LeakyQueue, RefusesBadConfigurationNamingTheField) {
  EXPECT_EQ(test::field_of(leaky_queue::make(rate{-1, 10}, 1)), "limit");
  EXPECT_EQ(test::field_of(leaky_queue::make(rate{1, 0}, 1)), "window");
  EXPECT_EQ(test::field_of(leaky_queue::make(rate{1, 10}, 0)), "queue");
  EXPECT_EQ(test::field_of(leaky_queue::make(rate{1, 10}, -1)), "queue");
  EXPECT_EQ(test::field_of(leaky_queue::make(rate{1, 10}, big + 1)), "queue");
}

}  // namespace
}  // namespace sluice::unit_leaky_queue_test
