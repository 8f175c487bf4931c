// Extreme values: L, W, S up to 2^62, instants at INT64_MIN and INT64_MAX,
// 200 years idle, costs up to INT64_MAX. Nothing may overflow (this file is
// meant to run under UBSan too), and every answer must still be the model's:
// a full bucket after a long idle, `never` when the instant would lie past
// INT64_MAX.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "property/checks.hpp"

namespace sluice::property_extremes_test {
namespace {

using namespace sluice::model;

constexpr tick min = std::numeric_limits<tick>::min();
constexpr tick max = std::numeric_limits<tick>::max();
constexpr std::int64_t top = std::int64_t{1} << 62;

config config_for(algorithm a, std::int64_t limit, tick window, std::int64_t extra) {
  config c;
  c.algo = a;
  c.r = rate{limit, window};
  c.extra = extra;
  return c;
}

/// Plays `trace` through the policy and the model; every decision must
/// agree, and be internally sensible.
template <typename Policy>
void agree_on(const config& c, const std::vector<request>& trace) {
  SCOPED_TRACE(c.describe());
  const Policy p = build<Policy>(c);
  typename Policy::state s{};
  reference ref(build_model(c));
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const request& q = trace[i];
    SCOPED_TRACE("step " + std::to_string(i) + " now=" + std::to_string(q.now) + " cost=" + std::to_string(q.cost));
    const decision got = decide(p, s, q.now, q.cost);
    ASSERT_EQ(show(got), show(ref.decide(q.now, q.cost)));
    EXPECT_GE(got.remaining, 0);
    EXPECT_GE(got.reset_after, 0);
    EXPECT_GE(got.release_after, 0);
    EXPECT_EQ(got.allowed, got.retry_after == 0);
  }
}

/// The config with every quantity at `q` (buckets: 4, which divides 2^62).
config all_at(algorithm a, std::int64_t q) {
  return config_for(a, q, q, a == algorithm::sliding_buckets ? (q % 4 == 0 ? 4 : 1) : q);
}

TEST(Extremes, TwoToThe62AtTheEdgesOfTime) {
  for_each_algorithm([](auto type) {
    using P = typename decltype(type)::type;
    const config c = all_at(algorithm_of_type<P>(), top);
    agree_on<P>(c, {
                       {min, top},
                       {min, 1},
                       {min, top},
                       {min + 1, std::numeric_limits<std::int64_t>::max()},
                       {0, top},
                       {0, top},
                       {max, top},
                       {max, top},
                       {max, 1},
                       {min, 1},  // clock back across all of time
                       {max, std::numeric_limits<std::int64_t>::max()},
                       {max, std::numeric_limits<std::int64_t>::min()},
                   });
  });
}

// L = 2^62 already admitted in the window, and another 2^62: count + cost is
// 2^63, one past INT64_MAX.
TEST(Extremes, FullWindowOfTwoToThe62PlusTwoToThe62) {
  for_each_algorithm([](auto type) {
    using P = typename decltype(type)::type;
    config c = all_at(algorithm_of_type<P>(), top);
    c.r.window = 1000;
    if (c.algo == algorithm::sliding_buckets) c.extra = 10;
    agree_on<P>(c, {{0, top}, {1, top}, {999, top}, {1000, top}, {1000, top}, {1001, top - 1}, {1500, top}});
  });
}

TEST(Extremes, FullAgainAfterTwoHundredYearsIdle) {
  constexpr tick second = 1'000'000'000;
  constexpr tick years_200 = tick{200} * 31'556'952 * second;
  for_each_algorithm([&](auto type) {
    using P = typename decltype(type)::type;
    const algorithm a = algorithm_of_type<P>();
    if (a == algorithm::quota || a == algorithm::always_allow || a == algorithm::always_deny) return;
    SCOPED_TRACE(std::string(name_of(a)));
    const config c = config_for(a, 10, second, 10);  // burst, queue: 10; buckets: 10 of 0.1 s
    const P p = build<P>(c);
    typename P::state s{};
    ASSERT_TRUE(decide(p, s, -years_200 / 2, 10).allowed);
    const decision d = decide(p, s, years_200 / 2, 10);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 0);
    const tick half = years_200 / 2;
    agree_on<P>(c, {{-half, 10}, {-half, 1}, {half, 10}, {half, 1}});
  });
}

TEST(Extremes, CostUpToInt64MaxIsNever) {
  for_each_algorithm([](auto type) {
    using P = typename decltype(type)::type;
    const algorithm a = algorithm_of_type<P>();
    SCOPED_TRACE(std::string(name_of(a)));
    for (std::int64_t q : {std::int64_t{1}, std::int64_t{1000}, top}) {
      const P p = build<P>(all_at(a, q));
      typename P::state s{};
      for (tick t : {min, tick{0}, max}) {
        const decision d = decide(p, s, t, std::numeric_limits<std::int64_t>::max());
        if (a == algorithm::always_allow) {
          EXPECT_TRUE(d.allowed);
        } else {
          EXPECT_TRUE(d.never_allowed());
        }
      }
    }
  });
}

// Keep admitting cost 1 at the last instants of time with one unit per 2^62
// ticks: the first denial must say `never`, since its chance lies past
// INT64_MAX.
TEST(Extremes, RetryPastTheEndOfTimeIsNever) {
  for_each_algorithm([](auto type) {
    using P = typename decltype(type)::type;
    const algorithm a = algorithm_of_type<P>();
    if (a == algorithm::quota || a == algorithm::always_allow || a == algorithm::always_deny) return;
    SCOPED_TRACE(std::string(name_of(a)));
    const config c = config_for(a, 1, top, a == algorithm::sliding_buckets ? 4 : 1);
    const P p = build<P>(c);
    typename P::state s{};
    int admitted = 0;
    decision d;
    for (tick t : {max - 2, max - 1, max, max, max}) {
      d = decide(p, s, t, 1);
      if (!d.allowed) break;
      ++admitted;
    }
    EXPECT_GE(admitted, 1);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.retry_after, never);
  });
}

TEST(Extremes, RandomEdgeTracesAgreeWithTheModels) {
  for_each_algorithm([](auto type) {
    using P = typename decltype(type)::type;
    int failures = 0;
    for (std::uint64_t seed = 1; seed <= 600 && failures < 5; ++seed) {
      const auto r = agrees_with_model_on_edges<P>(seed);
      EXPECT_TRUE(r);
      failures += r ? 0 : 1;
    }
  });
}

}  // namespace
}  // namespace sluice::property_extremes_test
