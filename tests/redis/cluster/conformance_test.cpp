// The shared store conformance suite (tests/conformance/traces.hpp) against
// a real Redis Cluster: the same traces and judge as the single-server runs
// (store_shared_conformance_test.cpp), pipelined through decide_many_at,
// every algorithm and the composites. Each trace's keys share one hash tag
// ("{c<j>}:k0", ...), so its requests of several checks are atomic; the
// traces' tags spread over every primary, which the test checks. Each runs
// on two clusters: the shared one through the Lua library (`?module=off`;
// the test's name is the algorithm's), and a mixed one whose every node but
// one loads the Redis module, through `?module=auto` (`_mixed_module`):
// each node's connection takes its own path, and the decisions are exact.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "redis/cluster/cluster_support.hpp"
#include "redis/conformance_draw.hpp"

namespace sluice::redis_test::cluster_conformance_test {
namespace {

class ClusterConformance : public ::testing::TestWithParam<std::tuple<algorithm, cluster_path>> {
 protected:
  [[nodiscard]] algorithm algo() const { return std::get<0>(GetParam()); }
  [[nodiscard]] cluster_path path() const { return std::get<1>(GetParam()); }
  [[nodiscard]] bool mixed() const { return path() == cluster_path::mixed_module; }
  [[nodiscard]] testing::redis_cluster& cluster() const { return cluster_of(path()); }
  [[nodiscard]] std::unique_ptr<redis_store> open() const {
    store_options o;
    o.command_timeout = std::chrono::seconds(10);  // a loaded CI machine must not turn into store failures
    return open_on_path(path(), o);
  }
  /// The calls went the test's way: none to the module through the
  /// library; on the mixed cluster, node 0 by the library and the others by
  /// the module.
  void expect_paths(const redis_store& st) const { redis_test::expect_paths(st, path(), cluster().address(0)); }
};

std::string key_prefix(std::size_t j) { return "{c" + std::to_string(j) + "}:"; }

TEST_P(ClusterConformance, TracesPipelinedOverEveryPrimary) {
  auto& cluster = this->cluster();
  auto st = open();
  ASSERT_TRUE(st);
  // The first 2,000 of the single-server run's 10,000 traces (the same
  // draws): what the cluster adds is routing, which every trace exercises;
  // 10,000 cost CI's ASan run two minutes.
  constexpr std::size_t n = 2'000;
  std::size_t refused = 0;
  const auto traces = draw_traces(algo(), n, 1, refused, true);
  ASSERT_EQ(traces.size(), n);

  // Where the traces' tags live: every primary gets some.
  std::map<std::size_t, std::size_t> per_primary;
  const auto nodes = cluster.nodes(cluster.live_node());
  for (std::size_t j = 0; j < n; ++j) {
    const int slot = *redis::braced_key_slot(key_prefix(j) + "k0");
    for (const auto& nd : nodes)
      for (const auto& [a, b] : nd.slots)
        if (nd.primary && slot >= a && slot <= b) ++per_primary[std::hash<std::string>{}(nd.address)];
  }
  EXPECT_EQ(per_primary.size(), cluster.primaries().size());
  std::string spread;
  for (const auto& [addr, count] : per_primary) spread += " " + std::to_string(count);

  std::size_t decisions = 0;
  for (const auto& t : traces) decisions += t.steps.size();
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t agree = run_in_groups(
      *st, traces, [](std::size_t j) { return "c" + std::to_string(j) + ":"; }, key_prefix);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto s = st->redis_stats();
  std::printf(
      "cluster conformance %-16s traces %zu/%zu agree (%zu decisions; traces per primary:%s), %.1f s, "
      "%llu slot-map reads\n",
      (std::string(name_of(algo())) + (mixed() ? " (mixed module)" : "")).c_str(), agree, n, decisions, spread.c_str(),
      secs, static_cast<unsigned long long>(s.topology_refreshes));
  EXPECT_EQ(s.mismatches, 0U);
  EXPECT_EQ(s.base.store_failures, 0U);
  EXPECT_EQ(s.cross_slot, 0U);
  expect_paths(*st);
}

TEST_P(ClusterConformance, PerCheckDecisionsOneCallAtATime) {
  auto st = open();  // 65,536-bucket states on a loaded machine: a command timeout of 10 s
  ASSERT_TRUE(st);
  std::size_t refused = 0;
  const auto traces = draw_traces(algo(), 150, 1'000'000, refused, false);
  for (std::size_t j = 0; j < traces.size(); ++j)
    ASSERT_EQ(conformance::run_conformance(*st, traces[j], "q" + std::to_string(j) + ":", key_prefix(j)), "");
  expect_paths(*st);
}

INSTANTIATE_TEST_SUITE_P(
    EveryAlgorithm, ClusterConformance,
    ::testing::Combine(::testing::ValuesIn(conformance::all_algorithms),
                       ::testing::Values(cluster_path::library, cluster_path::mixed_module)),
    [](const auto& i) {
      return algorithm_test_name({std::get<0>(i.param), i.index}) + path_suffix(std::get<1>(i.param));
    });

}  // namespace
}  // namespace sluice::redis_test::cluster_conformance_test
