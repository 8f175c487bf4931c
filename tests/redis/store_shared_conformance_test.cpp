// The shared store conformance suite (tests/conformance/traces.hpp)
// instantiated for the Redis store: 10,000 traces per algorithm and per
// composite (several keys, requests of one and of several checks, checks
// with costs of their own mixed in one request, clock steps back),
// pipelined through decide_many_at, compared with the
// contract's decisions; and a few hundred per algorithm one decide_at at a
// time with every check's own decision. Quantities are drawn within the
// Redis store's exact range (a trace the store refuses at define is drawn
// again, and counted). Each runs through both paths of the store's calls
// (docs/redis.md, "The store and the module"): the Lua library
// (`?module=off`; the test's name is the algorithm's) and the Redis module
// (`?module=on`, a server that loads it; `_module`), which decides every
// algorithm and sends the library only the calls it answers "not in the
// module".
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "conformance/traces.hpp"
#include "redis/conformance_draw.hpp"
#include "redis/store/protocol.hpp"
#include "redis/store_support.hpp"

namespace sluice::redis_test::redis_store_shared_conformance_test {
namespace {

class RedisSharedConformance : public ::testing::TestWithParam<std::tuple<algorithm, store_path>> {
 protected:
  [[nodiscard]] algorithm algo() const { return std::get<0>(GetParam()); }
  [[nodiscard]] store_path path() const { return std::get<1>(GetParam()); }
  /// A store on this test's path, with a command timeout of 10 s (a
  /// loaded machine's slow calls, 65,536-bucket states).
  [[nodiscard]] std::unique_ptr<redis_store> open() const {
    store_options o;
    o.command_timeout = std::chrono::seconds(10);
    return open_store(o, url_of(path()));
  }
};

/// The calls went the test's way: none to the module on the library's
/// path; on the module's, its server's path is the module's, and the calls
/// went to it.
void expect_path(const redis_store& st, store_path path) {
  const auto s = st.redis_stats();
  ASSERT_EQ(s.module_paths.size(), 1U);
  if (path == store_path::library) {
    EXPECT_EQ(s.module_calls, 0U);
    EXPECT_EQ(s.module_paths[0].path, "library (module=off)");
    return;
  }
  // The module decides every algorithm (its SLUICE.INFO letters): only
  // the calls it answers "not in the module" go to the library as well.
  EXPECT_EQ(s.module_paths[0].path, "module (letters b,c,f,g,l,q,s,u)");
  EXPECT_GT(s.module_calls, s.library_calls);
}

TEST_P(RedisSharedConformance, TenThousandTracesPipelined) {
  auto st = open();
  ASSERT_TRUE(st);
  constexpr std::size_t n = 10'000;
  std::size_t refused = 0;
  const auto traces = draw_traces(algo(), n, 1, refused, true);
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
      (std::string(name_of(algo())) + (path() == store_path::module ? " (module)" : "")).c_str(), agree, n, decisions,
      mixed, refused, secs);
  EXPECT_EQ(st->redis_stats().mismatches, 0U);
  EXPECT_EQ(st->stats().store_failures, 0U);
  expect_path(*st, path());
}

TEST_P(RedisSharedConformance, PerCheckDecisionsOneCallAtATime) {
  auto st = open();
  ASSERT_TRUE(st);
  std::size_t refused = 0;
  const auto traces = draw_traces(algo(), 150, 1'000'000, refused, false);
  EXPECT_GT(mixed_cost_steps(traces), 15U);
  for (std::size_t j = 0; j < traces.size(); ++j)
    ASSERT_EQ(conformance::run_conformance(*st, traces[j], "q" + std::to_string(j) + ":"), "");
  expect_path(*st, path());
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, RedisSharedConformance,
                         ::testing::Combine(::testing::ValuesIn(conformance::all_algorithms),
                                            ::testing::Values(store_path::library, store_path::module)),
                         algorithm_path_test_name);

}  // namespace
}  // namespace sluice::redis_test::redis_store_shared_conformance_test
