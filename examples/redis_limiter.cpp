// A limiter on Redis: every process that opens the same URL shares one
// exact limit per key. The store is opened from its URL through the store
// registry, and `sluice::store_limiter` is the view of one policy over it.
//
// Build and run:  cmake --build build --target redis_limiter && build/examples/redis_limiter redis://127.0.0.1:6379
#include <sluice/core/gcra.hpp>
#include <sluice/core/store_limiter.hpp>
#include <sluice/keyed/registry.hpp>
#include <sluice/redis/store.hpp>

#include <chrono>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: redis_limiter URL (redis://host:port, rediss://..., redis+cluster://...)\n");
    return 2;
  }

  // The registry opens "memory" by itself; the Redis store adds its schemes.
  sluice::store_registry stores;
  sluice::register_redis_stores(stores);
  // The one set of options every store shares (timeouts, key prefix,
  // failure mode, breaker, deny cache, clock): here the defaults. What only
  // Redis has rides in the URL's query (rediss://...?ca_file=..., ?wait_replicas=1).
  sluice::store_options options;
  options.url = argv[1];
  auto store = stores.open(options);
  if (!store) {
    std::fprintf(stderr, "redis_limiter: %s\n", store.err().what().c_str());
    return 2;
  }

  // 5 requests an hour per key, at most 3 at once, under the name "api"
  // (a fleet's processes define the same name).
  auto policy = sluice::gcra::make(sluice::rate{5, std::chrono::hours{1}}, 3);
  if (!policy) {
    std::fprintf(stderr, "redis_limiter: %s\n", policy.err().what().c_str());
    return 1;
  }
  auto api = sluice::store_limiter::make(**store, "api", *policy);
  if (!api) {
    std::fprintf(stderr, "redis_limiter: %s\n", api.err().what().c_str());
    return 1;
  }

  for (int i = 1; i <= 4; ++i) {
    // Decided in Redis, on the store's clock. When Redis cannot answer, the
    // failure mode does (fail-closed by default), and `from` says so.
    const sluice::store_decision d = api->decide("alice");
    if (d.from != sluice::source::store) {
      std::fprintf(stderr, "redis_limiter: Redis did not decide (%s)\n", std::string(sluice::name_of(d.from)).c_str());
      return 1;
    }
    if (d.d.allowed) {
      std::printf("request %d: allowed, %lld left\n", i, static_cast<long long>(d.d.remaining));
    } else {
      const auto wait = std::chrono::ceil<std::chrono::minutes>(std::chrono::nanoseconds{d.d.retry_after});
      std::printf("request %d: denied, retry in %lld min\n", i, static_cast<long long>(wait.count()));
    }
  }
  return 0;
}
