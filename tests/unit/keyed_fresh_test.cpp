// is_fresh (sluice/fresh.hpp): when each algorithm's state is back to fresh,
// row by row with explicit times.
#include <gtest/gtest.h>

#include "sluice/core/fresh.hpp"

namespace sluice::unit_keyed_fresh_test {
namespace {

TEST(IsFresh, TokenBucketIsFreshWhenFullAndNotBehindTheLatestAdmit) {
  const auto p = token_bucket::make({1, 10}, 2).value();  // 1 token per 10 ticks
  token_bucket::state s{};
  EXPECT_TRUE(is_fresh(p, s, 0));
  ASSERT_TRUE(decide(p, s, 100, 1).allowed);
  EXPECT_FALSE(is_fresh(p, s, 100));
  EXPECT_FALSE(is_fresh(p, s, 109));
  EXPECT_TRUE(is_fresh(p, s, 110));  // full again
  EXPECT_FALSE(is_fresh(p, s, 50));  // behind the latest admit: read as at it
}

TEST(IsFresh, GcraIsFreshOnceTheTheoreticalArrivalTimeHasPassed) {
  const auto p = gcra::make({1, 10}, 2).value();
  gcra::state s{};
  EXPECT_TRUE(is_fresh(p, s, -5));
  ASSERT_TRUE(decide(p, s, 100, 2).allowed);  // tat = 120
  EXPECT_FALSE(is_fresh(p, s, 119));
  EXPECT_TRUE(is_fresh(p, s, 120));
  EXPECT_FALSE(is_fresh(p, s, 99));
}

TEST(IsFresh, FixedWindowIsFreshInALaterWindow) {
  const auto p = fixed_window::make({3, 10}, 5).value();  // windows [5, 15), [15, 25), ...
  fixed_window::state s{};
  EXPECT_TRUE(is_fresh(p, s, 0));
  ASSERT_TRUE(decide(p, s, 7, 1).allowed);
  EXPECT_FALSE(is_fresh(p, s, 14));
  EXPECT_TRUE(is_fresh(p, s, 15));
  EXPECT_FALSE(is_fresh(p, s, 4));
}

TEST(IsFresh, SlidingLogIsFreshWhenItsNewestUnitHasLeft) {
  const auto p = sliding_log::make({3, 10}).value();
  sliding_log::state s{};
  ASSERT_TRUE(decide(p, s, 0, 1).allowed);
  ASSERT_TRUE(decide(p, s, 4, 1).allowed);
  EXPECT_FALSE(is_fresh(p, s, 13));  // the unit of 4 is in (3, 13]
  EXPECT_TRUE(is_fresh(p, s, 14));
}

TEST(IsFresh, SlidingCounterIsFreshTwoWindowsLater) {
  const auto p = sliding_counter::make({3, 10}).value();
  sliding_counter::state s{};
  ASSERT_TRUE(decide(p, s, 12, 1).allowed);  // window 1
  EXPECT_FALSE(is_fresh(p, s, 29));          // window 2 still weighs window 1
  EXPECT_TRUE(is_fresh(p, s, 30));
}

TEST(IsFresh, SlidingBucketsIsFreshWhenTheWindowIsEmpty) {
  const auto p = sliding_buckets::make({3, 10}, 5).value();  // sub-windows of 2
  sliding_buckets::state s{};
  EXPECT_TRUE(is_fresh(p, s, 0));
  ASSERT_TRUE(decide(p, s, 3, 2).allowed);  // sub-window 1
  EXPECT_FALSE(is_fresh(p, s, 11));         // sub-windows 1..5
  EXPECT_TRUE(is_fresh(p, s, 12));          // sub-windows 2..6
  EXPECT_FALSE(is_fresh(p, s, 0));          // behind the latest admit
}

TEST(IsFresh, LeakyQueueIsFreshWhenANewUnitWouldLeaveAtOnce) {
  const auto p = leaky_queue::make({1, 10}, 3).value();  // one unit leaves every 10 ticks
  leaky_queue::state s{};
  ASSERT_TRUE(decide(p, s, 0, 2).allowed);  // released at 0 and 10
  EXPECT_FALSE(is_fresh(p, s, 10));         // the unit of 10 is still counted
  EXPECT_FALSE(is_fresh(p, s, 19));         // empty, but a new unit would wait until 20
  EXPECT_TRUE(is_fresh(p, s, 20));
}

TEST(IsFresh, QuotaOnlyWhenUnusedAndComposites) {
  const auto q = quota::make(5).value();
  EXPECT_TRUE(is_fresh(q, quota::state{0}, 0));
  EXPECT_FALSE(is_fresh(q, quota::state{1}, 1'000'000'000));
  const any_policy all = all_of::make({gcra::make({1, 10}, 1).value(), always_allow{}}).value();
  any_state s = fresh_state(all);
  EXPECT_TRUE(is_fresh(all, s, 0));
  ASSERT_TRUE(decide(all, s, 0, 1).allowed);
  EXPECT_FALSE(is_fresh(all, s, 9));
  EXPECT_TRUE(is_fresh(all, s, 10));
  EXPECT_TRUE(is_fresh(any_policy{always_deny{}}, any_state{always_deny::state{}}, 0));
}

}  // namespace
}  // namespace sluice::unit_keyed_fresh_test
