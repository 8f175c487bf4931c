// register_redis_stores (redis.hpp): every Redis scheme opens through a
// store_registry, the options reach the store, and the store's figures come
// through the store interface (store::figures), against a real redis-server.
#include <gtest/gtest.h>

#include <string>

#include "redis/store_support.hpp"
#include "sluice/gcra.hpp"
#include "sluice/store/registry.hpp"

namespace sluice::redis_test::redis_store_registry_test {
namespace {

TEST(RedisRegistry, RegistersEveryRedisScheme) {
  store_registry stores;
  register_redis_stores(stores);
  for (const store_scheme& s : known_store_schemes) EXPECT_TRUE(stores.has(s.name)) << s.name;
}

TEST(RedisRegistry, OpensARedisStoreThatDecidesAndReportsItsFigures) {
  store_registry stores;
  register_redis_stores(stores);
  store_options o;
  o.url = shared_server().url();
  o.key_prefix = fresh_prefix("registry");
  o.deny_cache = true;
  auto st = stores.open(o);
  ASSERT_TRUE(st) << st.err().what();
  auto* r = dynamic_cast<redis_store*>(st->get());
  ASSERT_NE(r, nullptr);
  const auto id = r->define("api", any_policy{gcra::make(rate{1, 1'000'000'000}, 1).value()});
  ASSERT_TRUE(id) << id.err().what();
  const check c{*id, "k"};
  const tick now = r->now();
  EXPECT_TRUE(r->decide_at({.checks = {&c, 1}, .now = now, .cost = 1, .id = {}}).d.allowed);
  EXPECT_FALSE(r->decide_at({.checks = {&c, 1}, .now = now, .cost = 1, .id = {}}).d.allowed);
  // The deny cache was on (store_options::deny_cache): the third answer is its.
  EXPECT_EQ(r->decide_at({.checks = {&c, 1}, .now = now, .cost = 1, .id = {}}).from, source::deny_cache);

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
