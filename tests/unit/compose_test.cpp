// all_of and any_of: the figures of a composite read on its parts' states
// after the decision (semantics.md, "Composition"), the part that decided,
// and a cost linear in the number of parts however deep they nest.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/detail/all_of_fold.hpp"
#include "sluice/core/fresh.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_compose_test {
namespace {

using test::ok;

constexpr tick s = 1'000'000'000;  // ticks are nanoseconds here
constexpr tick ms = s / 1000;

/// A decision with every field, `part` included.
decision answer(bool allowed, std::int64_t remaining, tick retry_after, tick reset_after, std::int32_t part,
                tick release_after = 0) {
  decision d;
  d.allowed = allowed;
  d.remaining = remaining;
  d.retry_after = retry_after;
  d.reset_after = reset_after;
  d.release_after = release_after;
  d.part = part;
  return d;
}

template <typename Composite>
typename Composite::state fresh(const Composite& p) {
  return detail::fresh_state_of(p);
}

// The first example: `all(fixed-window 3/10s, gcra 1/1s burst=5)`,
// costs 1, 3, 2 at 0. The cost 3 is denied by the fixed window while GCRA
// would have admitted it; GCRA must report its room as it is (4), not as if
// it had consumed (1), so remaining is 2, and the cost 2 after it passes.
TEST(Compose, AllOfDenialReadsEveryPartAsItIs) {
  const all_of p = ok(all_of::make({ok(fixed_window::make({3, 10 * s})), ok(gcra::make({1, s}, 5))}));
  all_of_state st = fresh(p);
  EXPECT_EQ(decide(p, st, 0, 1), answer(true, 2, 0, 10 * s, 0));
  const all_of_state before = st;
  EXPECT_EQ(decide(p, st, 0, 3), answer(false, 2, 10 * s, 10 * s, 0));
  EXPECT_EQ(st, before);
  EXPECT_EQ(decide(p, st, 0, 2), answer(true, 0, 0, 10 * s, 0));
}

// The second example: `any(fixed-window 1/1s, gcra 1/10s)` at 0.9 s.
// The fixed window admits (remaining 0, fresh in 0.1 s); GCRA, untouched,
// still has its one unit and is fresh: remaining 1, reset_after 0.1 s.
TEST(Compose, AnyOfAdmitReadsTheOtherPartsAsTheyAre) {
  const any_of p = ok(any_of::make({ok(fixed_window::make({1, s})), ok(gcra::make({1, 10 * s}, 1))}));
  any_of_state st = fresh(p);
  EXPECT_EQ(decide(p, st, 900 * ms, 1), answer(true, 1, 0, 100 * ms, 0));
  // The next goes to GCRA: nothing left anywhere until the window turns.
  EXPECT_EQ(decide(p, st, 900 * ms, 1), answer(true, 0, 0, 10 * s, 1));
  EXPECT_EQ(decide(p, st, 900 * ms, 1), answer(false, 0, 100 * ms, 10 * s, 0));
}

// A denied any_of: every part as it is; the wait is the shortest.
TEST(Compose, AnyOfDenialIsTheLargestRoomAndTheShortestWait) {
  const any_of p = ok(any_of::make({ok(token_bucket::make({1, 4 * s}, 2)), ok(fixed_window::make({3, 10 * s}))}));
  any_of_state st = fresh(p);
  // Cost 3 fits only the window; then cost 3 fits nowhere: the bucket has
  // 2 (remaining 2, full: fresh), the window 0.
  EXPECT_EQ(decide(p, st, 0, 3), answer(true, 2, 0, 10 * s, 1));
  EXPECT_EQ(decide(p, st, 0, 3), answer(false, 2, 10 * s, 10 * s, 1));
}

// release_after: on an admit the largest of the parts' (all_of) or the
// consuming part's (any_of); a denial has none.
TEST(Compose, ReleaseAfterOnlyOnAnAdmit) {
  const all_of a = ok(all_of::make({ok(leaky_queue::make({1, s}, 2)), ok(quota::make(2))}));
  all_of_state st = fresh(a);
  EXPECT_EQ(decide(a, st, 0, 1), answer(true, 1, 0, never, 0, 0));
  EXPECT_EQ(decide(a, st, 0, 1), answer(true, 0, 0, never, 0, s));
  const decision d = decide(a, st, 0, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.release_after, 0);

  const any_of o = ok(any_of::make({ok(quota::make(1)), ok(leaky_queue::make({1, s}, 2))}));
  any_of_state os = fresh(o);
  EXPECT_EQ(decide(o, os, 0, 1), answer(true, 2, 0, never, 0, 0));  // the quota: no queue
  EXPECT_EQ(decide(o, os, 0, 1), answer(true, 1, 0, never, 1, 0));  // the queue: leaves now
  EXPECT_EQ(decide(o, os, 0, 1), answer(true, 0, 0, never, 1, s));  // leaves in 1 s
  EXPECT_EQ(decide(o, os, 0, 1).release_after, 0);
}

/// `depth` levels of composites around one GCRA 1/1s burst 1: all(...)
/// throughout, or any and all in turn.
any_policy nest(int depth, bool mixed) {
  any_policy p = ok(gcra::make({1, s}, 1));
  for (int i = 0; i < depth; ++i) {
    if (mixed && i % 2 == 1) {
      p = ok(any_of::make({std::move(p), any_policy{always_deny{}}}));
    } else {
      p = ok(all_of::make({std::move(p), any_policy{always_allow{}}}));
    }
  }
  return p;
}

// 32 levels (the policy expressions' limit) decide as the GCRA they hold, in
// time linear in the depth: 20,000 decisions take milliseconds (deciding
// each part twice per level, as before, took 2^32 steps per decision).
TEST(Compose, ThirtyTwoDeepDecidesAsItsGcraAndFast) {
  for (const bool mixed : {false, true}) {
    SCOPED_TRACE(mixed ? "any and all in turn" : "all throughout");
    const any_policy p = nest(32, mixed);
    any_state st = fresh_state(p);
    const gcra g = ok(gcra::make({1, s}, 1));
    gcra::state gs{};
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 20'000; ++i) {
      const tick now = static_cast<tick>(i) * (s / 2);
      const decision d = decide(p, st, now, 1);
      const decision want = decide(g, gs, now, 1);
      ASSERT_EQ(d.allowed, want.allowed) << "request " << i;
      ASSERT_EQ(d.remaining, want.remaining) << "request " << i;
      ASSERT_EQ(d.retry_after, want.retry_after) << "request " << i;
      ASSERT_EQ(d.reset_after, want.reset_after) << "request " << i;
    }
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_LT(took, std::chrono::seconds(2));  // loose: milliseconds are expected, even under sanitizers
    EXPECT_TRUE(is_fresh(p, st, 20'000 * (s / 2)));
  }
}

// peek answers as decide and changes nothing, for a composite over a
// sliding log (whose ring it reads in place).
TEST(Compose, PeekIsDecideWithoutTheChange) {
  const any_policy p =
      ok(all_of::make({ok(sliding_log::make({3, 10})),
                       any_policy{ok(any_of::make({ok(quota::make(2)), ok(sliding_buckets::make({2, 10}, 5))}))}}));
  any_state st = fresh_state(p);
  for (tick t = 0; t < 40; t += 3) {
    const any_state before = st;
    const decision peeked = peek(p, st, t, 1);
    EXPECT_EQ(st, before);
    EXPECT_EQ(decide(p, st, t, 1), peeked) << "t=" << t;
  }
}

// The core's all_of (compose.cpp keeps a fused copy of the rule, for speed)
// and the stores' fold (sluice/detail/all_of_fold.hpp, over each check's own
// decision) give one answer, field for field, on random plain parts with
// random histories, admitting and denying.
TEST(ComposeFold, SameRuleAsTheStoresFold) {
  std::uint64_t seed = 0x9e3779b97f4a7c15ULL;
  const auto next = [&seed](std::uint64_t n) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed % n;
  };
  int denied = 0, admitted = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<any_policy> parts;
    const std::size_t n = 1 + next(4);
    for (std::size_t i = 0; i < n; ++i) {
      const auto q = static_cast<std::int64_t>(1 + next(5));
      const tick w = static_cast<tick>(1 + next(10)) * s;
      switch (next(4)) {
        case 0:
          parts.emplace_back(ok(fixed_window::make({q, w})));
          break;
        case 1:
          parts.emplace_back(ok(gcra::make({q, w}, q)));
          break;
        case 2:
          parts.emplace_back(ok(token_bucket::make({q, w}, q)));
          break;
        default:
          parts.emplace_back(ok(quota::make(q)));
          break;
      }
    }
    std::vector<any_state> states;
    tick now = 0;
    for (const auto& p : parts) {
      any_state st = fresh_state(p);
      for (std::uint64_t k = next(6); k > 0; --k) (void)decide(p, st, static_cast<tick>(next(3)) * s, 1);
      states.push_back(st);
    }
    now = static_cast<tick>(next(4)) * s;
    const auto cost = static_cast<std::int64_t>(1 + next(3));
    const any_policy whole{ok(all_of::make(parts))};
    any_state ws{all_of_state{states}};
    const decision core = peek(whole, ws, now, cost);
    std::vector<decision> trial;
    bool all = true;
    for (std::size_t i = 0; i < n; ++i) {
      trial.push_back(peek(parts[i], states[i], now, cost));
      all = all && trial.back().allowed;
    }
    detail::all_of_fold fold;
    if (!all) fold.mark_denied();
    for (std::size_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::int32_t>(i);
      if (all) {
        fold.admit(k, trial[i]);
        continue;
      }
      if (trial[i].allowed) {  // reports its state as it is (a decision of cost 0)
        any_state copy = states[i];
        const decision u = decide(parts[i], copy, now, 0);
        fold.as_is(u.remaining, u.reset_after);
      } else {
        fold.as_is(trial[i].remaining, trial[i].reset_after);
        fold.deny(k, trial[i]);
      }
    }
    ASSERT_EQ(core, fold.result()) << "round " << round;
    (core.allowed ? admitted : denied) += 1;
  }
  EXPECT_GT(admitted, 200);
  EXPECT_GT(denied, 200);
}

}  // namespace
}  // namespace sluice::unit_compose_test
