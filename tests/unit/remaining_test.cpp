// `remaining` is never negative, even for a state that a shrinking live
// reconfiguration leaves over the new limit (a count above L, a token debt).
#include <gtest/gtest.h>

#include "sluice/core/fixed_window.hpp"
#include "sluice/core/quota.hpp"
#include "sluice/core/reconfigure.hpp"
#include "sluice/core/token_bucket.hpp"

namespace sluice::unit_remaining_test {
namespace {

TEST(Remaining, NeverNegativeAfterAShrinkingReconfigure) {
  const auto big_window = fixed_window::make(rate{5, 10}).value();
  const auto small_window = fixed_window::make(rate{4, 10}).value();
  fixed_window::state fw{};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(decide(big_window, fw, 1, 1).allowed);
  fixed_window::state shrunk = reconfigure(big_window, fw, small_window, 2);
  const decision d = decide(small_window, shrunk, 3, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);

  const auto big_bucket = token_bucket::make(rate{1, 10}, 5).value();
  const auto small_bucket = token_bucket::make(rate{1, 10}, 2).value();
  token_bucket::state tb{};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(decide(big_bucket, tb, 0, 1).allowed);
  token_bucket::state debt = reconfigure(big_bucket, tb, small_bucket, 0);
  const decision e = decide(small_bucket, debt, 0, 1);
  EXPECT_FALSE(e.allowed);
  EXPECT_EQ(e.remaining, 0);

  const auto q5 = quota::make(5).value();
  const auto q2 = quota::make(2).value();
  quota::state qs{};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(decide(q5, qs, 0, 1).allowed);
  quota::state qshrunk = reconfigure(q5, qs, q2, 0);
  EXPECT_EQ(decide(q2, qshrunk, 0, 1).remaining, 0);
}

}  // namespace
}  // namespace sluice::unit_remaining_test
