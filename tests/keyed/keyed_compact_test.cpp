// The compact, lock-free path (GCRA and token bucket with S·W < 2^63, a
// 16-byte {debt, last} state decided in 64-bit arithmetic) answers exactly
// as the core `decide` on the 32-byte state, field for field, on traces that
// reach the edges of int64 time and of the quantities.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "keyed/keyed_support.hpp"

namespace sluice::keyed_compact_test {
namespace {

using namespace sluice::keyed_test;

/// A GCRA or token-bucket config whose S·W fits in 63 bits.
config compact_config(rng_t& g, algorithm a) {
  for (;;) {
    config c = model::random_config(a, g);
    if (static_cast<detail::i128>(c.extra) * c.r.window <= detail::i64_max) return c;
  }
}

testing::AssertionResult compact_equals_core(std::uint64_t seed, algorithm a) {
  rng_t g(seed * 0xA24BAED4963EE407ULL + static_cast<std::uint64_t>(a));
  const config c = compact_config(g, a);
  const any_policy p = make_policy(spec_of(c)).value();
  keyed_limiter k(p, {.shards = 1, .auto_purge = false, .hash_seed = seed});
  if (!k.lock_free()) return testing::AssertionFailure() << c.describe() << " is not compact";
  any_state s = fresh_state(p);
  const auto trace = model::random_trace(c, g, 80, /*back=*/true);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const auto& q = trace[i];
    const decision want = decide(p, s, q.now, q.cost);
    const decision got = k.try_acquire_at("key", q.now, q.cost);
    if (!(got == want))
      return testing::AssertionFailure() << "seed " << seed << " (" << c.describe() << ") step " << i
                                         << " now=" << q.now << " cost=" << q.cost << ": got " << show(got) << ", core "
                                         << show(want);
    if (got.allowed && !(*k.state_of("key") == s))
      return testing::AssertionFailure() << "seed " << seed << " step " << i << ": the states differ";
    const decision peeked = k.peek_at("key", q.now, q.cost);
    any_state copy = s;
    if (!(peeked == decide(p, copy, q.now, q.cost)))
      return testing::AssertionFailure() << "seed " << seed << " step " << i << ": peek differs";
  }
  return testing::AssertionSuccess();
}

TEST(KeyedCompact, GcraEqualsTheCoreBitForBit) {
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) ASSERT_TRUE(compact_equals_core(seed, algorithm::gcra));
}

TEST(KeyedCompact, TokenBucketEqualsTheCoreBitForBit) {
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) ASSERT_TRUE(compact_equals_core(seed, algorithm::token_bucket));
}

TEST(KeyedCompact, WideStatesFallBackToTheLockedPath) {
  EXPECT_TRUE(keyed_limiter(gcra::make({1, std::int64_t{1} << 40}, std::int64_t{1} << 22).value()).lock_free());
  EXPECT_FALSE(keyed_limiter(gcra::make({1, std::int64_t{1} << 40}, std::int64_t{1} << 23).value()).lock_free());
  EXPECT_FALSE(keyed_limiter(fixed_window::make({1, 10}).value()).lock_free());
}

}  // namespace
}  // namespace sluice::keyed_compact_test
