// Every algorithm against its reference model (models.hpp), decision for
// decision, on random traces: random L, W, S from 1 to 2^62, gaps of 0 to
// anything, clocks that step back, costs from INT64_MIN to INT64_MAX.
#include <gtest/gtest.h>

#include <cstdint>

#include "property/checks.hpp"

namespace sluice::property_model_test {
namespace {

using namespace sluice::model;

constexpr std::uint64_t first_seed = 1;
constexpr std::uint64_t seeds = 600;

template <typename Policy>
class AgreesWithModel : public ::testing::Test {};

TYPED_TEST_SUITE(AgreesWithModel, all_algorithms, algorithm_test_names);

TYPED_TEST(AgreesWithModel, DecisionForDecision) {
  int failures = 0;
  for (std::uint64_t seed = first_seed; seed < first_seed + seeds && failures < 5; ++seed) {
    const auto r = agrees_with_model<TypeParam>(seed);
    EXPECT_TRUE(r);
    failures += r ? 0 : 1;
  }
}

TYPED_TEST(AgreesWithModel, AnyPolicyDecidesAsTheConcreteType) {
  int failures = 0;
  for (std::uint64_t seed = first_seed; seed < first_seed + seeds && failures < 5; ++seed) {
    const auto r = variant_agrees<TypeParam>(seed);
    EXPECT_TRUE(r);
    failures += r ? 0 : 1;
  }
}

}  // namespace
}  // namespace sluice::property_model_test
