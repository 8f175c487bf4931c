// max_keys: the store never holds more keys than that; when a full shard
// meets a new admitted key it drops a fresh state if it finds one (lossless)
// and otherwise evicts the one nearest to fresh, counting it and the units
// it still held. Against the reference, synced only where the store evicted.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "keyed/keyed_support.hpp"

namespace sluice::keyed_evict_test {
namespace {

using namespace sluice::keyed_test;

testing::AssertionResult evicts_as_counted(std::uint64_t seed, std::uint64_t& evictions) {
  rng_t g(seed * 0x2545F4914F6CDD1DULL + 5);
  const drawn_policy dp = random_policy(g);
  keyed_options o;
  o.max_keys = 1 + g() % 8;
  o.shards = std::size_t{1} << (g() % 3);
  o.auto_purge = g() % 2 == 0;
  o.in_time_order = g() % 2 == 0;
  o.hash_seed = seed;
  keyed_limiter store(dp.policy, o);
  reference ref(dp.policy);
  any_state probe = ref.fresh();
  const std::int64_t fresh_room = decide(dp.policy, probe, 0, 0).remaining;
  std::uint64_t evicted = 0;
  std::uint64_t forgiven = 0;
  const auto trace = keyed_trace(dp.c, g, 200, 2 + g() % 30, /*back=*/false);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const trace_request& q = trace[i];
    const tick floor = floor_for(store, q.key);
    // States the store drops during this request are judged at `judge`.
    const tick judge = o.in_time_order ? std::max(q.now, store.horizon()) : store.horizon();
    const tick eff = judge;
    std::map<std::string, any_state> before = ref.all();
    const decision want = ref.decide_at(q.key, q.now, q.cost, floor);
    const decision got = store.try_acquire_at(q.key, q.now, q.cost);
    if (!(got == want))
      return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << ", max_keys " << o.max_keys
                                         << ") step " << i << ": got " << show(got) << ", want " << show(want);
    if (store.size() > o.max_keys)
      return testing::AssertionFailure() << "seed " << seed << ": " << store.size() << " keys held";
    for (auto& [key, st] : ref.all()) {
      if (key == q.key || st == ref.fresh() || store.state_of(key)) continue;
      // Dropped: lossless if fresh at eff, else an eviction of `before[key]`.
      if (!is_fresh(dp.policy, st, eff)) {
        ++evicted;
        any_state held = before.at(key);
        const std::int64_t room = decide(dp.policy, held, eff, 0).remaining;
        forgiven += room >= fresh_room ? 0 : static_cast<std::uint64_t>(fresh_room - room);
      }
      st = ref.fresh();
    }
    const keyed_stats s = store.stats();
    if (s.evicted != evicted || s.units_forgiven != forgiven)
      return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << ") step " << i << ": counted "
                                         << s.evicted << " evictions, " << s.units_forgiven << " units; the test saw "
                                         << evicted << ", " << forgiven;
  }
  evictions += evicted;
  return testing::AssertionSuccess();
}

TEST(KeyedEvict, NeverMoreThanMaxKeysAndEveryEvictionCounted) {
  std::uint64_t evictions = 0;
  for (std::uint64_t seed = 1; seed <= 500; ++seed) ASSERT_TRUE(evicts_as_counted(seed, evictions));
  EXPECT_GT(evictions, 1000U);
}

TEST(KeyedEvict, EvictsTheStateNearestToFresh) {
  // One shard of 3 keys, 1 unit per 100 ticks, burst 5: "old" spent 1 unit
  // long ago (fresh soonest), the others spent 5 units just now.
  keyed_limiter k(gcra::make({1, 100}, 5).value(), {.max_keys = 3, .shards = 1, .in_time_order = true, .hash_seed = 2});
  ASSERT_TRUE(k.try_acquire_at("old", 0).allowed);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(k.try_acquire_at("busy1", 50).allowed);
    ASSERT_TRUE(k.try_acquire_at("busy2", 50).allowed);
  }
  ASSERT_TRUE(k.try_acquire_at("new", 60).allowed);  // "old" is fresh at 100 only: evicted, 1 unit forgiven
  EXPECT_EQ(k.size(), 3U);
  EXPECT_FALSE(k.state_of("old").has_value());
  EXPECT_TRUE(k.state_of("busy1").has_value());
  EXPECT_TRUE(k.state_of("busy2").has_value());
  const keyed_stats s = k.stats();
  EXPECT_EQ(s.evicted, 1U);
  EXPECT_EQ(s.units_forgiven, 1U);
  EXPECT_EQ(s.purged, 0U);
  // A fresh state is dropped first, losslessly: at 200 "new" (spent at 60) is fresh.
  ASSERT_TRUE(k.try_acquire_at("newer", 200).allowed);
  EXPECT_EQ(k.stats().evicted, 1U);
  EXPECT_EQ(k.stats().purged, 1U);
}

TEST(KeyedEvict, DeniedNewKeysTakeNoRoom) {
  keyed_limiter k(gcra::make({1, 100}, 2).value(), {.max_keys = 1, .shards = 1, .hash_seed = 2});
  ASSERT_TRUE(k.try_acquire_at("a", 0).allowed);
  // Cost above the burst: denied `never` without storing anything or evicting "a".
  EXPECT_TRUE(k.try_acquire_at("b", 0, 3).never_allowed());
  EXPECT_EQ(k.stats().evicted, 0U);
  EXPECT_TRUE(k.state_of("a").has_value());
}

}  // namespace
}  // namespace sluice::keyed_evict_test
