// Denials: exact retry_after (admitted at now + retry_after, denied one tick
// earlier, on a copy of the state) for at least 10,000 random denials per
// algorithm, and a denial never changes the state, not even its bytes.
#include <gtest/gtest.h>

#include <cstdint>

#include "property/checks.hpp"

namespace sluice::property_denial_test {
namespace {

using namespace sluice::model;

template <typename Policy>
class Denials : public ::testing::Test {};

TYPED_TEST_SUITE(Denials, all_algorithms, algorithm_test_names);

constexpr long wanted = 10000;

TYPED_TEST(Denials, RetryAfterIsExactAndStateUntouched) {
  constexpr algorithm a = algorithm_of_type<TypeParam>();
  // Quota and always-* have no "not now": every denial is `never`.
  constexpr bool timeless = a == algorithm::quota || a == algorithm::always_allow || a == algorithm::always_deny;
  denial_counts counts;
  int failures = 0;
  std::uint64_t seed = 1;
  const std::uint64_t last = timeless ? 300 : 20000;
  for (; seed <= last && failures < 5 && (timeless || counts.exact < wanted); ++seed) {
    const auto r = denials_are_exact_and_pure<TypeParam>(seed, counts);
    EXPECT_TRUE(r);
    failures += r ? 0 : 1;
  }
  if (timeless) {
    EXPECT_EQ(counts.exact, 0);
  } else {
    EXPECT_GE(counts.exact, wanted) << "after " << seed - 1 << " seeds";
  }
  this->RecordProperty("exact_denials", static_cast<int>(counts.exact));
  this->RecordProperty("never_denials", static_cast<int>(counts.never_));
}

}  // namespace
}  // namespace sluice::property_denial_test
