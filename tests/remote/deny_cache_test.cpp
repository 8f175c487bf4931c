// deny_cache: the lookup rules, forgetting, bounds, races with forget, and
// a differential check against the core limiters (decisions identical with
// and without the cache on a shared clock, since denials are pure reads).
#include "sluice/remote/deny_cache.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sluice/core/fixed_window.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/sliding_counter.hpp"

namespace sluice::remote {
namespace {

TEST(DenyCache, EmptyAnswersNothing) {
  deny_cache c;
  EXPECT_FALSE(c.lookup(1, 1, "k", 1, 0).has_value());
  EXPECT_EQ(c.size(), 0u);
}

TEST(DenyCache, DeniesSameOrLargerCostUntilTheRetryTime) {
  deny_cache c;
  c.insert(1, 7, "k", 3, 100, 50);  // denied at 100, cost 3, until 150
  EXPECT_EQ(c.lookup(1, 7, "k", 3, 100), 50);
  EXPECT_EQ(c.lookup(1, 7, "k", 9, 120), 30);
  EXPECT_EQ(c.lookup(1, 7, "k", 3, 149), 1);
  EXPECT_FALSE(c.lookup(1, 7, "k", 2, 120).has_value());  // a smaller cost may pass
  // A caller whose clock is behind the denial: retry counts from its own now.
  EXPECT_EQ(c.lookup(1, 7, "k", 3, 90), 60);
  EXPECT_FALSE(c.lookup(1, 7, "k", 3, 150).has_value());  // at until: ask the store
}

TEST(DenyCache, AnEndOnceReachedIsNeverRevivedByAnEarlierStamp) {
  // A request at or past the end went to the store and may have admitted
  // there, moving the key's time past the end: a request stamped before the
  // end is read at that time (semantics.md, "Keys"), so the entry is done.
  deny_cache c;
  c.insert(1, 7, "k", 3, 100, 50);                        // until 150
  EXPECT_FALSE(c.lookup(1, 7, "k", 1, 150).has_value());  // any cost: the request goes to the store
  EXPECT_FALSE(c.lookup(1, 7, "k", 3, 120).has_value());
  EXPECT_FALSE(c.lookup(1, 7, "k", 3, 90).has_value());
  // The same through note (a request with an id, which skips the lookup).
  c.insert(1, 7, "j", 3, 100, 50);
  EXPECT_EQ(c.lookup(1, 7, "j", 3, 120), 30);
  c.note(1, "j", 149);
  EXPECT_EQ(c.lookup(1, 7, "j", 3, 120), 30);
  c.note(1, "j", 150);
  EXPECT_FALSE(c.lookup(1, 7, "j", 3, 120).has_value());
  // An insert after the mark passed its end is never answered either (a
  // denial whose call raced with a later-stamped one).
  c.insert(1, 7, "j", 3, 100, 40);
  EXPECT_FALSE(c.lookup(1, 7, "j", 3, 101).has_value());
  // A new denial with an end past the mark answers again.
  c.insert(1, 7, "j", 3, 100, 100);
  EXPECT_EQ(c.lookup(1, 7, "j", 3, 160), 40);
}

TEST(DenyCache, AWaitPastTheLastTickIsNever) {
  deny_cache c;
  c.insert(1, 1, "k", 1, 0, INT64_MAX - 1);       // until INT64_MAX - 1
  EXPECT_EQ(c.lookup(1, 1, "k", 1, -10), never);  // INT64_MAX + 9 ticks away
  EXPECT_EQ(c.lookup(1, 1, "k", 1, 0), INT64_MAX - 1);
}

TEST(DenyCache, NeverHoldsUntilTheVersionChanges) {
  deny_cache c;
  c.insert(2, 1, "k", 11, 5, never);
  EXPECT_EQ(c.lookup(2, 1, "k", 11, INT64_MAX), never);
  EXPECT_EQ(c.lookup(2, 1, "k", 1000, 5), never);
  // Stamped before the denial: a `never` that was an end past the last tick
  // may come within it from an earlier time, so the store answers.
  EXPECT_FALSE(c.lookup(2, 1, "k", 1000, INT64_MIN).has_value());
  EXPECT_FALSE(c.lookup(2, 1, "k", 10, 5).has_value());
  EXPECT_FALSE(c.lookup(2, 2, "k", 11, 5).has_value());  // reconfigured: a new version
}

TEST(DenyCache, KeysPoliciesAndVersionsAreDistinct) {
  deny_cache c;
  c.insert(1, 1, "a", 1, 0, 10);
  EXPECT_FALSE(c.lookup(1, 1, "b", 1, 0).has_value());
  EXPECT_FALSE(c.lookup(2, 1, "a", 1, 0).has_value());
  EXPECT_FALSE(c.lookup(1, 2, "a", 1, 0).has_value());
  EXPECT_FALSE(c.lookup(1, 1, std::string_view("a\0", 2), 1, 0).has_value());
  EXPECT_TRUE(c.lookup(1, 1, "a", 1, 0).has_value());
}

TEST(DenyCache, ANewDenialReplacesTheOld) {
  deny_cache c;
  c.insert(1, 1, "k", 5, 0, 100);
  c.insert(1, 1, "k", 2, 10, 20);  // cost 2 until 30
  EXPECT_EQ(c.lookup(1, 1, "k", 2, 10), 20);
  EXPECT_FALSE(c.lookup(1, 1, "k", 5, 40).has_value());
  EXPECT_EQ(c.size(), 1u);
  c.insert(1, 2, "k", 1, 0, 5);  // same key under a new version replaces it too
  EXPECT_EQ(c.size(), 1u);
}

TEST(DenyCache, IgnoresNonDenialsAndTheEndOfTime) {
  deny_cache c;
  c.insert(1, 1, "k", 1, 0, 0);
  c.insert(1, 1, "k", 1, 0, -5);
  c.insert(1, 1, "k", 0, 0, 5);
  c.insert(1, 1, "k", 1, INT64_MAX - 1, 5);  // until past INT64_MAX: not cached
  EXPECT_EQ(c.size(), 0u);
  c.insert(1, 1, "k", 1, INT64_MAX - 5, 5);
  EXPECT_EQ(c.lookup(1, 1, "k", 1, INT64_MAX - 1), 1);
}

TEST(DenyCache, ForgetKeyPolicyAndAll) {
  deny_cache c;
  c.insert(1, 1, "a", 1, 0, 10);
  c.insert(2, 1, "a", 1, 0, 10);
  c.insert(1, 1, "b", 1, 0, 10);
  c.insert(3, 1, "c", 1, 0, 10);
  c.forget(1, "a");
  EXPECT_FALSE(c.lookup(1, 1, "a", 1, 0).has_value());
  EXPECT_TRUE(c.lookup(2, 1, "a", 1, 0).has_value());
  c.forget_key("a");
  EXPECT_FALSE(c.lookup(2, 1, "a", 1, 0).has_value());
  EXPECT_TRUE(c.lookup(1, 1, "b", 1, 0).has_value());
  c.forget(1);
  EXPECT_FALSE(c.lookup(1, 1, "b", 1, 0).has_value());
  EXPECT_TRUE(c.lookup(3, 1, "c", 1, 0).has_value());
  c.clear();
  EXPECT_EQ(c.size(), 0u);
}

TEST(DenyCache, AnInsertAfterAForgetItRacedWithIsDropped) {
  deny_cache c;
  const std::uint64_t g = c.generation();  // before the store call
  c.forget(1, "k");                        // a refund lands meanwhile
  c.insert(1, 1, "k", 1, 0, 10, g);        // the (now stale) denial
  EXPECT_FALSE(c.lookup(1, 1, "k", 1, 0).has_value());
  c.insert(1, 1, "k", 1, 0, 10, c.generation());
  EXPECT_TRUE(c.lookup(1, 1, "k", 1, 0).has_value());
}

TEST(DenyCache, AnInsertAfterAClearItRacedWithIsDropped) {
  // A subscription lost and made again (the store empties its cache): a
  // denial whose call went out before is not cached after.
  deny_cache c;
  const std::uint64_t g = c.generation();
  c.clear();
  c.insert(1, 1, "k", 1, 0, 10, g);
  EXPECT_FALSE(c.lookup(1, 1, "k", 1, 0).has_value());
  const std::uint64_t g2 = c.generation();
  c.forget_key("other");  // any forget moves it: coarse, never stale
  c.insert(1, 1, "k", 1, 0, 10, g2);
  EXPECT_FALSE(c.lookup(1, 1, "k", 1, 0).has_value());
}

TEST(DenyCache, BoundedWithOverwrite) {
  deny_cache c(64, 4);
  EXPECT_EQ(c.capacity(), 64u);
  for (int i = 0; i < 10000; ++i) c.insert(1, 1, "key" + std::to_string(i), 1, 0, 1000 + i);
  EXPECT_LE(c.size(), c.capacity());
  EXPECT_GT(c.size(), c.capacity() / 2);
  // Whatever survived answers exactly; nothing answers for a key it does not hold.
  int answered = 0;
  for (int i = 0; i < 10000; ++i) {
    auto r = c.lookup(1, 1, "key" + std::to_string(i), 1, 0);
    if (r) {
      EXPECT_EQ(*r, 1000 + i);
      ++answered;
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(answered), c.size());
}

TEST(DenyCache, LongKeys) {
  deny_cache c;
  const std::string a(1000, 'x');
  std::string b = a;
  b.back() = 'y';
  c.insert(1, 1, a, 1, 0, 10);
  EXPECT_TRUE(c.lookup(1, 1, a, 1, 0).has_value());
  EXPECT_FALSE(c.lookup(1, 1, b, 1, 0).has_value());
}

TEST(DenyCache, ThreadsInsertLookupAndForget) {
  deny_cache c(1024, 8);
  std::vector<std::thread> ts;
  std::atomic<bool> bad{false};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        const std::string key = "k" + std::to_string((i * 7 + t) % 300);
        const auto policy = static_cast<policy_id>(i % 3);
        switch (i % 5) {
          case 0:
            c.insert(policy, 1, key, 2, 0, 77);
            break;
          case 1:
            c.forget(policy, key);
            break;
          default: {
            auto r = c.lookup(policy, 1, key, 2, 10);
            if (r && *r != 67) bad = true;
          }
        }
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_FALSE(bad.load());
}

// Differential: a store (one core limiter state per key) with the cache in
// front vs the same store without it, on one shared, monotone clock. Only
// admits change state, so `allowed` must agree on every request; a cached
// retry_after never exceeds the store's.
template <typename Policy>
void differential(const Policy& p, std::uint64_t seed, tick max_step) {
  std::mt19937_64 rng(seed);
  constexpr int keys = 5;
  std::vector<typename Policy::state> with(keys), without(keys);
  deny_cache cache;
  tick now = static_cast<tick>(rng() % 1000);
  int cached = 0;
  for (int i = 0; i < 20000; ++i) {
    now += static_cast<tick>(rng() % static_cast<std::uint64_t>(max_step + 1));
    const int k = static_cast<int>(rng() % keys);
    const std::string key = "key" + std::to_string(k);
    const std::int64_t cost = 1 + static_cast<std::int64_t>(rng() % 4);
    const decision truth = decide(p, without[static_cast<std::size_t>(k)], now, cost);
    bool allowed = false;
    tick retry = 0;
    if (auto hit = cache.lookup(1, 1, key, cost, now)) {
      ++cached;
      allowed = false;
      retry = *hit;
    } else {
      const decision d = decide(p, with[static_cast<std::size_t>(k)], now, cost);
      allowed = d.allowed;
      retry = d.retry_after;
      if (!d.allowed) cache.insert(1, 1, key, cost, now, d.retry_after);
    }
    ASSERT_EQ(allowed, truth.allowed) << "request " << i << " at " << now << " cost " << cost;
    if (!allowed) {
      ASSERT_GT(retry, 0);
      ASSERT_LE(retry, truth.retry_after) << "request " << i;
    }
  }
  EXPECT_GT(cached, 1000) << "the trace must exercise the cache";
}

TEST(DenyCache, DifferentialGcra) {
  differential(gcra::make(rate{5, 100}, 3).value(), 1, 30);
  differential(gcra::make(rate{1, 7}, 2).value(), 2, 4);
}

TEST(DenyCache, DifferentialFixedWindow) { differential(fixed_window::make(rate{4, 50}).value(), 3, 10); }

TEST(DenyCache, DifferentialSlidingCounter) { differential(sliding_counter::make(rate{6, 60}).value(), 4, 8); }

}  // namespace
}  // namespace sluice::remote
