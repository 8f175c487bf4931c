// any_policy: building policies from a spec, the fresh state of each, and one
// decide over the variant that must answer exactly as the concrete types.
#include "sluice/core/any.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "unit/rows.hpp"

namespace sluice::unit_any_test {
namespace {

struct request {
  tick now;
  std::int64_t cost;
};

/// A fixed trace: gaps of 0 to 40 ticks, a clock that sometimes steps back,
/// costs 1 to 4 with the odd 0, −1 and oversized one.
std::vector<request> trace() {
  std::mt19937_64 rng(20240601);
  std::vector<request> out;
  tick now = 0;
  for (int i = 0; i < 400; ++i) {
    const auto roll = rng() % 20;
    if (roll == 0) {
      now -= static_cast<tick>(rng() % 50);
    } else if (roll > 8) {
      now += static_cast<tick>(rng() % 41);
    }
    std::int64_t cost = 1 + static_cast<std::int64_t>(rng() % 4);
    const auto odd = rng() % 30;
    if (odd == 0) cost = 0;
    if (odd == 1) cost = -1;
    if (odd == 2) cost = 1000;
    out.push_back({now, cost});
  }
  return out;
}

template <typename Policy>
void same_as_concrete(const Policy& concrete, const spec& sp) {
  SCOPED_TRACE(std::string(name_of(sp.algo)));
  const auto any = test::ok(make_policy(sp));
  EXPECT_EQ(algorithm_of(any), sp.algo);
  ASSERT_TRUE(std::holds_alternative<Policy>(any));
  any_state s = fresh_state(any);
  EXPECT_EQ(s.index(), static_cast<std::size_t>(sp.algo));
  typename Policy::state c{};
  for (const request& q : trace()) {
    SCOPED_TRACE("now=" + std::to_string(q.now) + " cost=" + std::to_string(q.cost));
    ASSERT_EQ(decide(any, s, q.now, q.cost), decide(concrete, c, q.now, q.cost));
    ASSERT_TRUE(std::get<typename Policy::state>(s) == c);
  }
}

TEST(AnyPolicy, DecidesAsTheConcreteTypes) {
  const rate rt{7, 100};
  same_as_concrete(test::ok(fixed_window::make(rt, 30)), test::spec_of(algorithm::fixed_window, rt).origin(30));
  same_as_concrete(test::ok(sliding_log::make(rt)), test::spec_of(algorithm::sliding_log, rt));
  same_as_concrete(test::ok(sliding_counter::make(rt)), test::spec_of(algorithm::sliding_counter, rt));
  same_as_concrete(test::ok(sliding_buckets::make(rt, 4)), test::spec_of(algorithm::sliding_buckets, rt).buckets(4));
  same_as_concrete(test::ok(token_bucket::make(rt, 5)), test::spec_of(algorithm::token_bucket, rt).burst(5));
  same_as_concrete(test::ok(token_bucket::make(rt, 7)), test::spec_of(algorithm::token_bucket, rt));
  same_as_concrete(test::ok(gcra::make(rt, 5)), test::spec_of(algorithm::gcra, rt).burst(5));
  same_as_concrete(test::ok(gcra::make(rt, 7)), test::spec_of(algorithm::gcra, rt));
  same_as_concrete(test::ok(leaky_queue::make(rt, 4)), test::spec_of(algorithm::leaky_queue, rt).queue(4));
  same_as_concrete(test::ok(leaky_queue::make(rt, 7)), test::spec_of(algorithm::leaky_queue, rt));
  same_as_concrete(test::ok(quota::make(60)), test::spec_of(algorithm::quota).units(60));
  same_as_concrete(always_allow{}, test::spec_of(algorithm::always_allow));
  same_as_concrete(always_deny{}, test::spec_of(algorithm::always_deny));
}

TEST(AnyPolicy, ZeroLimitWithoutBurstOrQueueBuildsAndDeniesNever) {
  for (algorithm a : {algorithm::token_bucket, algorithm::gcra, algorithm::leaky_queue, algorithm::fixed_window,
                      algorithm::sliding_log, algorithm::sliding_counter}) {
    SCOPED_TRACE(std::string(name_of(a)));
    const auto p = test::ok(make_policy(test::spec_of(a, rate{0, 10})));
    any_state s = fresh_state(p);
    const decision d = decide(p, s, 0, 1);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.retry_after, never);
  }
}

TEST(AnyPolicy, ErrorsNameTheField) {
  const rate ok_rate{5, 10};
  EXPECT_EQ(test::field_of(make_policy(test::spec_of(algorithm::fixed_window, rate{-1, 10}))), "limit");
  EXPECT_EQ(test::field_of(make_policy(test::spec_of(algorithm::sliding_log, rate{1, 0}))), "window");
  EXPECT_EQ(test::field_of(make_policy(test::spec_of(algorithm::token_bucket, ok_rate).burst(0))), "burst");
  EXPECT_EQ(test::field_of(make_policy(test::spec_of(algorithm::gcra, ok_rate).burst(-2))), "burst");
  EXPECT_EQ(test::field_of(make_policy(test::spec_of(algorithm::sliding_buckets, ok_rate))), "buckets");
  EXPECT_EQ(test::field_of(make_policy(test::spec_of(algorithm::sliding_buckets, ok_rate).buckets(3))), "buckets");
  EXPECT_EQ(test::field_of(make_policy(test::spec_of(algorithm::leaky_queue, ok_rate).queue(0))), "queue");
  EXPECT_EQ(test::field_of(make_policy(test::spec_of(algorithm::quota))), "quota");
  EXPECT_EQ(test::field_of(make_policy(test::spec_of(algorithm::quota).units(-1))), "quota");
}

TEST(AnyPolicy, NamesRoundTrip) {
  for (int i = 0; i < 10; ++i) {
    const auto a = static_cast<algorithm>(i);
    const auto back = algorithm_named(name_of(a));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, a);
    EXPECT_NE(algorithm_names().find(std::string(name_of(a))), std::string::npos);
  }
  EXPECT_EQ(name_of(algorithm::token_bucket), "token-bucket");
  EXPECT_FALSE(algorithm_named("token_bucket").has_value());
  EXPECT_FALSE(algorithm_named("").has_value());
}

TEST(AnyPolicy, WindowOf) {
  EXPECT_EQ(window_of(test::ok(make_policy(test::spec_of(algorithm::sliding_log, rate{3, 77})))), 77);
  EXPECT_EQ(window_of(test::ok(make_policy(test::spec_of(algorithm::quota).units(3)))), 1);
  EXPECT_EQ(window_of(any_policy{always_deny{}}), 1);
}

}  // namespace
}  // namespace sluice::unit_any_test
