// The keyed store against the reference (one core state per key, never
// dropped), on random policies (every algorithm and composites) and random
// traces whose clock steps back: the decisions are equal bit for bit, with
// and without purging — explicit purges, incremental steps and the sweeps a
// growing shard makes — so purging is lossless: a held key decides on its
// own state at its own now, a key without a state at its shard's drop bound
// (the traces purge at instants behind and ahead of them, so requests do
// come stamped before a drop). Every state the store holds equals the
// reference's; every state it dropped was fresh at its drop bound.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "keyed/keyed_support.hpp"
#include "sluice/core/limiter.hpp"

namespace sluice::keyed_purge_test {
namespace {

using namespace sluice::keyed_test;

struct run_counts {
  std::size_t requests = 0;
  std::size_t purged = 0;
  std::size_t clamped = 0;  // requests on a key without a state, stamped before its drop bound
};

testing::AssertionResult agrees(std::uint64_t seed, bool purging, run_counts& counts) {
  rng_t g(seed * 0x9E3779B97F4A7C15ULL + 17);
  const drawn_policy dp = random_policy(g);
  const std::size_t key_count = std::size_t{1} << (g() % 7);  // 1 … 64 keys
  keyed_options o;
  o.shards = std::size_t{1} << (g() % 3);
  o.auto_purge = purging && g() % 2 == 0;
  o.in_time_order = g() % 2 == 0;
  o.hash_seed = seed;
  keyed_limiter store(dp.policy, o);
  reference ref(dp.policy);
  const auto trace = keyed_trace(dp.c, g, 300, key_count, /*back=*/true);
  // A state the store drops must be fresh at its shard's drop bound; the
  // key then has no state (semantics.md, "Keys"), so the reference forgets
  // it too. Checked after every call, so the bound read is the drop's own or
  // a later one of the same call.
  std::string bad_drop;
  std::uint64_t drops_seen = 0;
  auto note_drops = [&] {
    if (store.stats().purged == drops_seen) return;
    drops_seen = store.stats().purged;
    for (auto& [key, st] : ref.all()) {
      if (st == ref.fresh() || store.state_of(key)) continue;
      if (!is_fresh(dp.policy, st, store.drop_bound(key)) && bad_drop.empty()) bad_drop = key;
      st = ref.fresh();
    }
  };
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const trace_request& q = trace[i];
    if (purging && g() % 100 < 8) {
      // A purge at some instant near the trace's (behind, at or ahead of it).
      const tick w = std::min<tick>(dp.c.r.window, detail::i64_max / 4);
      const tick p = model::saturating_add(q.now, model::uniform(g, -(w / 2) * 3, 3 * w));
      counts.purged += g() % 2 == 0 ? store.purge(p, 1 + g() % 8) : store.purge_step(p, 1 + g() % 40);
    }
    note_drops();
    const tick floor = floor_for(store, q.key);
    if (q.now < floor) ++counts.clamped;
    const decision want = ref.decide_at(q.key, q.now, q.cost, floor);
    const decision got = store.try_acquire_at(q.key, q.now, q.cost);
    ++counts.requests;
    note_drops();
    if (!(got == want))
      return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << ", " << key_count
                                         << " keys, shards " << o.shards << ", auto_purge " << o.auto_purge
                                         << ", in_time_order " << o.in_time_order << ") step " << i << " key " << q.key
                                         << " now=" << q.now << " cost=" << q.cost << " floor=" << floor << ": got "
                                         << show(got) << ", want " << show(want);
    if (!bad_drop.empty())
      return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << ") step " << i << ": " << bad_drop
                                         << " was dropped while not fresh at its drop bound";
    const auto held = store.state_of(q.key);
    const any_state& mine = ref.state(q.key);
    if (held ? !(*held == mine) : !(mine == ref.fresh()))
      return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << ") step " << i
                                         << ": the state of " << q.key << " differs from the reference's";
  }
  if (store.stats().evicted != 0) return testing::AssertionFailure() << "seed " << seed << ": evicted without max_keys";
  return testing::AssertionSuccess();
}

TEST(KeyedPurge, WithoutPurgingEqualsOneCoreStatePerKey) {
  run_counts c;
  for (std::uint64_t seed = 1; seed <= 400; ++seed) ASSERT_TRUE(agrees(seed, false, c));
  EXPECT_EQ(c.purged, 0U);
}

TEST(KeyedPurge, PurgingChangesNoDecision) {
  run_counts c;
  for (std::uint64_t seed = 1; seed <= 1500; ++seed) ASSERT_TRUE(agrees(seed, true, c));
  // The traces did purge, and did put requests behind a drop bound.
  EXPECT_GT(c.purged, 2000U);
  EXPECT_GT(c.clamped, 500U);
}

TEST(KeyedPurge, PurgeStepsKeepRotatingKeysNearTheKeysInUse) {
  // Rotating keys, each used once a window: a purge step at each request's
  // time keeps the store near the keys in use; without it, it keeps them
  // all. A growing shard's own sweep drops fresh states too (in time order)
  // but never holds its growth back (keyed_churn_test.cpp).
  const any_policy p = gcra::make({1, 1000}, 1).value();
  keyed_limiter stepping(p, {.shards = 1, .auto_purge = false, .hash_seed = 3});
  keyed_limiter sweeping(p, {.shards = 1, .in_time_order = true, .hash_seed = 3});
  keyed_limiter keeping(p, {.shards = 1, .auto_purge = false, .hash_seed = 3});
  for (int i = 0; i < 20000; ++i) {
    const std::string key = "user:" + std::to_string(i);
    ASSERT_TRUE(stepping.try_acquire_at(key, i * 10).allowed);
    (void)stepping.purge_step(i * 10, 4);
    ASSERT_TRUE(sweeping.try_acquire_at(key, i * 10).allowed);
    ASSERT_TRUE(keeping.try_acquire_at(key, i * 10).allowed);
  }
  // A key admitted at t is fresh from t + 1000 on: at 200000, the 99 keys
  // admitted after 199000 are not; everything else may go.
  EXPECT_LT(stepping.size(), 1000U);
  EXPECT_GT(stepping.stats().purged, 19000U);
  EXPECT_GT(sweeping.stats().purged, 0U);
  EXPECT_EQ(sweeping.size() + sweeping.stats().purged, 20000U);
  EXPECT_EQ(keeping.size(), 20000U);
  EXPECT_EQ(keeping.purge(200000), 19901U);
  EXPECT_EQ(keeping.size(), 99U);
  EXPECT_EQ(keeping.stats().purged, 19901U);
}

TEST(KeyedPurge, ADroppedKeyIsReadAsAtTheDrop) {
  keyed_limiter k(token_bucket::make({1, 100}, 2).value(), {.shards = 1, .hash_seed = 1});
  ASSERT_TRUE(k.try_acquire_at("a", 1000).allowed);
  EXPECT_EQ(k.purge(1200), 1U);  // full again at 1100
  EXPECT_EQ(k.drop_bound("a"), 1200);
  EXPECT_EQ(k.horizon(), 1200);
  // A request stamped before the purge is read as at 1200; its durations
  // still count from its own now (200 more than at 1200).
  const decision d = k.try_acquire_at("a", 1000, 2);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.reset_after, 200 + 200);
  EXPECT_FALSE(k.try_acquire_at("a", 1000).allowed);
}

TEST(KeyedPurge, AHeldKeyNeverReadsTheDropBound) {
  // The old store read every key as at least its latest purge: a key held
  // through a purge had its time moved by other keys' drops.
  keyed_limiter k(token_bucket::make({1, 100}, 2).value(), {.shards = 1, .hash_seed = 1});
  ASSERT_TRUE(k.try_acquire_at("idle", 1000).allowed);
  ASSERT_TRUE(k.try_acquire_at("busy", 1150, 2).allowed);  // empty until 1350
  EXPECT_EQ(k.purge(1200), 1U);                            // drops "idle" only
  limiter<token_bucket> busy(token_bucket::make({1, 100}, 2).value());
  ASSERT_TRUE(busy.try_acquire_at(1150, 2).allowed);
  // Stamped before the purge, on the held key: its own state at its own now.
  EXPECT_EQ(k.try_acquire_at("busy", 1160), busy.try_acquire_at(1160));
  EXPECT_EQ(k.try_acquire_at("busy", 1250), busy.try_acquire_at(1250));
}

}  // namespace
}  // namespace sluice::keyed_purge_test
