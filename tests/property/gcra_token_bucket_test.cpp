// GCRA and the token bucket with the same L, W, S: the same decisions, field
// for field, on random traces with clocks that step back (semantics.md: "the
// same decisions as the token bucket ... on every trace").
#include <gtest/gtest.h>

#include <cstdint>

#include "property/checks.hpp"

namespace sluice::property_gcra_token_bucket_test {
namespace {

using namespace sluice::model;

TEST(GcraIsTokenBucket, OnRandomTraces) {
  int failures = 0;
  for (std::uint64_t seed = 1; seed <= 10000 && failures < 5; ++seed) {
    const auto r = gcra_is_token_bucket(seed);
    EXPECT_TRUE(r);
    failures += r ? 0 : 1;
  }
}

}  // namespace
}  // namespace sluice::property_gcra_token_bucket_test
