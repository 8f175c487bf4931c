// register_redis_stores (redis.hpp): every Redis scheme opens through a
// store_registry, the options reach the store, and the store's figures come
// through the store interface (store::figures), against a real redis-server.
#include <gtest/gtest.h>

#include <string>

#include "redis/store_support.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/keyed/registry.hpp"

namespace sluice::redis_test::redis_store_registry_test {
namespace {

/// A registry with the Redis schemes, and options for the shared server
/// under a fresh prefix.
struct redis_registry {
  store_registry stores;
  store_options options;
  explicit redis_registry(const std::string& prefix) {
    register_redis_stores(stores);
    options.url = shared_server().url();
    options.key_prefix = fresh_prefix(prefix);
  }
};

TEST(RedisRegistry, RegistersEveryRedisScheme) {
  store_registry stores;
  register_redis_stores(stores);
  for (const store_scheme& s : known_store_schemes) EXPECT_TRUE(stores.has(s.name)) << s.name;
}

TEST(RedisRegistry, OpensARedisStoreThatDecidesAndReportsItsFigures) {
  redis_registry reg("registry");
  reg.options.deny_cache = true;
  auto st = reg.stores.open(reg.options);
  ASSERT_TRUE(st) << st.err().what();
  auto* r = dynamic_cast<redis_store*>(st->get());
  ASSERT_NE(r, nullptr);
  const auto id = r->define("api", any_policy{gcra::make(rate{1, 1'000'000'000}, 1).value()});
  ASSERT_TRUE(id) << id.err().what();
  const check c{*id, "k"};
  const tick now = r->now();
  EXPECT_TRUE(r->decide_at({.checks = {&c, 1}, .now = now, .cost = 1, .id = {}}).d.allowed);
  EXPECT_FALSE(r->decide_at({.checks = {&c, 1}, .now = now, .cost = 1, .id = {}}).d.allowed);
  // The deny cache was on (store_options::deny_cache): it answers a repeat
  // (soon: cache_answers_denial).
  EXPECT_TRUE(cache_answers_denial(*r, {.checks = {&c, 1}, .now = now, .cost = 1, .id = {}}));

  const auto f = (*st)->figures();
  ASSERT_TRUE(f.has_value());
  const redis_store_stats s = r->redis_stats();
  ASSERT_EQ(f->latency_bounds.size(), redis_store_stats::call_latency_bounds.size());
  ASSERT_EQ(f->latency_buckets.size(), f->latency_bounds.size() + 1);
  std::uint64_t calls = 0;
  for (const std::uint64_t n : f->latency_buckets) calls += n;
  std::uint64_t stats_calls = 0;
  for (const std::uint64_t n : s.call_latency_buckets) stats_calls += n;
  EXPECT_EQ(calls, stats_calls);
  EXPECT_GE(calls, 2u);  // the two decisions that went to Redis (and any library load)
  ASSERT_EQ(f->failures.size(), redis_store_stats::failure_reasons.size());
  for (const auto& [reason, n] : f->failures) EXPECT_EQ(n, 0u) << reason;
  ASSERT_EQ(f->breakers.size(), 1u);
  EXPECT_EQ(f->breakers[0].second, "closed");
  EXPECT_EQ(f->breakers[0].first.find("***"), std::string::npos);
}

TEST(RedisRegistry, RedisStoreOpensFromTheUrlAndTheSharedOptionsAsTheRegistryDoes) {
  // One way in: redis_store::open(store_options) is the registry's opener,
  // so a store opened either way with the same URL and prefix shares states.
  redis_registry reg("one-way");
  store_options& o = reg.options;
  auto by_registry = reg.stores.open(o);
  ASSERT_TRUE(by_registry) << by_registry.err().what();
  o.deny_cache = true;
  auto direct = redis_store::open(o);
  ASSERT_TRUE(direct) << direct.err().what();
  const any_policy p{gcra::make(rate{1, 1'000'000'000}, 1).value()};
  const auto a = (*by_registry)->define("api", p);
  const auto b = (*direct)->define("api", p);
  ASSERT_TRUE(a && b);
  const check ca{*a, "k"};
  const check cb{*b, "k"};
  const tick now = (*direct)->now();
  EXPECT_TRUE((*by_registry)->decide_at({.checks = {&ca, 1}, .now = now, .cost = 1, .id = {}}).d.allowed);
  const store_decision d = (*direct)->decide_at({.checks = {&cb, 1}, .now = now, .cost = 1, .id = {}});
  EXPECT_FALSE(d.d.allowed);
  EXPECT_EQ(d.from, source::store);
  // Its deny cache came from store_options::deny_cache. The cache may pass
  // a request to the store at any time (its subscription not yet confirmed,
  // or its listener reading: docs/redis.md, "The deny cache"), so it must
  // answer a repeat of the denial soon, not necessarily the first one.
  EXPECT_TRUE(eventually([&] {
    const store_decision again = (*direct)->decide_at({.checks = {&cb, 1}, .now = now, .cost = 1, .id = {}});
    EXPECT_FALSE(again.d.allowed);
    return again.from == source::deny_cache;
  }));

  // Its clock too (store_options::clock): at the store's clock a decision
  // is made at Redis's instant, not at the request's.
  store_options clocked = o;
  clocked.deny_cache = false;
  clocked.clock = store_clock::store;
  clocked.key_prefix = fresh_prefix("one-way-clock");
  auto c = redis_store::open(clocked);
  ASSERT_TRUE(c) << c.err().what();
  const auto id = (*c)->define("api", p);
  ASSERT_TRUE(id) << id.err().what();
  const check cc{*id, "k"};
  const store_decision at_redis = (*c)->decide_at({.checks = {&cc, 1}, .now = 1, .cost = 1, .id = {}});
  EXPECT_EQ(at_redis.from, source::store);
  EXPECT_GT(at_redis.at, tick{1'600'000'000} * 1'000'000'000);  // Redis's TIME in ns, past 2020
}

TEST(RedisRegistry, TheStoresOwnErrorNamesThePartOfTheUrl) {
  store_registry stores;
  register_redis_stores(stores);
  store_options o;
  o.url = "redis://u:hunter2@127.0.0.1:99999";
  auto st = stores.open(o);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.err().field, "port") << st.err().what();
  EXPECT_EQ(st.err().what().find("hunter2"), std::string::npos) << st.err().what();
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_registry_test
