// `sluice replay --store redis+cluster://...`: the same trace through the
// memory store and through a real Redis Cluster (3 primaries + 3 replicas)
// prints byte-identical output, for every algorithm and composites, with
// keys on every primary.
#include <gtest/gtest.h>

#include <string>

#include "cli_support.hpp"
#include "support/redis_cluster.hpp"

namespace sluice::cli_replay_redis_cluster_test {
namespace {

using test::random_trace;
using test::run_cli;

TEST(ReplayRedisCluster, PrintsExactlyWhatTheMemoryStorePrints) {
  testing::redis_cluster cluster;
  const std::string url = cluster.url();
  int i = 0;
  for (const char* policy : {"gcra 5/1s burst=3", "fixed-window 4/1s", "sliding-log 3/1s", "quota 20",
                             "all(token-bucket 2/1s burst=2, quota 15)", "any(fixed-window 2/1s, sliding-log 3/2s)"}) {
    const std::string trace = random_trace(static_cast<std::uint64_t>(++i), 200, 12, "user");
    const auto memory = run_cli({"replay", "--policy", policy, "--format", "csv"}, trace);
    const auto redis = run_cli({"replay", "--policy", policy, "--format", "csv", "--store", url}, trace);
    ASSERT_EQ(memory.status, 0) << memory.err;
    ASSERT_EQ(redis.status, 0) << policy << ": " << redis.err;
    EXPECT_EQ(redis.out, memory.out) << policy;
  }
  // Keys went to every primary.
  for (const std::size_t p : cluster.primaries()) {
    const auto n = cluster.cli(p, {"DBSIZE"});
    EXPECT_NE(n.out, "0\n") << cluster.address(p);
  }
}

TEST(ReplayRedisCluster, ABadClusterUrlNamesThePart) {
  const auto r = run_cli({"replay", "--policy", "gcra 1/1s", "--store", "redis+cluster://127.0.0.1:1/2"}, "0 a\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("db"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sluice::cli_replay_redis_cluster_test
