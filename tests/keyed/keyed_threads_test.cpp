// Exactness under contention, and the races that matter (lock-free
// decisions against inserts, resizes, purges, evictions and restores). Each
// test is bounded in work, so it ends in well under 10 s even under
// ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sluice/keyed/keyed.hpp"

namespace sluice::keyed_threads_test {
namespace {

/// Runs `fn(thread_index)` on `n` threads started together.
template <typename F>
void on_threads(int n, F fn) {
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  ts.reserve(static_cast<std::size_t>(n));
  for (int t = 0; t < n; ++t) {
    ts.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();
      fn(t);
    });
  }
  for (auto& th : ts) th.join();
}

constexpr std::int64_t attempts = 1'000'000;  // per thread on one key; shared out elsewhere

/// 2 threads × `attempts` on one key with a frozen clock admit exactly B.
void one_key_admits_exactly_burst(const any_policy& p, std::int64_t burst) {
  const manual_clock frozen(1'000'000);
  keyed_limiter k(p, {.hash_seed = 1}, frozen);
  std::atomic<std::int64_t> admitted{0};
  on_threads(2, [&](int) {
    std::int64_t a = 0;
    for (std::int64_t i = 0; i < attempts; ++i) a += k.try_acquire("the-key").allowed ? 1 : 0;
    admitted.fetch_add(a);
  });
  EXPECT_EQ(admitted.load(), burst);
}

