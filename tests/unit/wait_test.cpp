// acquire(cost, deadline) on the manual clock: every wait is an advance of
// the clock by the sleeper, so these tests take no real time. Each test
// checks where the clock ended (how long it "slept"), how many sleeps, and
// that a wait that gives up took nothing.
#include "sluice/core/wait.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "sluice/sluice.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_wait_test {
namespace {

using test::N;

/// One token per 10 ticks, burst 1, on a manual clock.
struct bucket_fixture {
  manual_clock clock;
  manual_sleeper sleep{clock};
  limiter<token_bucket, manual_clock> lim{test::ok(token_bucket::make(rate{1, 10}, 1)), clock};
};

TEST(Acquire, AdmitsAtOnceWithoutSleeping) {
  bucket_fixture f;
  const wait_result w = acquire(f.lim, 1, 100, f.clock, f.sleep);
  EXPECT_EQ(w.status, wait_status::admitted);
  EXPECT_TRUE(w.admitted());
  EXPECT_EQ(w.at, 0);
  EXPECT_EQ(w.sleeps, 0);
  EXPECT_EQ(f.sleep.sleeps(), 0);
  EXPECT_TRUE(w.last.allowed);
}

TEST(Acquire, SleepsExactlyUntilTheSlotThenAdmits) {
  bucket_fixture f;
  ASSERT_TRUE(f.lim.try_acquire_at(0).allowed);
  const wait_result w = acquire(f.lim, 1, 100, f.clock, f.sleep);
  EXPECT_EQ(w.status, wait_status::admitted);
  EXPECT_EQ(w.at, 10);
  EXPECT_EQ(w.sleeps, 1);
  EXPECT_EQ(f.sleep.latest(), 10);
  EXPECT_EQ(f.clock.now(), 10);
  EXPECT_EQ(next_allowed_at(f.lim, 10), 20);  // it consumed
}

TEST(Acquire, DeadlineExactlyAtTheSlotIsMet) {
  bucket_fixture f;
  ASSERT_TRUE(f.lim.try_acquire_at(0).allowed);
  const wait_result w = acquire(f.lim, 1, 10, f.clock, f.sleep);
  EXPECT_EQ(w.status, wait_status::admitted);
  EXPECT_EQ(w.at, 10);
}

TEST(Acquire, ADeadlineThatCannotBeMetReturnsAtOnceAndTakesNothing) {
  bucket_fixture f;
  ASSERT_TRUE(f.lim.try_acquire_at(0).allowed);
  const auto before = f.lim.state();
  const wait_result w = acquire(f.lim, 1, 9, f.clock, f.sleep);
  EXPECT_EQ(w.status, wait_status::timed_out);
  EXPECT_EQ(w.at, 10);  // when it would have passed
  EXPECT_EQ(w.sleeps, 0);
  EXPECT_EQ(f.clock.now(), 0);  // no time went by
  EXPECT_EQ(w.last.retry_after, 10);
  EXPECT_TRUE(f.lim.state() == before);
}

TEST(Acquire, ACostThatCanNeverPassReturnsAtOnce) {
  bucket_fixture f;
  const wait_result w = acquire(f.lim, 2, N, f.clock, f.sleep);
  EXPECT_EQ(w.status, wait_status::never_admitted);
  EXPECT_EQ(w.at, N);
  EXPECT_EQ(w.sleeps, 0);
  EXPECT_EQ(f.clock.now(), 0);
}

TEST(Acquire, ReChecksAfterEachSleep) {
  // Another caller takes the token the moment it appears at 10; the waiter
  // must see that, sleep again, and pass at 20.
  bucket_fixture f;
  ASSERT_TRUE(f.lim.try_acquire_at(0).allowed);
  int stolen = 0;
  f.sleep.on_wake([&](tick now) {
    if (stolen++ == 0) {
      EXPECT_TRUE(f.lim.try_acquire_at(now).allowed);
    }
  });
  const wait_result w = acquire(f.lim, 1, 100, f.clock, f.sleep);
  EXPECT_EQ(w.status, wait_status::admitted);
  EXPECT_EQ(w.at, 20);
  EXPECT_EQ(w.sleeps, 2);
  EXPECT_EQ(f.clock.now(), 20);
}

TEST(Acquire, GivesUpWhenOthersPushItPastTheDeadline) {
  bucket_fixture f;
  ASSERT_TRUE(f.lim.try_acquire_at(0).allowed);
  f.sleep.on_wake([&](tick now) { EXPECT_TRUE(f.lim.try_acquire_at(now).allowed); });
  const wait_result w = acquire(f.lim, 1, 15, f.clock, f.sleep);
  EXPECT_EQ(w.status, wait_status::timed_out);
  EXPECT_EQ(w.at, 20);
  EXPECT_EQ(w.sleeps, 1);
  EXPECT_EQ(f.clock.now(), 10);  // slept to 10 (≤ 15), never toward 20
}

TEST(Acquire, ADeadlineAlreadyPastIsAPlainTry) {
  manual_clock clock(100);
  manual_sleeper sleep(clock);
  limiter<token_bucket, manual_clock> lim(test::ok(token_bucket::make(rate{1, 10}, 1)), clock);
  const wait_result first = acquire(lim, 1, 50, clock, sleep);
  EXPECT_EQ(first.status, wait_status::admitted);
  EXPECT_EQ(first.at, 100);
  const wait_result second = acquire(lim, 1, 50, clock, sleep);
  EXPECT_EQ(second.status, wait_status::timed_out);
  EXPECT_EQ(second.at, 110);
  EXPECT_EQ(sleep.sleeps(), 0);
}

TEST(Acquire, ForARelativeTimeout) {
  bucket_fixture f;
  f.clock.advance(1000);
  ASSERT_TRUE(f.lim.try_acquire_at(1000).allowed);
  EXPECT_EQ(acquire_for(f.lim, 1, 9, f.clock, f.sleep).status, wait_status::timed_out);
  const wait_result w = acquire_for(f.lim, 1, 10, f.clock, f.sleep);
  EXPECT_EQ(w.status, wait_status::admitted);
  EXPECT_EQ(w.at, 1010);
  // A huge timeout saturates instead of overflowing.
  EXPECT_EQ(acquire_for(f.lim, 1, N, f.clock, f.sleep).at, 1020);
}

TEST(Acquire, ForAChronoTimeoutInNanoseconds) {
  // One token per 10 ns, burst 1, on a clock that counts nanoseconds.
  bucket_fixture f;
  ASSERT_TRUE(f.lim.try_acquire_at(0).allowed);
  EXPECT_EQ(acquire_for(f.lim, 1, std::chrono::nanoseconds{9}, f.clock, f.sleep).status, wait_status::timed_out);
  const wait_result w = acquire_for(f.lim, 1, std::chrono::nanoseconds{10}, f.clock, f.sleep);
  EXPECT_EQ(w.status, wait_status::admitted);
  EXPECT_EQ(w.at, 10);
  // 1 µs is 1000 ticks: the next slot, 20, is within it.
  EXPECT_EQ(acquire_for(f.lim, 1, std::chrono::microseconds{1}, f.clock, f.sleep).at, 20);
  // Past int64 nanoseconds saturates instead of overflowing.
  EXPECT_EQ(acquire_for(f.lim, 1, std::chrono::hours{N}, f.clock, f.sleep).at, 30);
}

TEST(Acquire, OnTheSteadyClockForAChronoTimeout) {
  // Nothing to wait for: admitted at once, or never, with no sleep.
  limiter<token_bucket> lim{test::ok(token_bucket::make(rate{1, std::chrono::hours{1}}, 1))};
  EXPECT_EQ(acquire_for(lim, 1, std::chrono::milliseconds{50}).status, wait_status::admitted);
  const wait_result w = acquire_for(lim, 1, std::chrono::milliseconds{50});
  EXPECT_EQ(w.status, wait_status::timed_out);
  EXPECT_EQ(w.sleeps, 0);
  EXPECT_EQ(acquire_for(lim, 2, std::chrono::milliseconds{50}).status, wait_status::never_admitted);
}

TEST(Acquire, WaitsOnAQueueForItsTurn) {
  // A leaky queue of 1 unit per 10 ticks and Q = 2: two pass at once (one
  // leaving at 0, one at 10); the third waits until one tick after 0 leaves.
  manual_clock clock;
  manual_sleeper sleep(clock);
  limiter<leaky_queue, manual_clock> lim(test::ok(leaky_queue::make(rate{1, 10}, 2)), clock);
  EXPECT_TRUE(acquire(lim, 1, 0, clock, sleep).admitted());
  EXPECT_TRUE(acquire(lim, 1, 0, clock, sleep).admitted());
  const wait_result w = acquire(lim, 1, 100, clock, sleep);
  EXPECT_EQ(w.at, 1);
  EXPECT_EQ(w.last.release_after, 19);  // it leaves at 20
}

TEST(Acquire, OnAnyPolicyAndComposites) {
  manual_clock clock;
  manual_sleeper sleep(clock);
  const any_policy tb = test::ok(token_bucket::make(rate{1, 10}, 1));
  const any_policy fw = test::ok(fixed_window::make(rate{1, 25}));
  limiter<any_policy, manual_clock> lim(any_policy{test::ok(all_of::make({tb, fw}))}, clock);
  EXPECT_EQ(acquire(lim, 1, 100, clock, sleep).at, 0);
  const wait_result w = acquire(lim, 1, 100, clock, sleep);
  EXPECT_EQ(w.at, 25);  // the bucket is ready at 10, the window at 25
  EXPECT_EQ(w.sleeps, 1);
}

TEST(Acquire, OnAGuardedLimiter) {
  manual_clock clock;
  manual_sleeper sleep(clock);
  guarded<limiter<gcra, manual_clock>> g(std::in_place, test::ok(gcra::make(rate{1, 10}, 1)), clock);
  EXPECT_TRUE(acquire(g, 1, 0, clock, sleep).admitted());
  EXPECT_EQ(acquire(g, 1, 100, clock, sleep).at, 10);
  EXPECT_EQ(g.with_lock([&](auto& l) { return next_allowed_at(l, clock.now()); }), 20);
}

TEST(Acquire, OnALiveLimiterWaitsBehindAReservation) {
  manual_clock clock;
  manual_sleeper sleep(clock);
  live_limiter<token_bucket, manual_clock> lim(test::ok(token_bucket::make(rate{1, 10}, 1)), clock);
  ASSERT_TRUE(lim.try_acquire_at(0).allowed);
  reservation r = lim.reserve_at(0);  // the token at 10
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.at(), 10);
  const wait_result w = acquire(lim, 1, 100, clock, sleep);
  EXPECT_EQ(w.at, 20);
  EXPECT_EQ(w.sleeps, 1);
}

