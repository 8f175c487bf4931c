// The 64-bit fast paths of GCRA, the sliding window counter, the leaky
// queue, the fixed window and the sliding window with buckets decide bit
// for bit as their 128-bit references (detail::decide_wide),
// field for field and state for state: on the models' random configs and
// traces (extremes, clocks that step back, bad costs), on configs drawn near
// the fast paths' bounds (L·W around 2^61, S·W around 2^63, (Q + 1)·W around
// 2^62), and from states no trace reaches (counts out of range, a `tat` or
// a release far ahead), where the fast path must hand over to the reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "property/models.hpp"
#include "sluice/core/fixed_window.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/leaky_queue.hpp"
#include "sluice/core/sliding_buckets.hpp"
#include "sluice/core/sliding_counter.hpp"

namespace sluice::property_fast_path_test {
namespace {

using namespace sluice::model;

std::string show(const decision& d) {
  return "{allowed=" + std::to_string(d.allowed) + " remaining=" + std::to_string(d.remaining) +
         " retry=" + std::to_string(d.retry_after) + " reset=" + std::to_string(d.reset_after) + "}";
}

/// A config whose L·W (sliding counter) or S·W (GCRA) lies near the bound
/// of the fast path, on either side of it, or well inside it.
config near_bound(algorithm a, rng_t& g) {
  config c;
  c.algo = a;
  const int roll = static_cast<int>(g() % 4);
  c.r.limit = roll == 0 ? uniform(g, 1, 3) : uniform(g, 1, 1000);
  const std::int64_t bound_bits = a == algorithm::gcra ? 63 : a == algorithm::leaky_queue ? 62 : 61;
  if (roll == 3) {
    c.r.window = uniform(g, 1, 1'000'000);
  } else {
    // W about 2^bound / (L or S), give or take a little.
    const bool by_extra = a == algorithm::gcra || a == algorithm::leaky_queue;
    const std::int64_t per = by_extra ? (c.extra = uniform(g, 1, 1000)) : c.r.limit;
    const detail::i128 target = (detail::i128{1} << bound_bits) / per;
    const std::int64_t w =
        static_cast<std::int64_t>(target > (detail::i128{1} << 62) ? (detail::i128{1} << 62) : target);
    c.r.window = std::clamp<std::int64_t>(w + uniform(g, -2, 2), 1, std::int64_t{1} << 62);
  }
  if (a != algorithm::sliding_counter && roll == 3) c.extra = uniform(g, 1, 1000);
  return c;
}

/// Runs `trace` through decide() and decide_wide() from the same state.
template <typename Policy>
testing::AssertionResult same_path(const Policy& p, typename Policy::state s, const config& c,
                                   const std::vector<request>& trace, std::uint64_t seed) {
  typename Policy::state wide = s;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const decision fast_d = decide(p, s, trace[i].now, trace[i].cost);
    const decision wide_d = detail::decide_wide(p, wide, trace[i].now, trace[i].cost);
    if (!(fast_d == wide_d) || !(s == wide))
      return testing::AssertionFailure() << "seed " << seed << " " << c.describe() << " step " << i
                                         << " now=" << trace[i].now << " cost=" << trace[i].cost << ": fast "
                                         << show(fast_d) << ", wide " << show(wide_d)
                                         << (s == wide ? "" : " (states differ)");
  }
  return testing::AssertionSuccess();
}

testing::AssertionResult counter_agrees(std::uint64_t seed) {
  rng_t g(seed * 0x9E3779B97F4A7C15ULL + 3);
  const config c =
      seed % 2 == 0 ? random_config(algorithm::sliding_counter, g) : near_bound(algorithm::sliding_counter, g);
  const auto p = sliding_counter::make(c.r);
  if (!p) return testing::AssertionSuccess();  // L = 0 etc. are refused by make(), not decided
  const auto trace = random_trace(c, g, 60, /*back=*/true);
  sliding_counter::state s;
  if (seed % 5 == 0) {  // a state no trace reaches: counts out of range, a window near the first request's
    const std::int64_t l = c.r.limit;
    s.window = saturating_add(static_cast<tick>(detail::floor_div(trace[0].now, c.r.window)), -uniform(g, 0, 2));
    s.prev = uniform(g, -1, l < detail::i64_max ? l + 1 : l);
    s.curr = uniform(g, -1, l < detail::i64_max ? l + 1 : l);
    s.last = saturating_add(trace[0].now, -uniform(g, 0, 3));
  }
  return same_path(*p, s, c, trace, seed);
}

testing::AssertionResult gcra_agrees(std::uint64_t seed) {
  rng_t g(seed * 0xBF58476D1CE4E5B9ULL + 5);
  const config c = seed % 2 == 0 ? random_config(algorithm::gcra, g) : near_bound(algorithm::gcra, g);
  const auto p = gcra::make(c.r, c.extra);
  if (!p) return testing::AssertionSuccess();
  const auto trace = random_trace(c, g, 60, /*back=*/true);
  gcra::state s;
  if (seed % 5 == 0) {  // a tat anywhere around the first request, even beyond the tolerance
    s.last = trace[0].now;
    s.u = static_cast<detail::i128>(trace[0].now) * c.r.limit +
          static_cast<detail::i128>(uniform(g, -3, 3)) * p->tolerance() / 2 + uniform(g, -2, 2);
  }
  return same_path(*p, s, c, trace, seed);
}

testing::AssertionResult queue_agrees(std::uint64_t seed) {
  rng_t g(seed * 0x94D049BB133111EBULL + 7);
  const config c = seed % 2 == 0 ? random_config(algorithm::leaky_queue, g) : near_bound(algorithm::leaky_queue, g);
  const auto p = leaky_queue::make(c.r, c.extra);
  if (!p) return testing::AssertionSuccess();
  const auto trace = random_trace(c, g, 60, /*back=*/true);
  leaky_queue::state s;
  if (seed % 5 == 0) {  // a release anywhere around the first request, even past the queue's end
    s.last = trace[0].now;
    s.release = static_cast<detail::i128>(trace[0].now) * c.r.limit +
                static_cast<detail::i128>(uniform(g, -3, 3)) * c.extra * c.r.window / 2 + uniform(g, -2, 2);
  }
  return same_path(*p, s, c, trace, seed);
}

testing::AssertionResult window_agrees(std::uint64_t seed) {
  rng_t g(seed * 0xD6E8FEB86659FD93ULL + 9);
  const config c = random_config(algorithm::fixed_window, g);
  const auto p = fixed_window::make(c.r, c.origin);
  if (!p) return testing::AssertionSuccess();
  const auto trace = random_trace(c, g, 60, /*back=*/true);
  fixed_window::state s;
  if (seed % 5 == 0) {  // a count out of range in a window near the first request's
    s.window = saturating_add(p->window_of(trace[0].now), uniform(g, -1, 1));
    s.count = uniform(g, 0, c.r.limit < detail::i64_max ? c.r.limit + 1 : c.r.limit);
  }
  return same_path(*p, s, c, trace, seed);
}

testing::AssertionResult buckets_agree(std::uint64_t seed) {
  rng_t g(seed * 0xA0761D6478BD642FULL + 11);
  const config c = random_config(algorithm::sliding_buckets, g);
  const auto p = sliding_buckets::make(c.r, c.extra);
  if (!p) return testing::AssertionSuccess();
  return same_path(*p, sliding_buckets::state{}, c, random_trace(c, g, 60, /*back=*/true), seed);
}

TEST(FastPath, SlidingBucketsDecidesAsItsReference) {
  for (std::uint64_t seed = 1; seed <= 5000; ++seed) ASSERT_TRUE(buckets_agree(seed));  // rings up to 65536
}

TEST(FastPath, FixedWindowDecidesAsItsReference) {
  for (std::uint64_t seed = 1; seed <= 20000; ++seed) ASSERT_TRUE(window_agrees(seed));
}

TEST(FastPath, SlidingCounterDecidesAsItsReference) {
  for (std::uint64_t seed = 1; seed <= 20000; ++seed) ASSERT_TRUE(counter_agrees(seed));
}

TEST(FastPath, GcraDecidesAsItsReference) {
  for (std::uint64_t seed = 1; seed <= 20000; ++seed) ASSERT_TRUE(gcra_agrees(seed));
}

TEST(FastPath, LeakyQueueDecidesAsItsReference) {
  for (std::uint64_t seed = 1; seed <= 20000; ++seed) ASSERT_TRUE(queue_agrees(seed));
}

}  // namespace
}  // namespace sluice::property_fast_path_test
