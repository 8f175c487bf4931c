// live_limiter: reservations kept in order, cancelling (all back, held in
// place, or refunded once due), refunds of admits, peeks, and live
// reconfiguration. Explicit times throughout.
#include "sluice/core/live_limiter.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <variant>

#include "sluice/sluice.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_live_limiter_test {
namespace {

using test::N;

/// One token per 10 ticks, burst 1.
live_limiter<token_bucket, manual_clock> one_per_ten(const manual_clock& clock) {
  return live_limiter<token_bucket, manual_clock>(test::ok(token_bucket::make(rate{1, 10}, 1)), clock);
}

TEST(LiveLimiter, DecidesAsTheBareLimiterWithoutReservations) {
  manual_clock clock;
  auto live = one_per_ten(clock);
  limiter<token_bucket, manual_clock> bare(test::ok(token_bucket::make(rate{1, 10}, 1)), clock);
  for (const tick now : {0, 0, 5, 10, 12, 20, 40, 41}) {
    EXPECT_EQ(live.try_acquire_at(now), bare.try_acquire_at(now));
    EXPECT_TRUE(live.state() == bare.state());
  }
  clock.advance(50);
  EXPECT_EQ(live.try_acquire(), bare.try_acquire());
}

TEST(LiveLimiter, AReservationThatFitsNowIsAnAdmit) {
  manual_clock clock;
  auto lim = one_per_ten(clock);
  reservation r = lim.reserve_at(0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.at(), 0);
  EXPECT_EQ(r.delay_from(0), 0);
  EXPECT_EQ(r.cost(), 1);
  EXPECT_EQ(lim.pending(), 0u);
  EXPECT_FALSE(lim.try_acquire_at(0).allowed);
}

TEST(LiveLimiter, ReservesTheNextSlotAndKeepsItsPlaceInLine) {
  manual_clock clock;
  auto lim = one_per_ten(clock);
  ASSERT_TRUE(lim.try_acquire_at(0).allowed);
  reservation r1 = lim.reserve_at(0);
  reservation r2 = lim.reserve_at(0);
  reservation r3 = lim.reserve_at(3, 1);
  EXPECT_EQ(r1.at(), 10);
  EXPECT_EQ(r2.at(), 20);
  EXPECT_EQ(r3.at(), 30);
  EXPECT_EQ(r3.delay_from(3), 27);
  EXPECT_EQ(lim.pending(), 3u);
  // A request waits behind all three.
  const decision d = lim.try_acquire_at(5);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, 35);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(lim.next_allowed_at(5), 40);
  // Slots come due one by one and enter the state at their instants.
  EXPECT_FALSE(lim.try_acquire_at(25).allowed);
  EXPECT_EQ(lim.pending(), 1u);
  EXPECT_TRUE(lim.try_acquire_at(40).allowed);
  EXPECT_EQ(lim.pending(), 0u);
}

TEST(LiveLimiter, CancellingTheLastReservationGivesEverythingBack) {
  manual_clock clock;
  auto lim = one_per_ten(clock);
  ASSERT_TRUE(lim.try_acquire_at(0).allowed);
  reservation r1 = lim.reserve_at(0);
  reservation r2 = lim.reserve_at(0);
  EXPECT_EQ(lim.cancel_at(std::move(r2), 1), 1);
  EXPECT_EQ(lim.pending(), 1u);
  EXPECT_EQ(lim.next_allowed_at(1), 20);
  EXPECT_EQ(lim.cancel_at(std::move(r1), 1), 1);
  EXPECT_EQ(lim.pending(), 0u);
  EXPECT_EQ(lim.next_allowed_at(1), 10);          // as if neither had been made
  EXPECT_EQ(lim.cancel_at(std::move(r1), 1), 0);  // NOLINT(bugprone-use-after-move): used up
}

TEST(LiveLimiter, ACancelledReservationIsHeldInPlaceByTheOnesBehindIt) {
  manual_clock clock;
  auto lim = one_per_ten(clock);
  ASSERT_TRUE(lim.try_acquire_at(0).allowed);
  reservation r1 = lim.reserve_at(0);
  reservation r2 = lim.reserve_at(0);
  reservation r3 = lim.reserve_at(0);
  EXPECT_EQ(lim.cancel_at(std::move(r2), 1), 0);  // r3's slot at 30 counted on it
  EXPECT_EQ(lim.pending(), 3u);
  EXPECT_EQ(lim.next_allowed_at(1), 40);
  EXPECT_EQ(lim.cancel_at(std::move(r3), 1), 2);  // r3 and the r2 it held
  EXPECT_EQ(lim.pending(), 1u);
  EXPECT_EQ(lim.next_allowed_at(1), 20);
  (void)r1;
}

TEST(LiveLimiter, AHeldCancellationIsSpentIfTheOnesBehindItComeDue) {
  manual_clock clock;
  auto lim = one_per_ten(clock);
  ASSERT_TRUE(lim.try_acquire_at(0).allowed);
  reservation r1 = lim.reserve_at(0);
  reservation r2 = lim.reserve_at(0);
  EXPECT_EQ(lim.cancel_at(std::move(r1), 1), 0);
  EXPECT_FALSE(lim.try_acquire_at(20).allowed);  // r1's slot at 10 was still spent, then r2's
  EXPECT_EQ(lim.pending(), 0u);
  EXPECT_EQ(lim.next_allowed_at(20), 30);
  (void)r2;
}

TEST(LiveLimiter, CancellingAfterTheSlotRefundsByTheAlgorithmsRule) {
  manual_clock clock;
  auto lim = one_per_ten(clock);
  ASSERT_TRUE(lim.try_acquire_at(0).allowed);
  reservation r = lim.reserve_at(0);
  ASSERT_EQ(r.at(), 10);
  EXPECT_EQ(lim.next_allowed_at(12), 20);
  // Due at 10 and still the latest admit: the bucket goes back to before it.
  EXPECT_EQ(lim.cancel_at(std::move(r), 12), 1);
  EXPECT_EQ(lim.next_allowed_at(12), 12);
}

