// `sluice replay --store redis://...`: the same trace through the memory
// store and through a real Redis prints byte-identical output, for every
// algorithm and composites, with several keys, costs and a clock that steps
// back; keys go under the given prefix (or a fresh one per run).
#include <gtest/gtest.h>

#include <string>

#include "cli_support.hpp"
#include "redis/test_client.hpp"
#include "support/redis_server.hpp"

namespace sluice::cli_replay_redis_test {
namespace {

using test::random_trace;
using test::run_cli;

TEST(ReplayRedis, PrintsExactlyWhatTheMemoryStorePrints) {
  testing::redis_server srv;
  const std::string url = srv.url();
  int i = 0;
  for (const char* policy :
       {"gcra 5/1s burst=3", "token-bucket 3/2s burst=4", "leaky-queue 4/1s queue=3", "fixed-window 4/1s",
        "sliding-counter 5/2s", "sliding-log 3/1s", "sliding-buckets 6/2s buckets=4", "quota 20",
        "all(token-bucket 2/1s burst=2, quota 15)", "any(fixed-window 2/1s, sliding-log 3/2s)"}) {
    const std::string trace = random_trace(static_cast<std::uint64_t>(++i), 300);
    for (const char* format : {"csv", "json"}) {
      const auto memory = run_cli({"replay", "--policy", policy, "--format", format}, trace);
      const auto redis = run_cli({"replay", "--policy", policy, "--format", format, "--store", url}, trace);
      ASSERT_EQ(memory.status, 0) << memory.err;
      ASSERT_EQ(redis.status, 0) << policy << ": " << redis.err;
      EXPECT_EQ(redis.out, memory.out) << policy;
      EXPECT_TRUE(memory.out.find("yes") != std::string::npos || memory.out.find("true") != std::string::npos)
          << policy;
    }
  }
}

TEST(ReplayRedis, OperationsPrintExactlyWhatTheMemoryStorePrints) {
  // Reports and request ids (replays and conflicts) on trace lines: the
  // same rows from Redis as from the memory store, for every algorithm.
  testing::redis_server srv;
  const std::string url = srv.url();
  int i = 100;
  for (const char* policy :
       {"gcra 5/1s burst=3", "token-bucket 3/2s burst=4", "leaky-queue 4/1s queue=3", "fixed-window 4/1s",
        "sliding-counter 5/2s", "sliding-log 3/1s", "sliding-buckets 6/2s buckets=4", "quota 20",
        "all(token-bucket 2/1s burst=2, quota 15)", "any(fixed-window 2/1s, sliding-log 3/2s)"}) {
    const std::string trace = test::random_ops_trace(static_cast<std::uint64_t>(++i), 300);
    const auto memory = run_cli({"replay", "--policy", policy, "--format", "json"}, trace);
    const auto redis = run_cli(
        {"replay", "--policy", policy, "--format", "json", "--store", url, "--store-prefix", "ops" + std::to_string(i)},
        trace);
    ASSERT_EQ(memory.status, 0) << memory.err;
    ASSERT_EQ(redis.status, 0) << policy << ": " << redis.err;
    EXPECT_EQ(redis.out, memory.out) << policy;
    for (const char* outcome : {"\"reported\"", "\"replayed-", "\"id-conflict\""})
      EXPECT_NE(memory.out.find(outcome), std::string::npos) << policy << ": no " << outcome;
  }
}

TEST(ReplayRedis, LeasesPrintExactlyWhatTheMemoryStorePrints) {
  // Concurrency parts decided in Redis: acquires, releases (once, of none,
  // on another key), a repeated id, a refund (a release) and a report.
  testing::redis_server srv;
  const std::string trace =
      "0 a 1 id=j1\n0 a 1 id=j2\n1 a 1\n2 a 1 release=j1\n2 a 1 release=j1\n3 b 1 release=j2\n3 a 1\n12 a 1\n"
      "12 a 1 release=nobody\n0 a 1 id=j1\n14 a 2 refund=j2\n14 a 1 report\n";
  int i = 0;
  for (const char* policy : {"concurrency 2 lease=10s", "all(gcra 5/1s burst=3, concurrency 2 lease=10s)",
                             "any(concurrency 1 lease=5s, quota 3)"}) {
    const auto memory = run_cli({"replay", "--policy", policy}, trace);
    const auto redis = run_cli(
        {"replay", "--policy", policy, "--store", srv.url(), "--store-prefix", "l" + std::to_string(++i)}, trace);
    ASSERT_EQ(memory.status, 0) << memory.err;
    ASSERT_EQ(redis.status, 0) << policy << ": " << redis.err;
    EXPECT_EQ(redis.out, memory.out) << policy;
    for (const char* outcome : {",released,", ",not-held,", ",replayed-yes,", ",refunded,", ",reported,"})
      EXPECT_NE(memory.out.find(outcome), std::string::npos) << policy << ": no " << outcome;
  }
}

TEST(ReplayRedis, KeysGoUnderTheGivenPrefix) {
  testing::redis_server srv;
  const auto r =
      run_cli({"replay", "--policy", "gcra 1/1s", "--store", srv.url(), "--store-prefix", "mine:"}, "0 a\n0 b\n");
  ASSERT_EQ(r.status, 0) << r.err;
  redis::async_client_options co;
  co.where = redis::parse_url(srv.url()).value();
  redis::test_client c(co);
  const auto keys = c.call({"KEYS", "*"});
  const auto* rep = std::get_if<redis::reply>(&keys);
  ASSERT_TRUE(rep && rep->as_array());
  ASSERT_EQ(rep->as_array()->size(), 2U);
  for (const auto& k : *rep->as_array()) EXPECT_TRUE(k.as_string()->starts_with("mine:s:replay:{")) << *k.as_string();
}

TEST(ReplayRedis, AStoreThatIsDownStopsTheReplay) {
  testing::redis_server srv;
  const std::string url = srv.url();
  srv.kill9();
  const auto r = run_cli({"replay", "--policy", "gcra 1/1s", "--store", url}, "0 a\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("the store did not decide"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sluice::cli_replay_redis_test
