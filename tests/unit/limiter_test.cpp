// limiter<Policy, Clock>: a policy, its state and a clock. try_acquire reads
// the clock once and must decide exactly as try_acquire_at at that instant.
#include "sluice/core/limiter.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sluice/sluice.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_limiter_test {
namespace {

struct step {
  tick advance;
  std::int64_t cost;
};

const std::vector<step> steps = {
    {0, 1},  {0, 1}, {0, 1}, {0, 1},   {0, 1},    {0, 1}, {300, 1}, {0, 1}, {0, 2},
    {99, 1}, {1, 1}, {0, 0}, {-50, 1}, {5000, 5}, {0, 6}, {250, 3}, {1, 1}, {0, 1},
};

template <typename Policy>
void same_as_explicit_time(const Policy& p) {
  manual_clock clock;
  limiter<Policy, manual_clock> by_clock(p, clock);
  limiter<Policy, manual_clock> by_time(p, clock);
  tick now = 0;
  for (const step& st : steps) {
    clock.advance(st.advance);
    if (st.advance > 0) now += st.advance;
    SCOPED_TRACE(now);
    EXPECT_EQ(by_clock.try_acquire(st.cost), by_time.try_acquire_at(now, st.cost));
    EXPECT_TRUE(by_clock.state() == by_time.state());
  }
}

TEST(Limiter, TryAcquireReadsTheClockOnce) {
  same_as_explicit_time(test::ok(token_bucket::make(rate{10, 1000}, 5)));
  same_as_explicit_time(test::ok(gcra::make(rate{10, 1000}, 5)));
  same_as_explicit_time(test::ok(fixed_window::make(rate{5, 1000})));
  same_as_explicit_time(test::ok(sliding_log::make(rate{5, 1000})));
  same_as_explicit_time(test::ok(sliding_counter::make(rate{5, 1000})));
  same_as_explicit_time(test::ok(sliding_buckets::make(rate{5, 1000}, 10)));
  same_as_explicit_time(test::ok(leaky_queue::make(rate{10, 1000}, 5)));
  same_as_explicit_time(test::ok(quota::make(7)));
  same_as_explicit_time(test::ok(make_policy(test::spec_of(algorithm::gcra, rate{10, 1000}).burst(5))));
}

// The token bucket of 10 refilling 2 per second (ms ticks), on a manual clock.
TEST(Limiter, TokenBucketOnAManualClock) {
  manual_clock clock;
  limiter<token_bucket, manual_clock> lim(test::ok(token_bucket::make(rate{2, 1000}, 10)), clock);
  int passed = 0;
  for (int i = 0; i < 11; ++i) passed += lim.try_acquire().allowed ? 1 : 0;
  EXPECT_EQ(passed, 10);
  clock.advance(499);
  EXPECT_EQ(lim.try_acquire().retry_after, 1);  // 0.998 tokens
  clock.advance(1);
  EXPECT_TRUE(lim.try_acquire().allowed);  // exactly one token at 0.5 s
  EXPECT_FALSE(lim.try_acquire().allowed);
  // The explicit-time twin reads no clock: a request at 1000 passes though the
  // clock still says 500, and the latest admit moves to 1000.
  EXPECT_TRUE(lim.try_acquire_at(1000).allowed);
  EXPECT_EQ(clock.now(), 500);
  const decision back = lim.try_acquire();  // 500 is read as 1000
  EXPECT_FALSE(back.allowed);
  EXPECT_EQ(back.retry_after, 500 + 500);
}

TEST(Limiter, ResetForgetsEverything) {
  manual_clock clock(50);
  limiter<sliding_log, manual_clock> lim(test::ok(sliding_log::make(rate{2, 100})), clock);
  EXPECT_TRUE(lim.try_acquire(2).allowed);
  EXPECT_FALSE(lim.try_acquire().allowed);
  lim.reset();
  EXPECT_TRUE(lim.state() == sliding_log::state{});
  EXPECT_TRUE(lim.try_acquire(2).allowed);
}

TEST(Limiter, OfAnyPolicyCompilesAndStartsFresh) {
  manual_clock clock;
  const auto p = test::ok(make_policy(test::spec_of(algorithm::leaky_queue, rate{1, 10}).queue(3)));
  limiter<any_policy, manual_clock> lim(p, clock);
  EXPECT_EQ(lim.state().index(), static_cast<std::size_t>(algorithm::leaky_queue));
  int passed = 0;
  for (int i = 0; i < 5; ++i) passed += lim.try_acquire().allowed ? 1 : 0;
  EXPECT_EQ(passed, 3);
  lim.reset();
  EXPECT_EQ(lim.state().index(), static_cast<std::size_t>(algorithm::leaky_queue));
  EXPECT_TRUE(lim.try_acquire().allowed);
}

TEST(Limiter, OfACompositeStartsWithEveryPartFresh) {
  // limiter<all_of> once started from a state with no parts and crashed on
  // its first decision; it must decide as the same composite in any_policy.
  manual_clock clock;
  const any_policy window = test::ok(fixed_window::make(rate{2, 10}));
  const any_policy bucket = test::ok(gcra::make(rate{1, 10}, 3));
  const all_of both = test::ok(all_of::make({window, bucket}));
  const any_of either = test::ok(any_of::make({window, bucket}));
  limiter<all_of, manual_clock> a(both, clock);
  limiter<any_of, manual_clock> b(either, clock);
  limiter<any_policy, manual_clock> a_any(any_policy{both}, clock);
  limiter<any_policy, manual_clock> b_any(any_policy{either}, clock);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(a.try_acquire(), a_any.try_acquire()) << "all_of, request " << i;
    EXPECT_EQ(b.try_acquire(), b_any.try_acquire()) << "any_of, request " << i;
    if (i % 4 == 3) clock.advance(5);
  }
  a.reset();
  EXPECT_TRUE(a.try_acquire().allowed);
}

TEST(Limiter, SteadyClockByDefault) {
  // One token per 10^15 ns (11.6 days): the second request is denied however
  // slowly the test runs, and its wait is at most that.
  constexpr tick period = 1'000'000'000'000'000;
  limiter<token_bucket> lim(test::ok(token_bucket::make(rate{1, period}, 1)));
  EXPECT_TRUE(lim.try_acquire().allowed);
  const decision d = lim.try_acquire();
  EXPECT_FALSE(d.allowed);
  EXPECT_GT(d.retry_after, 0);
  EXPECT_LE(d.retry_after, period);
}

}  // namespace
}  // namespace sluice::unit_limiter_test
