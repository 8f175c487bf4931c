// register_redis_stores (redis.hpp): the Redis store's schemes in a
// store_registry, each opened by redis_store::open(const store_options&).
#include "sluice/keyed/registry.hpp"
#include "redis/store/store_impl.hpp"
#include "sluice/redis/store.hpp"

namespace sluice {

namespace {

result<std::unique_ptr<store>> open_redis(const store_options& o) {
  auto st = redis_store::open(o);
  if (!st) return st.err();
  return std::unique_ptr<store>(std::move(st).value());
}

}  // namespace

void register_redis_stores(store_registry& stores) {
  for (const store_scheme& s : known_store_schemes)
    if (s.target == "sluice::redis") (void)stores.add(s.name, &open_redis);
}

std::optional<store_figures> redis_store::figures() const {
  const redis_store_stats s = redis_stats();
  store_figures f;
  f.latency_bounds = redis_store_stats::call_latency_bounds;
  f.latency_buckets.assign(s.call_latency_buckets.begin(), s.call_latency_buckets.end());
  f.latency_sum_ns = s.call_latency_sum_ns;
  for (std::size_t i = 0; i < s.call_failures.size(); ++i)
    f.failures.emplace_back(redis_store_stats::failure_reasons[i], s.call_failures[i]);
  for (const auto& b : s.breakers) f.breakers.emplace_back(b.node, b.state);
  if (impl_->listener)
    f.deny_cache = store_figures::cache_subscription{s.deny_cache_subscribed, s.deny_cache_invalidations,
                                                     s.deny_cache_subscriptions, s.deny_cache_bypassed};
  f.clock_offset_ns = s.clock_offset_ns;
  f.evicted_keys = s.evicted_keys;
  f.last_failure = s.last_failure;
  return f;
}

}  // namespace sluice
