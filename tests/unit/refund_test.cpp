// Receipts and refunds, algorithm by algorithm, with explicit times: what
// each rule gives back, what it refuses, and the state it leaves (checked
// through next_allowed_at, the limiter's own answer).
#include "sluice/core/refund.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <variant>
#include <vector>

#include "sluice/sluice.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_refund_test {
namespace {

using test::N;

/// Admits and returns the receipt; fails the test if it is denied.
template <typename Policy, typename State>
receipt take(const Policy& p, State& s, tick now, std::int64_t cost) {
  admission a = admit(p, s, now, cost);
  EXPECT_TRUE(a.result.allowed) << "admit at " << now << " of " << cost;
  return std::move(a.ticket);
}

TEST(Admit, DecidesExactlyAsDecide) {
  const auto p = test::ok(token_bucket::make(rate{1, 10}, 2));
  token_bucket::state a;
  token_bucket::state b;
  for (const tick now : {0, 0, 0, 5, 10, 10, 31}) {
    const decision want = decide(p, b, now, 1);
    admission got = admit(p, a, now, 1);
    EXPECT_EQ(got.result, want);
    EXPECT_TRUE(a == b);
    EXPECT_EQ(got.ticket.empty(), !want.allowed);
    if (want.allowed) {
      EXPECT_EQ(got.ticket.cost(), 1);
      EXPECT_EQ(got.ticket.at(), now);
      EXPECT_EQ(got.ticket.algo(), algorithm::token_bucket);
    }
  }
}

TEST(Receipt, IsUsedUpByMovingAndByRefund) {
  const auto p = test::ok(quota::make(5));
  quota::state s;
  receipt r = take(p, s, 0, 3);
  receipt moved = std::move(r);
  EXPECT_TRUE(r.empty());  // NOLINT(bugprone-use-after-move): moving leaves it empty by design
  EXPECT_EQ(refund(p, s, std::move(r), 0), 0);
  EXPECT_EQ(refund(p, s, std::move(moved), 0), 3);
  EXPECT_TRUE(moved.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(refund(p, s, std::move(moved), 0), 0);
  EXPECT_EQ(s.used, 0);
}

TEST(Receipt, FromAnotherPolicyRefundsNothing) {
  const auto p = test::ok(fixed_window::make(rate{3, 10}));
  const auto other = test::ok(fixed_window::make(rate{4, 10}));
  fixed_window::state s;
  receipt r = take(p, s, 1, 2);
  EXPECT_EQ(refund(other, s, std::move(r), 1), 0);
  EXPECT_EQ(s.count, 2);
}

TEST(Refund, FixedWindowOnlyWithinTheSameWindow) {
  const auto p = test::ok(fixed_window::make(rate{3, 10}));
  fixed_window::state s;
  receipt r1 = take(p, s, 1, 2);
  receipt r2 = take(p, s, 2, 1);
  EXPECT_EQ(next_allowed_at(p, s, 3, 2), 10);
  EXPECT_EQ(refund(p, s, std::move(r1), 3), 2);
  EXPECT_EQ(next_allowed_at(p, s, 3, 2), 3);
  // r2's window is over once another window has been counted.
  receipt r3 = take(p, s, 12, 3);
  EXPECT_EQ(refund(p, s, std::move(r2), 12), 0);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(refund(p, s, std::move(r3), 19), 3);
  EXPECT_EQ(next_allowed_at(p, s, 19, 3), 19);
}

TEST(Refund, SlidingLogRemovesTheEntry) {
  const auto p = test::ok(sliding_log::make(rate{2, 10}));
  sliding_log::state s;
  receipt r1 = take(p, s, 3, 1);
  receipt r2 = take(p, s, 4, 1);
  EXPECT_EQ(next_allowed_at(p, s, 5, 1), 13);
  EXPECT_EQ(refund(p, s, std::move(r1), 5), 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.at(0), (sliding_log::entry{4, 1}));
  EXPECT_EQ(next_allowed_at(p, s, 5, 1), 5);
  EXPECT_EQ(next_allowed_at(p, s, 5, 2), 14);
  EXPECT_EQ(refund(p, s, std::move(r2), 5), 1);
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(next_allowed_at(p, s, 5, 2), 5);
}

TEST(Refund, SlidingLogTakesUnitsOutOfAMergedEntry) {
  const auto p = test::ok(sliding_log::make(rate{3, 10}));
  sliding_log::state s;
  receipt a = take(p, s, 3, 1);
  receipt b = take(p, s, 3, 2);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(refund(p, s, std::move(b), 4), 2);
  EXPECT_EQ(s.at(0), (sliding_log::entry{3, 1}));
  EXPECT_EQ(s.units(), 1);
}

TEST(Refund, SlidingLogNothingOnceTheEntryHasGone) {
  const auto p = test::ok(sliding_log::make(rate{1, 10}));
  sliding_log::state s;
  receipt r = take(p, s, 3, 1);
  receipt later = take(p, s, 20, 1);  // prunes the entry at 3
  EXPECT_EQ(refund(p, s, std::move(r), 20), 0);
  EXPECT_EQ(s.units(), 1);
}

TEST(Refund, SlidingCounterFromCurrOrPrev) {
  const auto p = test::ok(sliding_counter::make(rate{4, 10}));
  sliding_counter::state s;
  receipt r1 = take(p, s, 3, 2);
  receipt r2 = take(p, s, 4, 1);
  EXPECT_EQ(refund(p, s, std::move(r2), 5), 1);  // from curr
  EXPECT_EQ(s.curr, 2);
  receipt r3 = take(p, s, 12, 1);  // window 1: prev = 2, curr = 1
  EXPECT_EQ(s.prev, 2);
  EXPECT_EQ(refund(p, s, std::move(r1), 12), 2);  // from prev
  EXPECT_EQ(s.prev, 0);
  EXPECT_EQ(s.curr, 1);
  EXPECT_EQ(next_allowed_at(p, s, 12, 3), 12);
}

TEST(Refund, SlidingBucketsFromItsSubWindowWhileTheRingHoldsIt) {
  // L = 3 per 10 ticks in 5 sub-windows of 2.
  const auto p = test::ok(sliding_buckets::make(rate{3, 10}, 5));
  sliding_buckets::state s;
  receipt r1 = take(p, s, 3, 2);  // sub-window 1
  receipt r2 = take(p, s, 6, 1);  // sub-window 3: full
  EXPECT_EQ(next_allowed_at(p, s, 6, 1), 12);
  EXPECT_EQ(refund(p, s, std::move(r1), 7), 2);
  EXPECT_EQ(s.total(), 1);
  EXPECT_EQ(s.counts()[1], 0);
  EXPECT_EQ(next_allowed_at(p, s, 7, 2), 7);  // as if the 2 units at 3 had never been admitted
  EXPECT_EQ(next_allowed_at(p, s, 7, 3), 16);
  // A receipt whose sub-window has left the ring gives nothing back.
  receipt r3 = take(p, s, 17, 1);  // sub-window 8: sub-window 3 (r2) is out of 4 … 8
  EXPECT_EQ(s.newest(), 8);
  EXPECT_EQ(refund(p, s, std::move(r2), 17), 0);
  EXPECT_EQ(s.total(), 1);
  EXPECT_EQ(refund(p, s, std::move(r3), 17), 1);
  EXPECT_EQ(s.total(), 0);
  EXPECT_TRUE(s == sliding_buckets::state{});
}

TEST(Refund, TokenBucketLatestAdmitGoesBackExactly) {
  // S = 3, one token per 10 ticks.
  const auto p = test::ok(token_bucket::make(rate{1, 10}, 3));
  token_bucket::state s;
  receipt r = take(p, s, 0, 2);
  EXPECT_EQ(refund(p, s, std::move(r), 5), 2);
  EXPECT_EQ(s.spent, 0);  // full again (the latest instant seen stays)
  EXPECT_EQ(next_allowed_at(p, s, 5, 3), 5);
}

TEST(Refund, TokenBucketLessWhatRefilledBeforeTheLatestAdmit) {
  const auto p = test::ok(token_bucket::make(rate{1, 10}, 3));
  token_bucket::state s;
  receipt r1 = take(p, s, 0, 1);  // 2 tokens left
  receipt r2 = take(p, s, 0, 2);  // 0 left
  // r1 is not the latest, but the latest is at the same instant: all of it.
  EXPECT_EQ(refund(p, s, std::move(r1), 0), 1);
  EXPECT_EQ(next_allowed_at(p, s, 0, 1), 0);
  EXPECT_EQ(next_allowed_at(p, s, 0, 2), 10);
  (void)r2;
}

TEST(Refund, TokenBucketHalfATokenWhenHalfWasRefilled) {
  const auto p = test::ok(token_bucket::make(rate{1, 10}, 3));
  token_bucket::state s;
  receipt r1 = take(p, s, 0, 3);   // empty at 0
  receipt r2 = take(p, s, 10, 1);  // one token refilled by 10, taken: empty at 10
  EXPECT_EQ(next_allowed_at(p, s, 10, 1), 20);
  // 10 ticks refilled a token between r1 and the latest admit: give back
  // 3 − 1 = 2 tokens.
  EXPECT_EQ(refund(p, s, std::move(r1), 10), 2);
  EXPECT_EQ(next_allowed_at(p, s, 10, 2), 10);
  EXPECT_EQ(next_allowed_at(p, s, 10, 3), 20);
  // Half a token: r3 at 15, then refund r2 (c·W − L·(15 − 10) = 5).
  receipt r3 = take(p, s, 15, 2);                 // 2.5 tokens at 15, 0.5 left
  EXPECT_EQ(refund(p, s, std::move(r2), 15), 0);  // half a token is not a whole unit...
  EXPECT_EQ(next_allowed_at(p, s, 15, 1), 15);    // ...but it is back: 1 token now
  (void)r3;
}

TEST(Refund, TokenBucketNothingOnceItHasRefilledPastTheLatestAdmit) {
  const auto p = test::ok(token_bucket::make(rate{1, 10}, 3));
  token_bucket::state s;
  receipt r1 = take(p, s, 0, 1);
  receipt r2 = take(p, s, 20, 1);
  const token_bucket::state before = s;
  EXPECT_EQ(refund(p, s, std::move(r1), 20), 0);
  EXPECT_TRUE(s == before);
  (void)r2;
}

TEST(Refund, GcraSameRuleAsTheTokenBucket) {
  const auto tp = test::ok(token_bucket::make(rate{1, 10}, 3));
  const auto gp = test::ok(gcra::make(rate{1, 10}, 3));
  token_bucket::state ts;
  gcra::state gs;
  receipt t1 = take(tp, ts, 0, 3);
  receipt g1 = take(gp, gs, 0, 3);
  receipt t2 = take(tp, ts, 10, 1);
  receipt g2 = take(gp, gs, 10, 1);
  EXPECT_EQ(refund(tp, ts, std::move(t1), 10), refund(gp, gs, std::move(g1), 10));
  for (tick now = 10; now < 40; ++now)
    for (std::int64_t c = 1; c <= 3; ++c) EXPECT_EQ(next_allowed_at(tp, ts, now, c), next_allowed_at(gp, gs, now, c));
  EXPECT_EQ(refund(tp, ts, std::move(t2), 12), refund(gp, gs, std::move(g2), 12));
  for (tick now = 12; now < 40; ++now)
    for (std::int64_t c = 1; c <= 3; ++c) EXPECT_EQ(next_allowed_at(tp, ts, now, c), next_allowed_at(gp, gs, now, c));
}

TEST(Refund, LeakyQueueOnlyTheLastAndOnlyUnitsNotYetGone) {
  // One unit per 10 ticks, Q = 3.
  const auto p = test::ok(leaky_queue::make(rate{1, 10}, 3));
  leaky_queue::state s;
  receipt r1 = take(p, s, 0, 1);                 // leaves at 0
  receipt r2 = take(p, s, 0, 1);                 // leaves at 10
  EXPECT_EQ(refund(p, s, std::move(r1), 0), 0);  // not the last in the queue
  EXPECT_EQ(refund(p, s, std::move(r2), 0), 1);
  EXPECT_EQ(next_allowed_at(p, s, 0, 2), 0);  // only the unit at 0 is left
  leaky_queue::state t;
  receipt r3 = take(p, t, 0, 3);                 // units leave at 0, 10, 20
  EXPECT_EQ(refund(p, t, std::move(r3), 5), 2);  // 10 and 20 come back, 0 has gone
  EXPECT_EQ(next_allowed_at(p, t, 5, 3), 5);
  const decision d = decide(p, t, 5, 1);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.release_after, 5);  // spaced from the unit at 0: leaves at 10
  leaky_queue::state u;
  receipt r4 = take(p, u, 0, 1);
  EXPECT_EQ(refund(p, u, std::move(r4), 0), 0);  // leaving now: too late
}

TEST(Refund, QuotaGivesBackTheUnits) {
  const auto p = test::ok(quota::make(5));
  quota::state s;
  receipt r = take(p, s, 0, 3);
  (void)take(p, s, 0, 2).cost();
  EXPECT_EQ(next_allowed_at(p, s, 0, 1), N);
  EXPECT_EQ(refund(p, s, std::move(r), 100), 3);
  EXPECT_EQ(next_allowed_at(p, s, 100, 3), 100);
}

TEST(Refund, AlwaysAllowAndDenyHaveNothingToGive) {
  always_allow::state s;
  receipt r = take(always_allow{}, s, 0, 3);
  EXPECT_EQ(refund(always_allow{}, s, std::move(r), 0), 0);
}

TEST(Refund, AllOfEveryPartAndTheFewestUnitsReported) {
  const any_policy fw = test::ok(fixed_window::make(rate{2, 10}));
  const any_policy q = test::ok(quota::make(5));
  const any_policy sb = test::ok(sliding_buckets::make(rate{5, 10}, 5));
  const auto p = test::ok(all_of::make({fw, q}));
  auto s = std::get<all_of_state>(fresh_state(any_policy{p}));
  receipt r = take(p, s, 1, 2);
  EXPECT_EQ(next_allowed_at(p, s, 2, 1), 10);
  EXPECT_EQ(refund(p, s, std::move(r), 2), 2);
  EXPECT_EQ(next_allowed_at(p, s, 2, 2), 2);
  EXPECT_EQ(std::get<quota::state>(s.parts[1]).used, 0);
  // With a part that has nothing to give back, the others still do.
  const auto p2 = test::ok(all_of::make({q, sb, any_policy{always_allow{}}}));
  auto s2 = std::get<all_of_state>(fresh_state(any_policy{p2}));
  receipt r2 = take(p2, s2, 1, 2);
  EXPECT_EQ(refund(p2, s2, std::move(r2), 1), 0);
  EXPECT_EQ(std::get<quota::state>(s2.parts[0]).used, 0);
  EXPECT_EQ(std::get<sliding_buckets::state>(s2.parts[1]).total(), 0);
}

TEST(Refund, AnyOfThePartThatConsumed) {
  const any_policy q = test::ok(quota::make(1));
  const any_policy fw = test::ok(fixed_window::make(rate{2, 10}));
  const auto p = test::ok(any_of::make({q, fw}));
  auto s = std::get<any_of_state>(fresh_state(any_policy{p}));
  receipt to_quota = take(p, s, 0, 1);
  receipt to_window = take(p, s, 0, 1);
  EXPECT_EQ(refund(p, s, std::move(to_window), 0), 1);
  EXPECT_EQ(std::get<fixed_window::state>(s.parts[1]).count, 0);
  EXPECT_EQ(std::get<quota::state>(s.parts[0]).used, 1);
  EXPECT_EQ(refund(p, s, std::move(to_quota), 0), 1);
  EXPECT_EQ(std::get<quota::state>(s.parts[0]).used, 0);
}

TEST(Refund, NestedCompositesThroughAnyPolicy) {
  const any_policy q = test::ok(quota::make(1));
  const any_policy fw = test::ok(fixed_window::make(rate{2, 10}));
  const any_policy inner = test::ok(any_of::make({q, fw}));
  const any_policy p = test::ok(all_of::make({inner, any_policy{test::ok(quota::make(10))}}));
  any_state s = fresh_state(p);
  receipt a = take(p, s, 0, 1);  // inner: quota
  receipt b = take(p, s, 0, 1);  // inner: window
  EXPECT_EQ(refund(p, s, std::move(b), 0), 1);
  const auto& outer = std::get<all_of_state>(s);
  EXPECT_EQ(std::get<fixed_window::state>(std::get<any_of_state>(outer.parts[0]).parts[1]).count, 0);
  EXPECT_EQ(std::get<quota::state>(outer.parts[1]).used, 1);
  // A receipt of another algorithm refunds nothing.
  EXPECT_EQ(refund(q, s, std::move(a), 0), 0);
}

TEST(Refund, NothingAfterAReconfiguration) {
  const auto p = test::ok(fixed_window::make(rate{3, 10}));
  const auto p2 = test::ok(fixed_window::make(rate{5, 10}));
  fixed_window::state s;
  receipt r = take(p, s, 1, 2);
  s = reconfigure(p, s, p2, 2);
  EXPECT_EQ(refund(p2, s, std::move(r), 2), 0);
  EXPECT_EQ(s.count, 2);
}

}  // namespace
}  // namespace sluice::unit_refund_test
