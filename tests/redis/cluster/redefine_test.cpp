// Redefining a policy on a Redis Cluster carries its states over exactly as
// the memory store's `define_at` does: the single-server redefinition
// scenarios (redefine_scenarios.hpp), each trace's keys under one hash tag
// ("{d<j>}:k0", ...) so its requests of several checks are atomic, every
// third request with an id. The carried states' compare-and-set, like every
// call, must name keys of one slot — the id's key included — or the cluster
// refuses it (CROSSSLOT) and the store would answer a failure, which the
// comparison with the memory store catches.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "redis/cluster/cluster_support.hpp"
#include "redis/redefine_scenarios.hpp"

namespace sluice::redis_test::cluster_redefine_test {
namespace {

using namespace redefine;

class ClusterRedefine : public ::testing::TestWithParam<algorithm> {};

TEST_P(ClusterRedefine, CarriesStatesOverAsTheMemoryStore) {
  store_options o;
  o.command_timeout = std::chrono::seconds(10);  // a loaded machine must not turn into store failures
  auto st = open_cluster_store(o);
  ASSERT_TRUE(st);
  auto mem = exact_memory_store();
  constexpr std::size_t n = 150;
  const auto scenarios = draw(GetParam(), n, 5'000'000, false);
  ASSERT_EQ(scenarios.size(), n);
  std::size_t decisions = 0;
  for (std::size_t j = 0; j < scenarios.size(); ++j) {
    const std::string prefix = "d" + std::to_string(j) + ":";
    const std::string keys = "{d" + std::to_string(j) + "}:";
    std::string err;
    const auto want = run_one_by_one(*mem, scenarios[j], prefix, err, keys, true);
    ASSERT_EQ(err, "") << scenarios[j].t.describe();
    const auto got = run_one_by_one(*st, scenarios[j], prefix, err, keys, true);
    ASSERT_EQ(err, "") << scenarios[j].t.describe();
    ASSERT_EQ(conformance::compare(scenarios[j].t, got, want, true), "") << explain(scenarios[j], got, want);
    decisions += got.size();
  }
  const auto s = st->redis_stats();
  std::printf("cluster redefine %-16s %zu traces, %zu decisions agree with the memory store; %llu carried over\n",
              std::string(name_of(GetParam())).c_str(), scenarios.size(), decisions,
              static_cast<unsigned long long>(s.carried));
  EXPECT_GT(s.carried, 0U);
  EXPECT_EQ(s.mismatches, 0U);
  EXPECT_EQ(s.unknown_config, 0U);
  EXPECT_EQ(s.cross_slot, 0U);
  EXPECT_EQ(s.base.store_failures, 0U);
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, ClusterRedefine, ::testing::ValuesIn(conformance::all_algorithms),
                         algorithm_test_name);

}  // namespace
}  // namespace sluice::redis_test::cluster_redefine_test
