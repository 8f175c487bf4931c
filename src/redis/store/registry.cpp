// register_redis_stores (redis.hpp): the Redis store's schemes in a
// store_registry, each opening a redis_store from the options every store
// shares (redis_store::open(const store_options&), mapped here once).
#include "sluice/keyed/registry.hpp"
#include "redis/store/store_impl.hpp"
#include "sluice/redis/store.hpp"

namespace sluice {

result<std::unique_ptr<redis_store>> redis_store::open(const store_options& o) {
  redis_store_options r;
  r.url = o.url;
  r.password = o.password;
  r.prefix = o.key_prefix;
  r.connect_timeout = o.connect_timeout;
  r.command_timeout = o.command_timeout;
  r.tick_ns = o.tick_ns;
  r.unknown_tick_ttl = o.unknown_tick_ttl;
  r.idempotency_window = o.idempotency_window;
  r.on_failure = o.on_failure;
  r.fail_closed_retry_after = o.fail_closed_retry_after;
  r.breaker_failures = o.breaker_failures;
  r.breaker_cool_down = o.breaker_cool_down;
  r.deny_cache = o.deny_cache;
  r.clock = o.clock;
  r.max_clock_offset = o.max_clock_offset;
  r.warn_on_eviction_policy = o.warn_on_eviction_policy;
  r.on_health_change = o.on_health_change;
  return open(std::move(r));
}

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
