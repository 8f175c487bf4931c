// Leases through a real Redis Cluster (semantics.md, "Leases in a Redis
// store"): the conformance suite's lease traces (acquires, releases, several
// checks and keys, clock steps back), each trace's keys under one hash tag
// ("{l<seed>}:k0", ...) so its requests of several checks — and its lease
// ids' releases — are one call in one slot; compared with the core and,
// field for field, with the memory store. And a lease id whose checks span
// slots: refused, nothing released. The decisions through the Lua library
// and through the Redis module on every node (/library, /module; releases
// are the library's either way).
#include <gtest/gtest.h>

#include <string>

#include "redis/cluster/cluster_support.hpp"
#include "redis/lease_run.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::redis_test::cluster_lease_test {
namespace {

class ClusterLeases : public ::testing::TestWithParam<cluster_path> {
 protected:
  [[nodiscard]] cluster_path path() const { return GetParam(); }
};

TEST_P(ClusterLeases, TracesAsTheCoreAndTheMemoryStore) {
  store_options o;
  o.command_timeout = std::chrono::seconds(10);
  auto rs = open_on_path(path(), o);
  ASSERT_TRUE(rs);
  memory_store_options mo;
  mo.keyed.auto_purge = false;
  mo.max_policies = 1200;
  memory_store mem(mo);
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    const lease_trace t = conformance::make_lease_trace(seed);
    const std::string prefix = "t" + std::to_string(seed) + ":";
    const std::string tag = "{l" + std::to_string(seed) + "}:";
    const auto core = conformance::reference_answers(t);
    const auto m = run_trace(mem, t, prefix, face::one_call, nullptr, tag);
    const auto got = run_trace(*rs, t, prefix, face::one_call, rs.get(), tag);
    ASSERT_EQ(judge(t, got, m, core), "") << "seed " << seed;
  }
  EXPECT_EQ(rs->redis_stats().mismatches, 0U);
  EXPECT_EQ(rs->stats().store_failures, 0U);
  expect_paths(*rs, path());
}

TEST_P(ClusterLeases, AReleaseAcrossSlotsIsRefusedAndReleasesNothing) {
  auto rs = open_on_path(path());
  ASSERT_TRUE(rs);
  const policy_id p = rs->define("x", policy("concurrency 1")).value();
  const check a{p, "{a}k", 0};
  const std::uint64_t lease = rs->decide_at(one_check(a, 0)).lease;
  ASSERT_NE(lease, 0U);
  const check both[] = {a, check{p, "{b}k", 0}};
  EXPECT_EQ(rs->release_at(both, lease, 1).from, source::error);
  EXPECT_FALSE(rs->decide_at(one_check(a, 2)).d.allowed);  // still held
  EXPECT_EQ(rs->release_at(std::span<const check>(&a, 1), lease, 3).units, 1);
  EXPECT_TRUE(rs->decide_at(one_check(a, 4)).d.allowed);
  expect_paths(*rs, path());
}

INSTANTIATE_TEST_SUITE_P(Paths, ClusterLeases, ::testing::Values(cluster_path::library, cluster_path::module),
                         path_name);

}  // namespace
}  // namespace sluice::redis_test::cluster_lease_test
