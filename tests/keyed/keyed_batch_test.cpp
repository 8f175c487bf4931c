// try_acquire_many_at / try_acquire_many: a batch decides exactly as the
// same requests one call after another. Two stores with the same options
// take the same random traces (every algorithm and composites, clocks that
// step back, keys repeated within a batch, new keys, sweeps as shards grow,
// evictions at a small max_keys, purges between batches): one in batches of
// random sizes, one request at a time. Every decision, every count and every
// state held must be equal.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "keyed/keyed_support.hpp"

namespace sluice::keyed_batch_test {
namespace {

using namespace sluice::keyed_test;

testing::AssertionResult batches_agree(std::uint64_t seed, std::size_t& batched) {
  rng_t g(seed * 0xD1B54A32D192ED03ULL + 11);
  const drawn_policy dp = random_policy(g);
  keyed_options o;
  o.shards = std::size_t{1} << (g() % 3);
  o.auto_purge = g() % 2 == 0;
  o.in_time_order = g() % 2 == 0;
  o.max_keys = g() % 3 == 0 ? 1 + g() % 12 : 0;
  o.hash_seed = seed;
  keyed_limiter one(dp.policy, o);
  keyed_limiter many(dp.policy, o);
  const auto trace = keyed_trace(dp.c, g, 400, 1 + g() % 40, /*back=*/true);
  std::size_t i = 0;
  while (i < trace.size()) {
    if (g() % 100 < 5) {
      const tick p = trace[i].now;
      if (one.purge(p, 3) != many.purge(p, 3))
        return testing::AssertionFailure() << "seed " << seed << ": a purge dropped different counts";
    }
    const std::size_t n = std::min<std::size_t>(trace.size() - i, 1 + g() % 40);
    std::vector<keyed_request> batch;
    for (std::size_t j = 0; j < n; ++j) batch.push_back({trace[i + j].key, trace[i + j].now, trace[i + j].cost});
    std::vector<decision> got(n);
    many.try_acquire_many_at(batch, got);
    for (std::size_t j = 0; j < n; ++j) {
      const trace_request& q = trace[i + j];
      const decision want = one.try_acquire_at(q.key, q.now, q.cost);
      if (!(got[j] == want))
        return testing::AssertionFailure()
               << "seed " << seed << " (" << dp.describe << ", shards " << o.shards << ", auto_purge " << o.auto_purge
               << ", max_keys " << o.max_keys << ") request " << i + j << " (batch of " << n << ") key " << q.key
               << " now=" << q.now << " cost=" << q.cost << ": batched " << show(got[j]) << ", one by one "
               << show(want);
    }
    i += n;
    ++batched;
  }
  const keyed_stats a = one.stats();
  const keyed_stats b = many.stats();
  if (a.keys != b.keys || a.purged != b.purged || a.evicted != b.evicted || a.units_forgiven != b.units_forgiven)
    return testing::AssertionFailure() << "seed " << seed << ": the counts differ";
  if (one.horizon() != many.horizon()) return testing::AssertionFailure() << "seed " << seed << ": horizons";
  std::size_t held = 0;
  bool same = true;
  one.for_each([&](std::string_view key, const any_state& st) {
    ++held;
    const auto other = many.state_of(key);
    same = same && other.has_value() && *other == st;
  });
  if (!same || held != many.size())
    return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << "): the states held differ";
  return testing::AssertionSuccess();
}

TEST(KeyedBatch, DecidesAsOneCallAfterAnother) {
  std::size_t batched = 0;
  for (std::uint64_t seed = 1; seed <= 600; ++seed) ASSERT_TRUE(batches_agree(seed, batched));
  EXPECT_GT(batched, 600U * 10);
}

TEST(KeyedBatch, ARepeatedKeySeesItsEarlierAdmitsInTheSameBatch) {
  keyed_limiter k(gcra::make({1, 1000}, 3).value(), {.hash_seed = 2});
  const std::vector<keyed_request> reqs(5, keyed_request{"a", 10, 1});
  std::vector<decision> out(5);
  k.try_acquire_many_at(reqs, out);
  const std::vector<bool> allowed = {out[0].allowed, out[1].allowed, out[2].allowed, out[3].allowed, out[4].allowed};
  EXPECT_EQ(allowed, (std::vector<bool>{true, true, true, false, false}));
  EXPECT_EQ(out[2].remaining, 0);
  EXPECT_EQ(out[3].retry_after, 1000);
}

TEST(KeyedBatch, ReadsTheClockOnceForTheBatch) {
  manual_clock clock(5'000);
  keyed_limiter batched(token_bucket::make({2, 100}, 4).value(), {.hash_seed = 3}, clock);
  keyed_limiter single(token_bucket::make({2, 100}, 4).value(), {.hash_seed = 3});
  const std::vector<std::string_view> keys = {"x", "y", "x", "x", "x", "x", "z", "y"};
  std::vector<decision> out(keys.size());
  for (int round = 0; round < 3; ++round) {
    batched.try_acquire_many(keys, out, 1);
    for (std::size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(out[i], single.try_acquire_at(keys[i], clock.now(), 1));
    clock.advance(30);
  }
}

TEST(KeyedBatch, AShortOutputIsRefusedBeforeAnyDecision) {
  keyed_limiter k(gcra::make({1, 1000}, 1).value(), {.hash_seed = 4});
  const std::vector<keyed_request> reqs = {{"a", 0, 1}, {"b", 0, 1}};
  std::vector<decision> out(1);
  EXPECT_THROW(k.try_acquire_many_at(reqs, out), std::invalid_argument);
  const std::vector<std::string_view> keys = {"a", "b"};
  EXPECT_THROW(k.try_acquire_many(keys, out), std::invalid_argument);
  EXPECT_EQ(k.size(), 0U);
  EXPECT_TRUE(k.try_acquire_at("a", 0).allowed);
}

TEST(KeyedBatch, AnEmptyBatchDoesNothing) {
  keyed_limiter k(gcra::make({1, 1000}, 1).value(), {.hash_seed = 5});
  k.try_acquire_many_at({}, {});
  k.try_acquire_many({}, {});
  EXPECT_EQ(k.size(), 0U);
}

}  // namespace
}  // namespace sluice::keyed_batch_test
