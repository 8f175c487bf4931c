// The shared store conformance suite (tests/conformance/traces.hpp)
// instantiated for the Redis store: 10,000 traces per algorithm and per
// composite (several keys, requests of one and of several checks, checks
// with costs of their own mixed in one request, clock steps back),
// pipelined through decide_many_at, compared with the
// contract's decisions; and a few hundred per algorithm one decide_at at a
// time with every check's own decision. Quantities are drawn within the
// Redis store's exact range (a trace the store refuses at define is drawn
// again, and counted).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "conformance/traces.hpp"
#include "redis/conformance_draw.hpp"
#include "redis/store_support.hpp"

namespace sluice::redis_test::redis_store_shared_conformance_test {
namespace {

class RedisSharedConformance : public ::testing::TestWithParam<algorithm> {};

TEST_P(RedisSharedConformance, TenThousandTracesPipelined) {
  auto st = open_patient_store();
  ASSERT_TRUE(st);
  constexpr std::size_t n = 10'000;
  std::size_t refused = 0;
  const auto traces = draw_traces(GetParam(), n, 1, refused, true);
  ASSERT_EQ(traces.size(), n);
  std::size_t decisions = 0;
  for (const auto& t : traces) decisions += t.steps.size();
  const std::size_t mixed = mixed_cost_steps(traces);
  EXPECT_GT(mixed, 1000U);
  const auto t0 = std::chrono::steady_clock::now();
  const auto prefix = [](std::size_t j) { return "c" + std::to_string(j) + ":"; };
  const std::size_t agree = run_in_groups(*st, traces, prefix, prefix);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "shared conformance %-16s traces %zu/%zu agree (%zu decisions, %zu of several checks at mixed costs; %zu "
      "redrawn: past the exact range, or more than 64 buckets), %.1f s\n",
      std::string(name_of(GetParam())).c_str(), agree, n, decisions, mixed, refused, secs);
  EXPECT_EQ(st->redis_stats().mismatches, 0U);
  EXPECT_EQ(st->stats().store_failures, 0U);
}

TEST_P(RedisSharedConformance, PerCheckDecisionsOneCallAtATime) {
  store_options o;
  o.command_timeout = std::chrono::seconds(10);  // 65,536-bucket states on a loaded machine
  auto st = open_store(o);
  ASSERT_TRUE(st);
  std::size_t refused = 0;
  const auto traces = draw_traces(GetParam(), 150, 1'000'000, refused, false);
  EXPECT_GT(mixed_cost_steps(traces), 15U);
  for (std::size_t j = 0; j < traces.size(); ++j)
    ASSERT_EQ(conformance::run_conformance(*st, traces[j], "q" + std::to_string(j) + ":"), "");
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, RedisSharedConformance, ::testing::ValuesIn(conformance::all_algorithms),
                         algorithm_test_name);

}  // namespace
}  // namespace sluice::redis_test::redis_store_shared_conformance_test
