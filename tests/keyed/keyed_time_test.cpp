// Whose time a keyed store judges by (semantics.md, "Keys"): one key's
// traffic never changes another key's decision. Each key here has a clock
// of its own — some far in the future, some stepping back behind their own
// latest admits — and the keys' requests are interleaved; the store purges
// at instants its owner promises (behind every later request), explicitly
// and through the sweeps of growing shards. Every decision must be the one
// an independent model gives: one core state per key, never purged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "keyed/keyed_support.hpp"
#include "sluice/core/limiter.hpp"

namespace sluice::keyed_time_test {
namespace {

using namespace sluice::keyed_test;

constexpr tick fifty_years = 50LL * 365 * 24 * 3600 * 1'000'000'000;

TEST(KeyedTime, AClientFarInTheFutureMovesNoOtherKey) {
  // The report: with clients choosing their times, requests on fresh keys
  // decades ahead made the growing shards sweep at that time; the store then
  // read every key at it, gave an exhausted key a fresh burst, and locked
  // every key out for decades.
  const auto p = gcra::make({10, 1'000'000'000}, 2).value();  // 10 per second, burst 2
  keyed_limiter store(p, {.shards = 4, .hash_seed = 5});
  limiter<gcra> exhausted(p);
  limiter<gcra> later(p);
  const tick t0 = 1'000'000'000;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(store.try_acquire_at("exhausted", t0), exhausted.try_acquire_at(t0));
  ASSERT_FALSE(store.try_acquire_at("exhausted", t0).allowed);
  for (int i = 0; i < 20000; ++i)
    ASSERT_TRUE(store.try_acquire_at("future:" + std::to_string(i), t0 + fifty_years).allowed);
  EXPECT_EQ(store.stats().purged, 0U);
  // The exhausted key is still exhausted, 1 ns later, as its own limiter says.
  const decision d = store.try_acquire_at("exhausted", t0 + 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d, exhausted.try_acquire_at(t0 + 1));
  EXPECT_LT(d.retry_after, 1'000'000'000);
  // A new key at t0 + 1 gets its fresh burst and waits a tenth of a second
  // after it, not fifty years.
  for (int i = 0; i < 4; ++i) {
    const tick t = t0 + 1 + i * 1000;
    const decision got = store.try_acquire_at("later", t);
    EXPECT_EQ(got, later.try_acquire_at(t)) << i;
    EXPECT_LT(got.retry_after, 1'000'000'000) << i;
    EXPECT_LT(got.reset_after, 1'000'000'000) << i;
  }
}

struct time_counts {
  std::size_t requests = 0;
  std::size_t far = 0;     // requests stamped decades ahead of the slowest key
  std::size_t behind = 0;  // requests stamped before their key's latest admit
  std::size_t purged = 0;
};

testing::AssertionResult per_key_clocks_agree(std::uint64_t seed, time_counts& counts) {
  rng_t g(seed * 0x9E3779B97F4A7C15ULL + 101);
  const drawn_policy dp = random_policy(g);
  const std::size_t nkeys = 2 + g() % 40;
  keyed_options o;
  o.shards = std::size_t{1} << (g() % 3);
  o.auto_purge = g() % 4 != 0;
  o.hash_seed = seed;
  keyed_limiter store(dp.policy, o);
  reference model(dp.policy);  // one core state per key, never purged
  const tick w = std::min<tick>(dp.c.r.window, 1'000'000'000'000'000);
  const tick back_most = 2 * w;  // how far a key's stamp goes behind its own clock
  // One wall clock, and each key's own clock at the wall plus an offset of
  // its own (0 for most keys, decades for some); a key's clock only moves
  // forward, and its requests are stamped at it or up to back_most behind.
  tick wall = model::uniform(g, 0, 1'000'000) + back_most;
  std::vector<tick> offset(nkeys);
  std::vector<tick> clock(nkeys, std::numeric_limits<tick>::min());
  std::vector<bool> far(nkeys);
  std::vector<tick> last_admit(nkeys, std::numeric_limits<tick>::min());
  for (std::size_t k = 0; k < nkeys; ++k) {
    far[k] = g() % 4 == 0;
    offset[k] = far[k] ? model::uniform(g, 100'000'000'000'000'000, 4'000'000'000'000'000'000) : 0;
  }
  for (std::size_t i = 0; i < 600; ++i) {
    const int roll = static_cast<int>(g() % 100);
    if (roll < 30) {
      wall += 0;
    } else if (roll < 45) {
      wall += model::uniform(g, 1, 3);
    } else if (roll < 90) {
      wall += model::uniform(g, 0, w / 4);
    } else {
      wall += model::uniform(g, w, 2 * w);
    }
    const std::size_t k = g() % nkeys;
    clock[k] = std::max(clock[k], wall + offset[k] + (g() % 3 == 0 ? model::uniform(g, 0, w) : 0));
    tick now = clock[k];
    if (g() % 5 == 0) now -= model::uniform(g, 0, back_most);
    const std::string key = "k" + std::to_string(k);
    std::int64_t cost = 1 + static_cast<std::int64_t>(g() % 3);
    if (g() % 10 == 0) cost = std::max<std::int64_t>(1, dp.c.capacity());
    if (now < last_admit[k]) ++counts.behind;
    if (far[k]) ++counts.far;
    const decision want = model.decide_at(key, now, cost, std::numeric_limits<tick>::min());
    const decision got = store.try_acquire_at(key, now, cost);
    ++counts.requests;
    if (!(got == want))
      return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << ", " << nkeys << " keys, shards "
                                         << o.shards << ", auto_purge " << o.auto_purge << ") step " << i << " key "
                                         << key << (far[k] ? " (far)" : "") << " now=" << now << " cost=" << cost
                                         << ": got " << show(got) << ", the key's own limiter " << show(want);
    if (want.allowed) last_admit[k] = std::max(last_admit[k], now);
    if (g() % 100 < 10) {
      // The owner's promise: no later request is stamped before p (every
      // key's clock is at least the wall from its next request on, and its
      // stamps at most back_most behind it).
      const tick p = wall - back_most - model::uniform(g, 0, w);
      counts.purged += g() % 2 == 0 ? store.purge(p, 1 + g() % 8) : store.purge_step(p, 1 + g() % 40);
    }
  }
  if (store.stats().evicted != 0) return testing::AssertionFailure() << "seed " << seed << ": evicted";
  return testing::AssertionSuccess();
}

TEST(KeyedTime, PerKeyClocksDecideAsOneLimiterPerKey) {
  time_counts c;
  for (std::uint64_t seed = 1; seed <= 600; ++seed) ASSERT_TRUE(per_key_clocks_agree(seed, c));
  // The traces did what they are for: keys decades ahead, stamps behind
  // their key's own admits, and purges that dropped states.
  EXPECT_GT(c.far, 10000U);
  EXPECT_GT(c.behind, 10000U);
  EXPECT_GT(c.purged, 5000U);
}

TEST(KeyedTime, ARequestNowNeverPurgesOutOfTimeOrder) {
  // Without in_time_order, a shard's sweep judges at the horizon only: a
  // request decades ahead finds every other key's state not fresh there.
  const auto p = token_bucket::make({1, 100}, 2).value();
  keyed_limiter store(p, {.shards = 1, .hash_seed = 3});
  ASSERT_TRUE(store.try_acquire_at("a", 1000, 2).allowed);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(store.try_acquire_at("b" + std::to_string(i), fifty_years).allowed);
  EXPECT_EQ(store.stats().purged, 0U);
  EXPECT_TRUE(store.state_of("a").has_value());
  EXPECT_EQ(store.horizon(), std::numeric_limits<tick>::min());
  EXPECT_FALSE(store.try_acquire_at("a", 1001).allowed);
  // In time order the same sweep may judge at the request's now.
  keyed_limiter ordered(p, {.shards = 1, .in_time_order = true, .hash_seed = 3});
  ASSERT_TRUE(ordered.try_acquire_at("a", 1000, 2).allowed);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(ordered.try_acquire_at("b" + std::to_string(i), 2000 + i).allowed);
  EXPECT_EQ(ordered.stats().purged, 1U);  // "a", full again at 1200
  EXPECT_FALSE(ordered.state_of("a").has_value());
}

}  // namespace
}  // namespace sluice::keyed_time_test
