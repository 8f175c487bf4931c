// acquire on the real steady clock, with real sleeps: bounded (well under a
// second in all), and the only place sluice sleeps in its tests. Checks that
// a wait ends at (not before) the slot, that an unmeetable deadline returns
// at once, and that several threads sharing one guarded limiter get exactly
// the admits the limit allows.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "sluice/sluice.hpp"

namespace sluice::cli_acquire_real_clock_test {
namespace {

constexpr tick ms = 1'000'000;  // steady-clock ticks are nanoseconds

TEST(AcquireRealClock, WaitsForTheSlotAndGivesUpAtOnce) {
  // One token per 40 ms, burst 1.
  limiter<token_bucket> lim(token_bucket::make(rate{1, 40 * ms}, 1).value());
  const tick start = steady_clock::now();
  const wait_result first = acquire(lim, 1, start + 500 * ms);
  ASSERT_TRUE(first.admitted());
  EXPECT_EQ(first.sleeps, 0);
  const wait_result second = acquire(lim, 1, steady_clock::now() + 500 * ms);
  ASSERT_TRUE(second.admitted());
  EXPECT_GE(second.at, first.at + 40 * ms);  // never before the token exists
  EXPECT_GE(second.sleeps, 1);
  // A deadline 5 ms out cannot be met (the next token is 40 ms away): back
  // at once, nothing taken.
  const tick before = steady_clock::now();
  const wait_result third = acquire_for(lim, 1, 5 * ms);
  const tick after = steady_clock::now();
  EXPECT_EQ(third.status, wait_status::timed_out);
  EXPECT_EQ(third.sleeps, 0);
  EXPECT_LT(after - before, 30 * ms);
  EXPECT_GE(third.at, second.at + 40 * ms);
  EXPECT_LT(steady_clock::now() - start, 400 * ms);
}

TEST(AcquireRealClock, ThreadsShareAGuardedLimiter) {
  // GCRA: one per 20 ms, burst 2. Four threads want 2 each: the first two go
  // at once, the other six one every 20 ms (about 120 ms).
  const gcra policy = gcra::make(rate{1, 20 * ms}, 2).value();
  guarded<limiter<gcra>> shared(std::in_place, policy);
  std::mutex m;
  std::vector<tick> admits;
  std::atomic<int> failures{0};
  const tick start = steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2; ++i) {
        const wait_result w = acquire(shared, 1, start + 700 * ms);
        if (!w.admitted()) {
          ++failures;
          continue;
        }
        const std::lock_guard<std::mutex> lock(m);
        admits.push_back(w.at);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_EQ(admits.size(), 8u);
  // Two at once, then one per 20 ms: the eighth no sooner than 120 ms after
  // the first (less a little: a thread reads the clock just before it takes
  // the lock, and the limiter reads a late reader's instant as the latest).
  std::sort(admits.begin(), admits.end());
  EXPECT_GE(admits.back() - admits.front(), 110 * ms);
  EXPECT_LT(steady_clock::now() - start, 700 * ms);
}

}  // namespace
}  // namespace sluice::cli_acquire_real_clock_test
