// keyed_limiter: table-driven basics with explicit times.
#include <gtest/gtest.h>

#include <string>

#include "sluice/core/fresh.hpp"
#include "sluice/keyed/keyed.hpp"

namespace sluice::keyed_basic_test {
namespace {

TEST(Keyed, GcraIsLockFreeAndKeysAreIsolated) {
  keyed_limiter k(gcra::make({2, 1000}, 3).value(), {.shards = 4, .hash_seed = 1});
  EXPECT_TRUE(k.lock_free());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(k.try_acquire_at("alice", 0).allowed);
  const decision d = k.try_acquire_at("alice", 0);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, 500);
  EXPECT_TRUE(k.try_acquire_at("bob", 0).allowed);
  EXPECT_EQ(k.size(), 2U);
}

}  // namespace
}  // namespace sluice::keyed_basic_test
