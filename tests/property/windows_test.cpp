// What each window promises: a sliding log never more than L in any window
// (t − W, t]; a fixed window 2L across a boundary, and never more.
#include <gtest/gtest.h>

#include <cstdint>

#include "property/checks.hpp"

namespace sluice::property_windows_test {
namespace {

using namespace sluice::model;

TEST(SlidingLogBound, NeverMoreThanLInAnyWindow) {
  int failures = 0;
  for (std::uint64_t seed = 1; seed <= 1500 && failures < 5; ++seed) {
    const auto r = log_never_exceeds_limit(seed);
    EXPECT_TRUE(r);
    failures += r ? 0 : 1;
  }
}

TEST(FixedWindowBound, TwoLAtABoundaryAndNeverMore) {
  int failures = 0;
  for (std::uint64_t seed = 1; seed <= 1500 && failures < 5; ++seed) {
    const auto r = fixed_window_doubles_at_a_boundary(seed);
    EXPECT_TRUE(r);
    failures += r ? 0 : 1;
  }
}

}  // namespace
}  // namespace sluice::property_windows_test