TEST(KeyedThreads, OneKeyTwoThreadsGcraAdmitsExactlyBurst) {
  const any_policy p = gcra::make({10, 1'000'000'000}, 7).value();
  ASSERT_TRUE(keyed_limiter(p).lock_free());
  one_key_admits_exactly_burst(p, 7);
}

TEST(KeyedThreads, OneKeyTwoThreadsTokenBucketAdmitsExactlyBurst) {
  one_key_admits_exactly_burst(token_bucket::make({10, 1'000'000'000}, 1000).value(), 1000);
}

TEST(KeyedThreads, OneKeyTwoThreadsInBatchesAdmitsExactlyBurst) {
  // The batch path (prefetches, then the same lock-free decision) on a
  // frozen clock: 2 threads × `attempts` in batches of 64 admit exactly B.
  const manual_clock frozen(1'000'000);
  keyed_limiter k(gcra::make({10, 1'000'000'000}, 9).value(), {.hash_seed = 1}, frozen);
  std::atomic<std::int64_t> admitted{0};
  on_threads(2, [&](int) {
    const std::vector<std::string_view> keys(64, "the-key");
    std::vector<decision> out(keys.size());
    std::int64_t a = 0;
    for (std::int64_t i = 0; i < attempts; i += 64) {
      k.try_acquire_many(keys, out);
      for (const decision& d : out) a += d.allowed ? 1 : 0;
    }
    admitted.fetch_add(a);
  });
  EXPECT_EQ(admitted.load(), 9);
}

TEST(KeyedThreads, OneKeyTwoThreadsLockedPolicyAdmitsExactlyLimit) {
  const any_policy p = fixed_window::make({25, 1'000'000'000}).value();
  ASSERT_FALSE(keyed_limiter(p).lock_free());
  one_key_admits_exactly_burst(p, 25);
}

/// 8 threads over 1,000 keys, frozen clock: exactly 1,000 × B, while the
/// shards grow under them (small shards, many resizes) and another thread
/// purges at the frozen instant (nothing is fresh, so nothing is lost).
void thousand_keys_admit_exactly(const any_policy& p, std::int64_t burst, bool purging) {
  const manual_clock frozen(5'000'000'000);
  keyed_limiter k(p, {.shards = 4, .hash_seed = 3}, frozen);
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back("client-" + std::to_string(i));
  std::atomic<std::int64_t> admitted{0};
  std::atomic<bool> done{false};
  std::thread purger;
  if (purging) {
    purger = std::thread([&] {
      while (!done.load()) (void)k.purge_step(frozen.now(), 64);
    });
  }
  constexpr std::int64_t per_thread = attempts / 8;
  on_threads(8, [&](int t) {
    std::int64_t a = 0;
    for (std::int64_t i = 0; i < per_thread; ++i) {
      const auto& key = keys[static_cast<std::size_t>((i * 7919 + t * 131) % 1000)];
      a += k.try_acquire(key).allowed ? 1 : 0;
    }
    admitted.fetch_add(a);
  });
  done.store(true);
  if (purger.joinable()) purger.join();
  EXPECT_EQ(admitted.load(), 1000 * burst);
  EXPECT_EQ(k.size(), 1000U);
  EXPECT_EQ(k.stats().purged, 0U);
}

TEST(KeyedThreads, EightThreadsThousandKeysGcra) {
  thousand_keys_admit_exactly(gcra::make({1, 1'000'000'000}, 5).value(), 5, false);
}

TEST(KeyedThreads, EightThreadsThousandKeysWithConcurrentPurge) {
  thousand_keys_admit_exactly(gcra::make({1, 1'000'000'000}, 5).value(), 5, true);
}

TEST(KeyedThreads, EightThreadsThousandKeysTokenBucketWithConcurrentPurge) {
  thousand_keys_admit_exactly(token_bucket::make({1, 1'000'000'000}, 3).value(), 3, true);
}

TEST(KeyedThreads, EightThreadsThousandKeysLockedPolicy) {
  thousand_keys_admit_exactly(sliding_counter::make({4, 1'000'000'000}).value(), 4, true);
}

TEST(KeyedThreads, StaleTimestampsEarnNothing) {
  // One thread's clock is stuck at an instant 10 s behind the other's
  // starting point. Whatever the interleaving, once the fresh thread has
  // admitted, the stale one's requests are read as at that admit: it can
  // win at most the one burst it may take before the fresh thread's first
  // admit, never a refill of its own.
  const any_policy p = gcra::make({100, 1'000'000'000}, 10).value();
  keyed_limiter k(p, {.hash_seed = 4});
  std::atomic<std::int64_t> admitted{0};
  constexpr std::int64_t steps = attempts / 10;
  constexpr tick step = 1'000'000;  // 1 ms a step: 0.1 unit a step
  on_threads(2, [&](int t) {
    std::int64_t a = 0;
    for (std::int64_t i = 0; i < steps; ++i) {
      const tick now = t == 1 ? 10'000'000'000 : 20'000'000'000 + i * step;
      a += k.try_acquire_at("k", now).allowed ? 1 : 0;
    }
    admitted.fetch_add(a);
  });
  EXPECT_LE(admitted.load(), 10 + 10 + steps / 10 + 1);
  EXPECT_GE(admitted.load(), steps / 10);
}

TEST(KeyedThreads, RotatingKeysWithEvictionAndPurgeUnderContention) {
  // Inserts, sweeps, evictions, purges, lock-free decisions and reclamation
  // all at once; the invariants: never above max_keys, counts add up.
  keyed_limiter k(gcra::make({10, 1000}, 3).value(), {.max_keys = 500, .shards = 8, .hash_seed = 5});
  std::atomic<bool> done{false};
  std::atomic<tick> now{0};
  std::thread purger([&] {
    while (!done.load()) (void)k.purge_step(now.load(), 32);
  });
  constexpr std::int64_t per_thread = attempts / 20;
  on_threads(4, [&](int t) {
    for (std::int64_t i = 0; i < per_thread; ++i) {
      const tick at = now.fetch_add(1) + 1;
      const std::string key = "r" + std::to_string((i * 17 + t * 1000003) % 3000);
      (void)k.try_acquire_at(key, at);
      if (i % 1000 == 0) {
        EXPECT_LE(k.size(), 500U);
      }
    }
  });
  done.store(true);
  purger.join();
  const keyed_stats s = k.stats();
  EXPECT_LE(s.keys, 500U);
  EXPECT_GT(s.evicted + s.purged, 0U);
}

TEST(KeyedThreads, RestoreAndClearWhileDeciding) {
  const any_policy p = gcra::make({1, 1'000'000'000}, 2).value();
  keyed_limiter k(p, {.shards = 2, .hash_seed = 6});
  std::vector<std::pair<std::string, any_state>> snapshot;
  for (int i = 0; i < 100; ++i)
    snapshot.emplace_back("s" + std::to_string(i), gcra::state{10'000'000'000, 9'000'000'000});
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 50; ++i) {
      k.restore(snapshot);
      k.clear();
    }
    done.store(true);
  });
  on_threads(2, [&](int t) {
    std::int64_t i = 0;
    while (!done.load() || i < 1000) {
      (void)k.try_acquire_at("s" + std::to_string((i++ + t) % 120), 9'500'000'000);
    }
  });
  writer.join();
  EXPECT_LE(k.size(), 120U);
}

}  // namespace
}  // namespace sluice::keyed_threads_test
