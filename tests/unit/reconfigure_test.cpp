// Live reconfiguration, algorithm by algorithm, with explicit times: the new
// state is checked through next_allowed_at under the new policy (when the
// client may go next), the answer that matters to it.
#include "sluice/core/reconfigure.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "sluice/core/detail/log_rebuild.hpp"
#include "sluice/sluice.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_reconfigure_test {
namespace {

using test::N;

token_bucket tb(std::int64_t l, tick w, std::int64_t s) { return test::ok(token_bucket::make(rate{l, w}, s)); }
gcra gc(std::int64_t l, tick w, std::int64_t s) { return test::ok(gcra::make(rate{l, w}, s)); }

template <typename Policy, typename State>
void take(const Policy& p, State& s, tick now, std::int64_t cost) {
  ASSERT_TRUE(decide(p, s, now, cost).allowed) << "admit at " << now << " of " << cost;
}

TEST(Reconfigure, TokenBucketKeepsTheDeficitWhenTheCapacityGrows) {
  const auto from = tb(1, 10, 4);
  const auto to = tb(1, 10, 8);
  token_bucket::state s;
  take(from, s, 0, 3);  // deficit 3
  const auto n = reconfigure(from, s, to, 0);
  EXPECT_EQ(next_allowed_at(to, n, 0, 5), 0);
  EXPECT_EQ(next_allowed_at(to, n, 0, 6), 10);
}

TEST(Reconfigure, TokenBucketOwesWhatItUsedPastANewSmallerCapacity) {
  const auto from = tb(1, 10, 4);
  const auto to = tb(1, 10, 2);
  token_bucket::state s;
  take(from, s, 0, 3);  // deficit 3 > S_new = 2: one token of debt
  const auto n = reconfigure(from, s, to, 0);
  EXPECT_EQ(next_allowed_at(to, n, 0, 1), 20);
  EXPECT_EQ(next_allowed_at(to, n, 0, 2), 30);
}

TEST(Reconfigure, TokenBucketNeverMoreTokensWhenTheRateDrops) {
  const auto from = tb(1, 10, 4);
  // Slower and bigger: a full bucket keeps its 4 tokens, not 8 (the one case
  // where fresh does not map to fresh; see reconfigure.hpp).
  const auto n = reconfigure(from, token_bucket::state{}, tb(1, 20, 8), 0);
  EXPECT_EQ(next_allowed_at(tb(1, 20, 8), n, 0, 4), 0);
  EXPECT_EQ(next_allowed_at(tb(1, 20, 8), n, 0, 5), 20);
  // Slower, same size: the deficit, as always.
  token_bucket::state s;
  take(from, s, 0, 1);
  const auto m = reconfigure(from, s, tb(1, 20, 4), 0);
  EXPECT_EQ(next_allowed_at(tb(1, 20, 4), m, 0, 3), 0);
  EXPECT_EQ(next_allowed_at(tb(1, 20, 4), m, 0, 4), 20);
}

TEST(Reconfigure, TokenBucketAThrottledClientStaysThrottled) {
  const auto from = tb(1, 10, 4);
  const auto to = tb(1, 5, 4);  // twice the rate
  token_bucket::state s;
  take(from, s, 0, 4);
  const auto n = reconfigure(from, s, to, 0);
  EXPECT_FALSE(n == token_bucket::state{});
  EXPECT_EQ(next_allowed_at(to, n, 0, 1), 5);
  EXPECT_EQ(next_allowed_at(to, n, 0, 4), 20);
}

TEST(Reconfigure, TokenBucketRescalesToANewWindow) {
  // 1 per 10 ticks is 2 per 20: the same rate, tokens in 1/20 now.
  const auto from = tb(1, 10, 4);
  const auto to = tb(2, 20, 4);
  token_bucket::state s;
  take(from, s, 0, 2);
  const auto n = reconfigure(from, s, to, 3);  // 2.3 tokens at 3
  EXPECT_EQ(next_allowed_at(to, n, 3, 2), 3);
  EXPECT_EQ(next_allowed_at(to, n, 3, 3), 10);
}

TEST(Reconfigure, TokenBucketFreshStaysFresh) {
  EXPECT_TRUE(reconfigure(tb(1, 10, 4), token_bucket::state{}, tb(5, 10, 2), 7) == token_bucket::state{});
  EXPECT_TRUE(reconfigure(tb(1, 10, 4), token_bucket::state{}, tb(5, 10, 9), 7) == token_bucket::state{});
}

TEST(Reconfigure, GcraAnswersAsTheTokenBucket) {
  const auto cases = {std::pair{4, 8}, std::pair{4, 2}, std::pair{4, 4}};
  for (const auto& [s0, s1] : cases) {
    for (const tick w1 : {5, 10, 20, 30}) {
      const auto tf = tb(1, 10, s0);
      const auto tt = tb(1, w1, s1);
      const auto gf = gc(1, 10, s0);
      const auto gt = gc(1, w1, s1);
      token_bucket::state ts;
      gcra::state gs;
      take(tf, ts, 0, 3);
      take(gf, gs, 0, 3);
      const auto tn = reconfigure(tf, ts, tt, 4);
      const auto gn = reconfigure(gf, gs, gt, 4);
      for (tick now = 4; now < 120; now += 3)
        for (std::int64_t c = 1; c <= s1; ++c)
          EXPECT_EQ(next_allowed_at(tt, tn, now, c), next_allowed_at(gt, gn, now, c))
              << "S " << s0 << "→" << s1 << " W→" << w1 << " now " << now << " cost " << c;
    }
  }
}

TEST(Reconfigure, ZeroRateAndBack) {
  // To L = 0 nothing passes; back again, the deficit is still owed.
  const auto from = tb(1, 10, 4);
  const auto off = tb(0, 10, 4);
  token_bucket::state s;
  take(from, s, 0, 4);
  const auto o = reconfigure(from, s, off, 5);
  EXPECT_EQ(next_allowed_at(off, o, 100, 1), N);
  const auto back = reconfigure(off, o, from, 100);
  EXPECT_EQ(next_allowed_at(from, back, 100, 1), 105);  // half a token at 5, no refill while off
  const auto gfrom = gc(1, 10, 4);
  const auto goff = gc(0, 10, 4);
  gcra::state g;
  take(gfrom, g, 0, 4);
  const auto go = reconfigure(gfrom, g, goff, 5);
  EXPECT_EQ(next_allowed_at(goff, go, 100, 1), N);
  EXPECT_EQ(next_allowed_at(gfrom, reconfigure(goff, go, gfrom, 100), 100, 1), 105);
}

TEST(Reconfigure, FixedWindowKeepsTheCount) {
  const auto from = test::ok(fixed_window::make(rate{3, 10}));
  fixed_window::state s;
  take(from, s, 2, 3);
  // A higher limit: the current window has room for the difference.
  const auto up = test::ok(fixed_window::make(rate{5, 10}));
  const auto n = reconfigure(from, s, up, 4);
  EXPECT_EQ(next_allowed_at(up, n, 4, 2), 4);
  EXPECT_EQ(next_allowed_at(up, n, 4, 3), 10);
  // A lower one: over the limit until the window ends.
  const auto down = test::ok(fixed_window::make(rate{2, 10}));
  EXPECT_EQ(next_allowed_at(down, reconfigure(from, s, down, 4), 4, 1), 10);
  // A longer window that contains the old one carries the count over.
  const auto longer = test::ok(fixed_window::make(rate{4, 30}));
  EXPECT_EQ(next_allowed_at(longer, reconfigure(from, s, longer, 4), 4, 1), 4);
  EXPECT_EQ(next_allowed_at(longer, reconfigure(from, s, longer, 4), 4, 2), 30);
  // A shorter window that overlaps it: the units may be anywhere in it.
  const auto shorter = test::ok(fixed_window::make(rate{3, 5}));
  EXPECT_EQ(next_allowed_at(shorter, reconfigure(from, s, shorter, 7), 7, 1), 10);
  // A count from a window that is over is fresh.
  EXPECT_TRUE(reconfigure(from, s, up, 10) == fixed_window::state{});
}

TEST(Reconfigure, SlidingLogReWindowsTheEntries) {
  const auto from = test::ok(sliding_log::make(rate{2, 10}));
  sliding_log::state s;
  take(from, s, 3, 1);
  take(from, s, 8, 1);
  const auto shorter = test::ok(sliding_log::make(rate{2, 5}));
  const auto a = reconfigure(from, s, shorter, 9);
  EXPECT_EQ(a.units(), 1);  // the unit at 3 is out of a 5-tick window
  EXPECT_EQ(next_allowed_at(shorter, a, 9, 2), 13);
  const auto longer = test::ok(sliding_log::make(rate{2, 20}));
  const auto b = reconfigure(from, s, longer, 9);
  EXPECT_EQ(b.units(), 2);
  EXPECT_EQ(next_allowed_at(longer, b, 9, 1), 23);
  // Entries already out of the old window are not charged.
  const auto c = reconfigure(from, s, longer, 14);
  EXPECT_EQ(c.units(), 1);
  EXPECT_TRUE(reconfigure(from, s, longer, 18) == sliding_log::state{});
}

/// Decisions of `p` on copies of `a` and `b` (peeks of every cost up to
/// L + 1 at every tick of [from, to)): equal at every one.
template <typename Policy, typename State>
void decide_alike(const Policy& p, const State& a, const State& b, tick from, tick to) {
  for (tick t = from; t < to; ++t)
    for (std::int64_t c = 1; c <= p.limit().limit + 1; ++c) {
      State x = a;
      State y = b;
      ASSERT_EQ(decide(p, x, t, c), decide(p, y, t, c)) << "at " << t << " cost " << c;
    }
}

TEST(Reconfigure, ALowerSlidingLogKeepsOnlyTheUnitsThatCanChangeADecision) {
  // The conservative carry (semantics.md, "Reconfiguration"): 8 units, one
  // entry of 4, under a limit of 3 keep at most 2·3 − 1, each entry at most
  // 3; every decision is the whole log's. (Kept whole before: a Redis store
  // could not hold it, and refused to revoke a raised limit.)
  const auto from = test::ok(sliding_log::make(rate{10, 100}));
  sliding_log::state s;
  take(from, s, 1, 4);
  for (tick t = 2; t <= 5; ++t) take(from, s, t, 1);
  const auto to = test::ok(sliding_log::make(rate{3, 100}));
  const auto kept = reconfigure(from, s, to, 6);
  EXPECT_LE(kept.units(), 5);
  for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_LE(kept.at(i).units, 3);
  std::vector<sliding_log::entry> all;
  for (std::size_t i = 0; i < s.size(); ++i) all.push_back(s.at(i));
  decide_alike(to, kept, detail::rebuild_log(100, all), 6, 220);
  // A limit of 0 admits nothing whatever it counts: none kept.
  EXPECT_TRUE(reconfigure(from, s, test::ok(sliding_log::make(rate{0, 100})), 6) == sliding_log::state{});
}

TEST(Reconfigure, ALowerSlidingBucketsKeepsOnlyTheUnitsThatCanChangeADecision) {
  const auto from = test::ok(sliding_buckets::make(rate{10, 100}, 10));
  sliding_buckets::state s;
  take(from, s, 5, 4);   // sub-window 0
  take(from, s, 25, 3);  // sub-window 2
  take(from, s, 45, 2);  // sub-window 4
  const auto to = test::ok(sliding_buckets::make(rate{3, 100}, 10));
  const auto kept = reconfigure(from, s, to, 46);
  EXPECT_LE(kept.total(), 5);
  for (const std::int64_t c : kept.counts()) EXPECT_LE(c, 3);
  decide_alike(to, kept, s, 46, 260);
}

TEST(Reconfigure, SlidingCounterChargesOverlappingWindows) {
  const auto from = test::ok(sliding_counter::make(rate{4, 10}));
  sliding_counter::state s;
  take(from, s, 5, 1);   // window 0
  take(from, s, 12, 2);  // window 1: prev 1, curr 2
  const auto longer = test::ok(sliding_counter::make(rate{4, 20}));
  const auto n = reconfigure(from, s, longer, 15);
  EXPECT_EQ(n.window, 0);
  EXPECT_EQ(n.prev, 0);
  EXPECT_EQ(n.curr, 3);
  EXPECT_EQ(next_allowed_at(longer, n, 15, 1), 15);
  EXPECT_EQ(next_allowed_at(longer, n, 15, 2), 27);  // 3·(20 − o)/20 + 2 ≤ 4 from o = 7
  // The same window: unchanged.
  const auto higher = test::ok(sliding_counter::make(rate{8, 10}));
  EXPECT_TRUE(reconfigure(from, s, higher, 15) == s);
  EXPECT_TRUE(reconfigure(from, s, longer, 30) == sliding_counter::state{});
}

TEST(Reconfigure, SlidingBucketsKeepsOnlyForANewLimit) {
  const auto from = test::ok(sliding_buckets::make(rate{3, 10}, 5));
  sliding_buckets::state s;
  take(from, s, 1, 1);  // sub-window 0
  take(from, s, 5, 2);  // sub-window 2
  const auto higher = test::ok(sliding_buckets::make(rate{4, 10}, 5));
  EXPECT_TRUE(reconfigure(from, s, higher, 6) == s);
  EXPECT_EQ(next_allowed_at(higher, reconfigure(from, s, higher, 6), 6, 2), 10);
  // Other sub-windows: all 3 units charged to the latest old sub-window (4–5).
  const auto finer = test::ok(sliding_buckets::make(rate{3, 10}, 10));
  const auto n = reconfigure(from, s, finer, 6);
  EXPECT_EQ(n.total(), 3);
  EXPECT_EQ(next_allowed_at(finer, n, 6, 1), 15);
  EXPECT_TRUE(reconfigure(from, s, finer, 20) == sliding_buckets::state{});
}

TEST(Reconfigure, LeakyQueueKeepsTheLastReleaseTime) {
  const auto from = test::ok(leaky_queue::make(rate{1, 10}, 3));
  leaky_queue::state s;
  take(from, s, 0, 2);  // units leave at 0 and 10
  // Twice as fast: new units follow the unit at 10, 5 ticks apart.
  const auto faster = test::ok(leaky_queue::make(rate{1, 5}, 3));
  const auto roomier = test::ok(leaky_queue::make(rate{1, 5}, 4));
  auto n = reconfigure(from, s, roomier, 0);
  const decision d = decide(roomier, n, 0, 1);
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(d.release_after, 15);
  // The queue bound counts the wait in new slots: 10 ticks are 2 slots + 1.
  EXPECT_EQ(next_allowed_at(faster, reconfigure(from, s, faster, 0), 0, 1), 1);
  // The same rate written as 2 per 20 keeps the instant too.
  const auto scaled = test::ok(leaky_queue::make(rate{2, 20}, 3));
  auto m = reconfigure(from, s, scaled, 0);
  EXPECT_EQ(decide(scaled, m, 0, 1).release_after, 20);
  // Off and back: the release time survives L = 0.
  const auto off = test::ok(leaky_queue::make(rate{0, 10}, 3));
  const auto o = reconfigure(from, s, off, 0);
  auto back = reconfigure(off, o, from, 0);
  EXPECT_EQ(decide(from, back, 0, 1).release_after, 20);
  // Fresh under the old policy is fresh.
  EXPECT_TRUE(reconfigure(from, s, faster, 20) == leaky_queue::state{});
}

TEST(Reconfigure, QuotaKeepsWhatWasUsed) {
  const auto from = test::ok(quota::make(10));
  quota::state s;
  take(from, s, 0, 6);
  const auto less = test::ok(quota::make(5));
  EXPECT_EQ(next_allowed_at(less, reconfigure(from, s, less, 0), 0, 1), N);
  const auto more = test::ok(quota::make(20));
  EXPECT_EQ(next_allowed_at(more, reconfigure(from, s, more, 0), 0, 14), 0);
}

TEST(Reconfigure, CompositesPartByPart) {
  const any_policy a = tb(1, 10, 2);
  const any_policy b = test::ok(quota::make(5));
  const auto from = test::ok(all_of::make({a, b}));
  auto s = std::get<all_of_state>(fresh_state(any_policy{from}));
  take(from, s, 0, 2);
  const auto to = test::ok(all_of::make({any_policy{tb(1, 10, 4)}, any_policy{test::ok(quota::make(3))}}));
  const auto n = reconfigure(from, s, to, 0);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(next_allowed_at(to, n.value(), 0, 1), 0);
  EXPECT_EQ(next_allowed_at(to, n.value(), 0, 2), N);  // the quota has 1 left
  const auto wrong = test::ok(all_of::make({a}));
  EXPECT_EQ(test::field_of(reconfigure(from, s, wrong, 0)), "parts");
  const auto kinds = test::ok(all_of::make({b, a}));
  EXPECT_EQ(test::field_of(reconfigure(from, s, kinds, 0)), "parts");
}

TEST(Reconfigure, AnyPolicyOfTheSameAlgorithmOnly) {
  const any_policy from = tb(1, 10, 2);
  const any_policy to = tb(2, 10, 2);
  const any_policy other = gc(1, 10, 2);
  any_state s = fresh_state(from);
  take(from, s, 0, 2);
  const auto n = reconfigure(from, s, to, 0);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(next_allowed_at(to, n.value(), 0, 1), 5);
  const auto bad = reconfigure(from, s, other, 0);
  EXPECT_EQ(test::field_of(bad), "algorithm");
}

}  // namespace
}  // namespace sluice::unit_reconfigure_test
