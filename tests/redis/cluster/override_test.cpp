// Overrides on a Redis Cluster (docs/redis.md, "Overrides"): a key's
// override key shares its hash slot, so every call stays on one node; the
// override scenarios (redefine_scenarios.hpp) decide as the memory store,
// each trace's keys under one hash tag, every third request with an id (up
// to a change that carried the conservative fallback, never refused); a
// list scans every primary; a key whose hash tag is empty (empty, or
// starting with '}') cannot be overridden (its override key would lie in
// another slot), refused naming `key`. The scenarios run through the library
// and through the Redis module on every node (`_module`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "redis/cluster/cluster_support.hpp"
#include "redis/redefine_scenarios.hpp"

namespace sluice::redis_test::cluster_override_test {
namespace {

using namespace redefine;

/// Each algorithm through the library, and through the module on every node
/// (`_module`; the overrides' writes are the library's either way).
class ClusterOverride : public ::testing::TestWithParam<std::tuple<algorithm, cluster_path>> {};

TEST_P(ClusterOverride, DecidesAsTheMemoryStore) {
  const auto [algo, path] = GetParam();
  store_options o;
  o.command_timeout = std::chrono::seconds(10);  // a loaded machine must not turn into store failures
  auto st = open_on_path(path, o);
  ASSERT_TRUE(st);
  auto mem = exact_memory_store();
  constexpr std::size_t n = 60;
  const auto scenarios = draw_overrides(algo, n, 9'000'000, false);
  ASSERT_EQ(scenarios.size(), n);
  std::size_t decisions = 0;
  for (std::size_t j = 0; j < scenarios.size(); ++j) {
    const std::string prefix = "v" + std::to_string(j) + ":";
    const std::string keys = "{v" + std::to_string(j) + "}:";
    std::string err;
    std::vector<bool> refused;
    std::vector<bool> fell_back;
    const auto got = run_one_by_one(*st, scenarios[j], prefix, err, keys, true, &refused, &fell_back);
    ASSERT_EQ(err, "") << scenarios[j].t.describe();
    ASSERT_EQ(std::count(refused.begin(), refused.end(), true), 0) << scenarios[j].t.describe();
    const auto want = run_one_by_one(*mem, scenarios[j], prefix, err, keys, true);
    ASSERT_EQ(err, "") << scenarios[j].t.describe();
    // Field for field up to the first change that carried the conservative
    // fallback (docs/redis.md, "Overrides"): from there the Redis store is
    // stricter than the exact carry (store_override_test.cpp checks what
    // the fallback holds on one server).
    const std::size_t upto = first_fallback_step(scenarios[j], fell_back, got.size());
    ASSERT_EQ(compare_head(scenarios[j], got, want, upto), "") << explain(scenarios[j], got, want);
    decisions += upto;
  }
  const auto s = st->redis_stats();
  std::printf("cluster overrides %-16s %zu traces, %zu decisions agree with the memory store\n",
              (std::string(name_of(algo)) + path_suffix(path)).c_str(), scenarios.size(), decisions);
  EXPECT_EQ(s.mismatches, 0U);
  EXPECT_EQ(s.unknown_config, 0U);
  EXPECT_EQ(s.cross_slot, 0U);
  EXPECT_EQ(s.base.store_failures, 0U);
  expect_paths(*st, path, "", false);
}

INSTANTIATE_TEST_SUITE_P(
    EveryAlgorithm, ClusterOverride,
    ::testing::Combine(::testing::ValuesIn(conformance::all_algorithms),
                       ::testing::Values(cluster_path::library, cluster_path::module)),
    [](const auto& i) {
      return algorithm_test_name({std::get<0>(i.param), i.index}) + path_suffix(std::get<1>(i.param));
    });

TEST(ClusterOverrides, AFleetSharesThemAndAListScansEveryPrimary) {
  store_options o;
  o.key_prefix = fresh_prefix("clov");
  auto st = open_cluster_store(o);
  auto other = open_cluster_store(o);
  ASSERT_TRUE(st && other);
  const policy_id p = st->define_at("api", policy("quota 2"), 0).value();
  const policy_id q = other->define_at("api", policy("quota 2"), 0).value();
  // Keys on every primary: the list must find them all.
  std::vector<std::string> keys;
  for (std::size_t node = 0; node < 3; ++node)
    for (const auto& t : tags_on(shared_cluster(), node, 2, node * 1000)) keys.push_back("{" + t + "}k");
  ASSERT_EQ(keys.size(), 6U);
  for (const auto& k : keys) {
    ASSERT_TRUE(st->decide_at(one_check(check{p, k}, 1)).d.allowed);
    ASSERT_EQ(st->set_override_at(p, k, policy("quota 5"), 2).value(), override_change::created);
  }
  // The other process: 4 more on each key, not 1 (the unit used carried).
  for (const auto& k : keys) {
    int admitted = 0;
    for (tick t = 3; t < 12; ++t) admitted += other->decide_at(one_check(check{q, k}, t)).d.allowed ? 1 : 0;
    EXPECT_EQ(admitted, 4) << k;
  }
  std::vector<std::string> listed;
  std::string after;
  for (int page = 0; page < 10; ++page) {
    auto got = other->list_overrides(q, after, 4).value();
    for (const auto& ov : got.overrides) listed.push_back(ov.key);
    if (!got.next) break;
    after = *got.next;
  }
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(listed, sorted);
  for (const auto& k : keys) EXPECT_TRUE(other->delete_override_at(q, k, 20).value());
  for (const auto& k : keys) EXPECT_FALSE(st->decide_at(one_check(check{p, k}, 21)).d.allowed);  // 5 used > 2
  const auto s = st->redis_stats();
  EXPECT_EQ(s.cross_slot + s.mismatches + s.base.store_failures, 0U);
}

TEST(ClusterOverrides, AKeyWithAnEmptyHashTagCannotBeOverridden) {
  store_options o;
  o.key_prefix = fresh_prefix("clovkey");
  auto st = open_cluster_store(o);
  ASSERT_TRUE(st);
  const policy_id p = st->define_at("api", policy("quota 2"), 0).value();
  for (const std::string k : {"", "}x", "}"}) {
    const auto r = st->set_override_at(p, k, policy("quota 5"), 1);
    ASSERT_FALSE(r) << k;
    EXPECT_EQ(r.err().field, "key");
    EXPECT_FALSE(st->override_of(p, k).value().has_value());
    EXPECT_FALSE(st->delete_override_at(p, k, 1).value());
  }
  // Such a key still decides under the configured limit.
  EXPECT_TRUE(st->decide_at(one_check(check{p, "}x"}, 2)).d.allowed);
  EXPECT_TRUE(st->decide_at(one_check(check{p, "}x"}, 3)).d.allowed);
  EXPECT_FALSE(st->decide_at(one_check(check{p, "}x"}, 4)).d.allowed);
}

}  // namespace
}  // namespace sluice::redis_test::cluster_override_test
