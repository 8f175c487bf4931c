// next_allowed_at: the earliest instant ≥ now at which a request would pass,
// without taking anything. Tables worked out by hand from semantics.md: each
// row builds a state by admits, then asks for one (now, cost).
#include "sluice/core/schedule.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "sluice/sluice.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_schedule_test {
namespace {

using test::N;

struct ask {
  tick now;
  std::int64_t cost;
  tick expected;
};

struct admit_at {
  tick now;
  std::int64_t cost;
};

/// Admits `history` (each must be allowed), then checks every ask and that
/// asking took nothing.
template <typename Policy>
void check(const Policy& p, const std::vector<admit_at>& history, const std::vector<ask>& asks) {
  auto s = detail::fresh_state_of(p);
  for (const admit_at& a : history) ASSERT_TRUE(decide(p, s, a.now, a.cost).allowed) << "history admit at " << a.now;
  const auto before = s;
  for (const ask& q : asks) {
    SCOPED_TRACE("now=" + std::to_string(q.now) + " cost=" + std::to_string(q.cost));
    EXPECT_EQ(next_allowed_at(p, s, q.now, q.cost), q.expected);
  }
  EXPECT_TRUE(s == before);
}

TEST(NextAllowedAt, TokenBucketWaitsForEachToken) {
  // 1 token per 10 ticks, burst 2, emptied at 0.
  const auto p = test::ok(token_bucket::make(rate{1, 10}, 2));
  check(p, {{0, 1}, {0, 1}},
        {{0, 1, 10}, {0, 2, 20}, {5, 1, 10}, {10, 1, 10}, {25, 2, 25}, {0, 3, N}, {0, 0, N}, {0, -1, N}});
}

TEST(NextAllowedAt, GcraAnswersAsTheTokenBucket) {
  const auto p = test::ok(gcra::make(rate{1, 10}, 2));
  check(p, {{0, 1}, {0, 1}}, {{0, 1, 10}, {0, 2, 20}, {5, 1, 10}, {10, 1, 10}, {25, 2, 25}, {0, 3, N}});
}

TEST(NextAllowedAt, FixedWindowWaitsForTheNextWindow) {
  const auto p = test::ok(fixed_window::make(rate{2, 10}));
  check(p, {{3, 1}, {4, 1}}, {{5, 1, 10}, {9, 2, 10}, {12, 2, 12}, {5, 3, N}});
}

TEST(NextAllowedAt, SlidingLogWaitsForTheOldestUnitsToLeave) {
  // Units at 3 and 4 leave the window (now − 10, now] at 13 and 14.
  const auto p = test::ok(sliding_log::make(rate{2, 10}));
  check(p, {{3, 1}, {4, 1}}, {{5, 1, 13}, {5, 2, 14}, {13, 1, 13}, {20, 2, 20}});
}

TEST(NextAllowedAt, SlidingCounterWaitsForTheWeightToFall) {
  // curr = 2 in window 0; in window 1 the estimate is 2·(10 − o)/10 + c.
  const auto p = test::ok(sliding_counter::make(rate{2, 10}));
  check(p, {{3, 1}, {4, 1}}, {{5, 1, 15}, {5, 2, 20}, {17, 1, 17}});
}

TEST(NextAllowedAt, SlidingBucketsWaitsForSubWindowsToLeave) {
  // Sub-windows of 2 ticks: units in sub-windows 1 and 2 leave at 12 and 14.
  const auto p = test::ok(sliding_buckets::make(rate{2, 10}, 5));
  check(p, {{3, 1}, {4, 1}}, {{5, 1, 12}, {5, 2, 14}, {13, 1, 13}});
}

TEST(NextAllowedAt, LeakyQueueWaitsForRoomInTheQueue) {
  // One unit per 10 ticks, Q = 2: units leave at 0 and 10; the one at 0 is
  // still counted at 0.
  const auto p = test::ok(leaky_queue::make(rate{1, 10}, 2));
  check(p, {{0, 1}, {0, 1}}, {{0, 1, 1}, {0, 2, 11}, {3, 1, 3}, {0, 3, N}});
}

TEST(NextAllowedAt, QuotaIsNowOrNever) {
  const auto p = test::ok(quota::make(3));
  check(p, {{0, 2}}, {{0, 1, 0}, {7, 1, 7}, {0, 2, N}});
}

TEST(NextAllowedAt, AlwaysAllowAndAlwaysDeny) {
  check(always_allow{}, {}, {{5, 1, 5}, {5, 0, N}});
  check(always_deny{}, {}, {{5, 1, N}});
}

TEST(NextAllowedAt, ZeroLimitIsNever) {
  check(test::ok(token_bucket::make(rate{0, 10}, 1)), {}, {{0, 1, N}});
  check(test::ok(fixed_window::make(rate{0, 10})), {}, {{0, 1, N}});
}

TEST(NextAllowedAt, AllOfIsTheLatestOfItsParts) {
  const auto tb = any_policy{test::ok(token_bucket::make(rate{1, 10}, 2))};
  const auto fw = any_policy{test::ok(fixed_window::make(rate{2, 30}))};
  const auto p = test::ok(all_of::make({tb, fw}));
  // Token bucket: next token at 10; fixed window [0, 30) full after 2.
  check(p, {{0, 1}, {0, 1}}, {{0, 1, 30}, {30, 2, 30}, {31, 2, 31}, {0, 3, N}});
}

TEST(NextAllowedAt, AnyOfIsTheEarliestOfItsParts) {
  const auto tb = any_policy{test::ok(token_bucket::make(rate{1, 10}, 1))};
  const auto fw = any_policy{test::ok(fixed_window::make(rate{1, 30}))};
  const auto p = test::ok(any_of::make({tb, fw}));
  // Admits go to the bucket first, then to the window.
  check(p, {{0, 1}, {0, 1}}, {{0, 1, 10}, {12, 1, 12}, {0, 2, N}});
  // A part that can never take the cost does not hide one that can.
  const auto p2 = test::ok(any_of::make({any_policy{always_deny{}}, fw}));
  check(p2, {{0, 1}}, {{1, 1, 30}});
}

TEST(NextAllowedAt, AnyPolicyAndAClockThatSteppedBack) {
  const any_policy p = test::ok(token_bucket::make(rate{1, 10}, 1));
  // Admitted at 100; asked at 50 (clock back): read as 100, next token at 110.
  check(p, {{100, 1}}, {{50, 1, 110}, {105, 1, 110}});
  // Allowed at a stepped-back instant: the answer is the caller's now.
  check(p, {{100, 1}}, {{50, 1, 110}});
  const auto fresh_after = test::ok(token_bucket::make(rate{1, 10}, 2));
  check(fresh_after, {{100, 1}}, {{50, 1, 50}});
}

TEST(NextAllowedAt, PastTheEndOfTimeIsNever) {
  constexpr tick end = std::numeric_limits<tick>::max();
  const auto p = test::ok(fixed_window::make(rate{1, std::int64_t{1} << 62}));
  check(p, {{end - 5, 1}}, {{end - 5, 1, N}});
}

TEST(NextAllowedAt, OnALimiterTakesNothing) {
  manual_clock clock;
  limiter<gcra, manual_clock> l(test::ok(gcra::make(rate{1, 10}, 1)), clock);
  EXPECT_EQ(next_allowed_at(l, 0), 0);
  EXPECT_TRUE(l.try_acquire_at(0).allowed);
  EXPECT_EQ(next_allowed_at(l, 0), 10);
  EXPECT_EQ(next_allowed_at(l, 3, 1), 10);
  EXPECT_EQ(next_allowed_at(l, 3, 2), N);
  EXPECT_FALSE(l.try_acquire_at(9).allowed);
  EXPECT_TRUE(l.try_acquire_at(10).allowed);
}

TEST(AdmittedAt, SaturatesAtNever) {
  decision d;
  d.retry_after = 10;
  EXPECT_EQ(admitted_at(d, 5), 15);
  EXPECT_EQ(admitted_at(d, N - 5), N);
  d.allowed = true;
  EXPECT_EQ(admitted_at(d, 5), 5);
  d.allowed = false;
  d.retry_after = N;
  EXPECT_EQ(admitted_at(d, 5), N);
}

}  // namespace
}  // namespace sluice::unit_schedule_test
