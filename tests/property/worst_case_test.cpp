// Every closed-form worst case against exhaustive search over all traces on
// small parameters, run through the real limiters; then the closed forms
// against simple step-by-step models on larger, seeded random parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "property/exhaustive_any.hpp"
#include "sluice/core/analysis.hpp"
#include "sluice/core/fixed_window.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/sliding_log.hpp"
#include "sluice/core/token_bucket.hpp"

namespace sluice::property_worst_case_test {
namespace {

constexpr int max_window2 = 8;  // W′ from 1 to 8 ticks

/// The most any trace on the grid 0, g, …, (horizon − 1)·g gets admitted in
/// W′ ticks, for W′ = 1 … max_window2 (index W′): exhaustive_any.hpp's search.
template <typename Policy>
std::array<std::int64_t, max_window2 + 1> search(const Policy& p, tick g, int horizon) {
  const any_policy held{p};
  return test::exhaustive_any<max_window2>(held, g, horizon).run();
}

/// Grid points in the longest W′, plus `extra` before it.
int horizon(tick g, int extra) { return static_cast<int>((max_window2 - 1) / g + 1) + extra; }

TEST(WorstCaseExhaustive, FixedWindowEveryOriginMatchesSearch) {
  for (std::int64_t l = 0; l <= 3; ++l)
    for (tick w = 1; w <= 6; ++w)
      for (tick origin = -1; origin <= w; ++origin)
        for (tick g = 1; g <= 3; ++g) {
          auto p = fixed_window::make({l, w}, origin);
          ASSERT_TRUE(p.ok());
          // Enough points before the window for every phase of the grid
          // against the windows: W / gcd(g, W) of them.
          const auto best = search(*p, g, horizon(g, static_cast<int>(w / std::gcd(g, w))));
          for (tick v = 1; v <= max_window2; ++v) {
            SCOPED_TRACE(::testing::Message()
                         << "L=" << l << " W=" << w << " origin=" << origin << " g=" << g << " W'=" << v);
            EXPECT_EQ(worst_case(*p, v, g), best[static_cast<std::size_t>(v)]);
          }
        }
}

TEST(WorstCaseExhaustive, SlidingLogMatchesSearch) {
  for (std::int64_t l = 0; l <= 3; ++l)
    for (tick w = 1; w <= 6; ++w)
      for (tick g = 1; g <= 3; ++g) {
        auto p = sliding_log::make({l, w});
        ASSERT_TRUE(p.ok());
        const auto best = search(*p, g, horizon(g, 2));
        for (tick v = 1; v <= max_window2; ++v) {
          SCOPED_TRACE(::testing::Message() << "L=" << l << " W=" << w << " g=" << g << " W'=" << v);
          EXPECT_EQ(worst_case(*p, v, g), best[static_cast<std::size_t>(v)]);
        }
      }
}

template <typename Policy>
void bucket_matches_search() {
  for (std::int64_t l = 0; l <= 3; ++l)
    for (std::int64_t s = 1; s <= 3; ++s)
      for (tick w = 1; w <= 6; ++w)
        for (tick g = 1; g <= 3; ++g) {
          auto p = Policy::make({l, w}, s);
          ASSERT_TRUE(p.ok());
          const auto best = search(*p, g, horizon(g, 2));
          for (tick v = 1; v <= max_window2; ++v) {
            SCOPED_TRACE(::testing::Message() << "L=" << l << " S=" << s << " W=" << w << " g=" << g << " W'=" << v);
            EXPECT_EQ(worst_case(*p, v, g), best[static_cast<std::size_t>(v)]);
          }
        }
}

TEST(WorstCaseExhaustive, TokenBucketMatchesSearch) { bucket_matches_search<token_bucket>(); }
TEST(WorstCaseExhaustive, GcraMatchesSearch) { bucket_matches_search<gcra>(); }

/// The token bucket's greedy schedule, one grid step at a time, in the
/// policy's own units (1/W token): the model the closed form compresses.
std::int64_t bucket_greedy(std::int64_t l, tick w, std::int64_t s, tick v, tick g) {
  const std::int64_t full = s * w;
  std::int64_t tokens = full;
  std::int64_t most = 0;
  for (tick t = 0; t < v; t += g) {
    if (t > 0) tokens = std::min(full, tokens + l * g);
    most += tokens / w;
    tokens %= w;
  }
  return most;
}

/// The fixed window's count by trying every start p of the run of points
/// within one period of the grid against the windows.
std::int64_t fixed_by_starts(std::int64_t l, tick w, tick origin, tick v, tick g) {
  std::int64_t best = 0;
  const tick m = (v - 1) / g;
  const tick period = w / std::gcd(g, w) * g;  // p and p + period see the same phase
  for (tick p = 0; p < period; p += g) {
    std::int64_t windows = 0;
    std::int64_t last = -1;
    for (tick i = 0; i <= m; ++i) {
      const tick t = p + i * g;
      const std::int64_t k = (t - origin + 1000 * w) / w;  // t − origin ≥ −w here
      if (k != last) ++windows, last = k;
    }
    best = std::max(best, windows * l);
  }
  return best;
}

TEST(WorstCaseRandom, TokenBucketMatchesGreedyOnLargerParameters) {
  std::mt19937_64 rng(96);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int n = 0; n < 20000; ++n) {
    const std::int64_t l = pick(0, 50);
    const tick w = pick(1, 200);
    const std::int64_t s = pick(1, 60);
    const tick v = pick(1, 600);
    const tick g = pick(1, 12);
    auto tb = token_bucket::make({l, w}, s);
    auto gc = gcra::make({l, w}, s);
    ASSERT_TRUE(tb.ok() && gc.ok());
    const std::int64_t want = l == 0 ? 0 : bucket_greedy(l, w, s, v, g);
    SCOPED_TRACE(::testing::Message() << "L=" << l << " S=" << s << " W=" << w << " g=" << g << " W'=" << v);
    ASSERT_EQ(worst_case(*tb, v, g), want);
    ASSERT_EQ(worst_case(*gc, v, g), want);
  }
}

TEST(WorstCaseRandom, FixedWindowMatchesEveryStartOnLargerParameters) {
  std::mt19937_64 rng(960);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int n = 0; n < 5000; ++n) {
    const std::int64_t l = pick(0, 20);
    const tick w = pick(1, 60);
    const tick origin = pick(0, w - 1);
    const tick v = pick(1, 300);
    const tick g = pick(1, 80);
    auto p = fixed_window::make({l, w}, origin);
    ASSERT_TRUE(p.ok());
    SCOPED_TRACE(::testing::Message() << "L=" << l << " W=" << w << " origin=" << origin << " g=" << g << " W'=" << v);
    ASSERT_EQ(worst_case(*p, v, g), fixed_by_starts(l, w, origin, v, g));
  }
}

}  // namespace
}  // namespace sluice::property_worst_case_test
