// always_allow and always_deny: the identity elements of composition. Time
// plays no part; always_allow bounds nothing (remaining INT64_MAX) but still
// refuses a cost below 1.
// The tables are laid out by hand, one row a line:
// clang-format off
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "sluice/core/quota.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_always_test {
namespace {

using test::N;
using test::r;

constexpr tick min = std::numeric_limits<tick>::min();
constexpr tick max = std::numeric_limits<tick>::max();
constexpr std::int64_t inf = std::numeric_limits<std::int64_t>::max();

static_assert(std::is_trivially_copyable_v<always_allow::state>);
static_assert(std::is_trivially_copyable_v<always_deny::state>);

TEST(AlwaysAllow, AdmitsEveryPositiveCost) {
  test::play(always_allow{}, {
                                 r(0, 1, true, inf, 0, 0),
                                 r(0, 1, true, inf, 0, 0),
                                 r(0, 1000, true, inf, 0, 0),
                                 r(5, inf, true, inf, 0, 0),
                                 r(min, 1, true, inf, 0, 0),
                                 r(max, 1, true, inf, 0, 0),
                                 r(-1, 7, true, inf, 0, 0),
                                 r(3, 0, false, inf, N, 0),
                                 r(3, -1, false, inf, N, 0),
                                 r(3, std::numeric_limits<std::int64_t>::min(), false, inf, N, 0),
                                 r(4, 2, true, inf, 0, 0),
                                 r(4, 3, true, inf, 0, 0),
                                 r(100, 1, true, inf, 0, 0),
                                 r(99, 1, true, inf, 0, 0),
                                 r(max, inf, true, inf, 0, 0),
                             });
}

TEST(AlwaysDeny, DeniesEverythingNever) {
  test::play(always_deny{}, {
                                r(0, 1, false, 0, N, 0),
                                r(0, 0, false, 0, N, 0),
                                r(0, -1, false, 0, N, 0),
                                r(0, inf, false, 0, N, 0),
                                r(min, 1, false, 0, N, 0),
                                r(max, 1, false, 0, N, 0),
                                r(1, 1, false, 0, N, 0),
                                r(2, 2, false, 0, N, 0),
                                r(3, 3, false, 0, N, 0),
                                r(1000, 1, false, 0, N, 0),
                                r(-1000, 1, false, 0, N, 0),
                                r(5, 1, false, 0, N, 0),
                                r(5, 1, false, 0, N, 0),
                                r(6, 100, false, 0, N, 0),
                                r(7, 1, false, 0, N, 0),
                            });
}

TEST(Always, DecisionsSayNeverNotLater) {
  always_deny::state s;
  const decision d = decide(always_deny{}, s, 0, 1);
  EXPECT_TRUE(d.never_allowed());
  EXPECT_FALSE(d.retry_later());
}

}  // namespace
}  // namespace sluice::unit_always_test