// Whatever other callers do, every sleep ends at or before the deadline and
// strictly after the attempt that asked for it, and a wait that gives up
// leaves the limiter as it found it.
TEST(Acquire, NeverSleepsPastTheDeadlineNorSpins) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    manual_clock clock;
    manual_sleeper sleep(clock);
    limiter<gcra, manual_clock> lim(test::ok(gcra::make(rate{1 + static_cast<std::int64_t>(rng() % 3), 10}, 2)), clock);
    const auto steal = static_cast<int>(rng() % 4);
    tick asked_from = 0;
    std::vector<std::pair<tick, tick>> sleeps;  // (attempt instant, sleep target)
    sleep.on_wake([&](tick now) {
      sleeps.emplace_back(asked_from, now);
      asked_from = now;
      for (int i = 0; i < steal; ++i) (void)lim.try_acquire_at(now);
    });
    for (int i = 0; i < 3; ++i) (void)lim.try_acquire_at(0);
    const tick deadline = static_cast<tick>(rng() % 60);
    const auto before = lim.state();
    const wait_result w = acquire(lim, 1 + static_cast<std::int64_t>(rng() % 2), deadline, clock, sleep);
    for (const auto& [from, to] : sleeps) {
      EXPECT_LE(to, deadline);
      EXPECT_GT(to, from);
    }
    if (w.status == wait_status::timed_out) {
      EXPECT_GT(w.at, deadline);
      if (w.sleeps == 0) {
        EXPECT_TRUE(lim.state() == before);
      }
    }
  }
}

}  // namespace
}  // namespace sluice::unit_wait_test