TEST(LiveLimiter, NotOkWhenNeverOrTooLate) {
  manual_clock clock;
  auto lim = one_per_ten(clock);
  reservation big = lim.reserve_at(0, 2);
  EXPECT_FALSE(big.ok());
  EXPECT_EQ(big.at(), N);
  EXPECT_EQ(big.cost(), 0);
  ASSERT_TRUE(lim.try_acquire_at(0).allowed);
  reservation late = lim.reserve_at(0, 1, 9);
  EXPECT_FALSE(late.ok());
  EXPECT_EQ(late.at(), 10);
  EXPECT_EQ(lim.pending(), 0u);
  EXPECT_EQ(lim.next_allowed_at(0), 10);
  EXPECT_EQ(lim.cancel_at(std::move(late), 0), 0);
  reservation just = lim.reserve_at(0, 1, 10);
  EXPECT_TRUE(just.ok());
}

TEST(LiveLimiter, AReservationOfAnotherLimiterCancelsNothing) {
  manual_clock clock;
  auto a = one_per_ten(clock);
  auto b = one_per_ten(clock);
  ASSERT_TRUE(a.try_acquire_at(0).allowed);
  ASSERT_TRUE(b.try_acquire_at(0).allowed);
  reservation r = a.reserve_at(0);
  EXPECT_EQ(b.cancel_at(std::move(r), 1), 0);
  EXPECT_EQ(a.pending(), 1u);
}

TEST(LiveLimiter, RefundsAdmitsButNotPastAPendingReservation) {
  manual_clock clock;
  auto lim = one_per_ten(clock);
  admission a = lim.admit_at(0);
  ASSERT_TRUE(a.result.allowed);
  reservation r = lim.reserve_at(0);
  ASSERT_EQ(r.at(), 10);
  EXPECT_EQ(lim.refund_at(std::move(a.ticket), 1), 0);
  EXPECT_FALSE(a.ticket.empty());  // left to try again
  EXPECT_EQ(lim.cancel_at(std::move(r), 1), 1);
  EXPECT_EQ(lim.refund_at(std::move(a.ticket), 1), 1);
  EXPECT_EQ(lim.next_allowed_at(1), 1);
  admission denied = lim.admit_at(1, 2);
  EXPECT_FALSE(denied.result.allowed);
  EXPECT_TRUE(denied.ticket.empty());
}

TEST(LiveLimiter, AFixedWindowReservationDoesNotOpenTheCurrentWindow) {
  // 9 of 10 used in [0, 60); 2 reserved for the next window. Nothing may
  // pass in [0, 60) on the reservation's account.
  manual_clock clock;
  live_limiter<fixed_window, manual_clock> lim(test::ok(fixed_window::make(rate{10, 60})), clock);
  ASSERT_TRUE(lim.try_acquire_at(55, 9).allowed);
  reservation r = lim.reserve_at(56, 2);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.at(), 60);
  EXPECT_EQ(lim.state().count, 9);  // not in the state until its slot
  const decision d = lim.try_acquire_at(57, 8);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, 3);
  EXPECT_TRUE(lim.try_acquire_at(60, 8).allowed);
  EXPECT_FALSE(lim.try_acquire_at(60, 1).allowed);
}

TEST(LiveLimiter, ReconfiguresOnlyWithNoReservationPending) {
  manual_clock clock;
  auto lim = one_per_ten(clock);
  ASSERT_TRUE(lim.try_acquire_at(0).allowed);
  reservation r = lim.reserve_at(0);
  const auto faster = test::ok(token_bucket::make(rate{1, 5}, 1));
  const auto refused = lim.reconfigure_at(faster, 1);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->field, "reservations");
  EXPECT_EQ(lim.policy().limit().window, 10);
  EXPECT_EQ(lim.cancel_at(std::move(r), 1), 1);
  EXPECT_FALSE(lim.reconfigure_at(faster, 1).has_value());
  EXPECT_EQ(lim.policy().limit().window, 5);
  EXPECT_EQ(lim.next_allowed_at(1), 6);  // a deficit of 0.9 token at 0.2 per tick: 4.5, rounded up
}

TEST(LiveLimiter, OnAnyPolicyComposites) {
  manual_clock clock;
  const any_policy tb = test::ok(token_bucket::make(rate{1, 10}, 1));
  const any_policy q = test::ok(quota::make(3));
  live_limiter<any_policy, manual_clock> lim(any_policy{test::ok(all_of::make({tb, q}))}, clock);
  reservation r1 = lim.reserve_at(0);
  reservation r2 = lim.reserve_at(0);
  reservation r3 = lim.reserve_at(0);
  reservation r4 = lim.reserve_at(0);
  EXPECT_EQ(r1.at(), 0);
  EXPECT_EQ(r2.at(), 10);
  EXPECT_EQ(r3.at(), 20);
  EXPECT_FALSE(r4.ok());  // the quota is promised away
  EXPECT_EQ(lim.cancel_at(std::move(r3), 0), 1);
  reservation r5 = lim.reserve_at(0);
  EXPECT_EQ(r5.at(), 20);
  // A reconfiguration of another algorithm is refused and changes nothing.
  EXPECT_EQ(lim.cancel_at(std::move(r5), 0), 1);
  EXPECT_EQ(lim.cancel_at(std::move(r2), 0), 1);
  const auto bad = lim.reconfigure_at(q, 0);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->field, "algorithm");
  (void)r1;
}

}  // namespace
}  // namespace sluice::unit_live_limiter_test
