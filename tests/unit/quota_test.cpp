// Quota: N units in all, never refilled. Time plays no part; every denial is
// `never`, and a quota that has spent anything never resets.
// The tables are laid out by hand, one row a line:
// clang-format off
#include "sluice/core/quota.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "unit/rows.hpp"

namespace sluice::unit_quota_test {
namespace {

using test::N;
using test::r;

constexpr tick min = std::numeric_limits<tick>::min();
constexpr tick max = std::numeric_limits<tick>::max();
constexpr std::int64_t big = std::int64_t{1} << 62;

static_assert(std::is_trivially_copyable_v<quota::state>);

TEST(Quota, TenUnitsInAll) {
  const auto p = test::ok(quota::make(10));
  test::play(p, {
                    r(0, 0, false, 10, N, 0),  // nothing spent: fresh
                    r(0, -3, false, 10, N, 0),
                    r(0, 11, false, 10, N, 0),
                    r(0, 1, true, 9, 0, N),
                    r(5, 3, true, 6, 0, N),
                    r(-100, 2, true, 4, 0, N),  // time plays no part
                    r(7, 5, false, 4, N, N),
                    r(1000000, 5, false, 4, N, N),  // waiting does not help
                    r(8, 4, true, 0, 0, N),
                    r(9, 1, false, 0, N, N),
                    r(max, 1, false, 0, N, N),
                    r(min, 1, false, 0, N, N),
                    r(10, 0, false, 0, N, N),
                    r(10, std::numeric_limits<std::int64_t>::max(), false, 0, N, N),
                    r(10, 11, false, 0, N, N),
                });
}

TEST(Quota, ZeroUnitsDeniesEverythingNever) {
  const auto p = test::ok(quota::make(0));
  test::play(p, {
                    r(0, 1, false, 0, N, 0),
                    r(max, 1, false, 0, N, 0),
                    r(0, 0, false, 0, N, 0),
                });
}

TEST(Quota, TwoToThe62) {
  const auto p = test::ok(quota::make(big));
  test::play(p, {
                    r(0, std::numeric_limits<std::int64_t>::max(), false, big, N, 0),
                    r(0, big - 1, true, 1, 0, N),
                    r(0, big, false, 1, N, N),
                    r(0, 1, true, 0, 0, N),
                });
}

TEST(Quota, RefusesBadConfigurationNamingTheField) {
  EXPECT_EQ(test::field_of(quota::make(-1)), "quota");
  EXPECT_EQ(test::field_of(quota::make(big + 1)), "quota");
}

}  // namespace
}  // namespace sluice::unit_quota_test
