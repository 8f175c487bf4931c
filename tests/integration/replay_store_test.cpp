// `sluice replay --store SPEC`: the memory store is the default and decides
// exactly as before; a spec that names no store is a usage error.
#include <gtest/gtest.h>

#include <string>

#include "cli_support.hpp"

namespace sluice::cli_replay_store_test {
namespace {

using test::run_cli;

const char* const keyed_trace = "0 a\n0 a\n0 b 2\n0.5 a\n1 a 3\n-1 b\n";

TEST(ReplayStore, MemoryIsTheDefaultAndDecidesTheSame) {
  for (const char* policy : {"gcra 2/1s burst=2", "all(fixed-window 3/1s, leaky-queue 2/1s)", "sliding-log 2/1s"}) {
    const auto plain = run_cli({"replay", "--policy", policy}, keyed_trace);
    const auto memory = run_cli({"replay", "--policy", policy, "--store", "memory"}, keyed_trace);
    ASSERT_EQ(plain.status, 0) << plain.err;
    ASSERT_EQ(memory.status, 0) << memory.err;
    EXPECT_EQ(memory.out, plain.out) << policy;
    EXPECT_NE(plain.out.find("yes"), std::string::npos);
  }
}

TEST(ReplayStore, AnUnknownStoreIsAUsageErrorNamingTheFlag) {
  const auto r = run_cli({"replay", "--policy", "gcra 1/1s", "--store", "etcd://x"}, keyed_trace);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--store"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'etcd://x' is not a store"), std::string::npos) << r.err;
  const auto empty = run_cli({"replay", "--policy", "gcra 1/1s", "--store", ""}, keyed_trace);
  EXPECT_EQ(empty.status, 2);
  EXPECT_NE(empty.err.find("--store"), std::string::npos) << empty.err;
}

}  // namespace
}  // namespace sluice::cli_replay_store_test
