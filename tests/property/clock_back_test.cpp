// Clocks that step back earn nothing: a request before the latest admit
// decides exactly as at the latest admit (durations still counted from the
// caller's now), so inserting backward steps never adds an admit.
#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>

#include "property/checks.hpp"

namespace sluice::property_clock_back_test {
namespace {

using namespace sluice::model;

template <typename Policy>
class ClockBack : public ::testing::Test {};

TYPED_TEST_SUITE(ClockBack, all_algorithms, algorithm_test_names);

TYPED_TEST(ClockBack, EarnsNoAdmit) {
  long stepped_back = 0;
  int failures = 0;
  for (std::uint64_t seed = 1; seed <= 1500 && failures < 5; ++seed) {
    const auto r = clock_back_earns_nothing<TypeParam>(seed, stepped_back);
    EXPECT_TRUE(r);
    failures += r ? 0 : 1;
  }
  // The traces did step back behind an admit (always-deny never admits).
  if constexpr (!std::is_same_v<TypeParam, always_deny>) {
    EXPECT_GT(stepped_back, 1000);
  }
}

}  // namespace
}  // namespace sluice::property_clock_back_test
