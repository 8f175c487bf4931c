// circuit_breaker with explicit times: no sleeps.
#include "sluice/remote/circuit_breaker.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace sluice::remote {
namespace {

using state = circuit_breaker::state;

circuit_breaker_options opts(std::uint32_t n, std::int64_t cool) {
  circuit_breaker_options o;
  o.consecutive_failures = n;
  o.cool_down = cool;
  return o;
}

TEST(CircuitBreaker, OpensAfterNConsecutiveFailures) {
  circuit_breaker b(opts(3, 100));
  EXPECT_EQ(b.current(), state::closed);
  b.record_failure(1);
  b.record_failure(2);
  EXPECT_TRUE(b.allow_call(3));
  EXPECT_EQ(b.current(), state::closed);
  b.record_failure(3);
  EXPECT_EQ(b.current(), state::open);
  EXPECT_EQ(b.times_opened(), 1u);
  EXPECT_FALSE(b.allow_call(3));
  EXPECT_FALSE(b.allow_call(102));  // one tick before the cool-down ends
}

TEST(CircuitBreaker, ASuccessResetsTheCount) {
  circuit_breaker b(opts(3, 100));
  b.record_failure(1);
  b.record_failure(2);
  b.record_success(3);
  b.record_failure(4);
  b.record_failure(5);
  EXPECT_EQ(b.current(), state::closed);
  b.record_failure(6);
  EXPECT_EQ(b.current(), state::open);
}

TEST(CircuitBreaker, HalfOpenLetsOneProbeThroughAndItsSuccessCloses) {
  circuit_breaker b(opts(1, 100));
  b.record_failure(10);
  ASSERT_EQ(b.current(), state::open);
  EXPECT_FALSE(b.allow_call(109));
  EXPECT_TRUE(b.allow_call(110));  // exactly at opened + cool_down: the probe
  EXPECT_EQ(b.current(), state::half_open);
  EXPECT_FALSE(b.allow_call(110));  // only one probe
  EXPECT_FALSE(b.allow_call(150));
  b.record_success(151);
  EXPECT_EQ(b.current(), state::closed);
  EXPECT_TRUE(b.allow_call(151));
  EXPECT_TRUE(b.allow_call(152));
}

TEST(CircuitBreaker, AFailedProbeReopensForAFullCoolDown) {
  circuit_breaker b(opts(1, 100));
  b.record_failure(0);
  ASSERT_TRUE(b.allow_call(100));
  b.record_failure(120);
  EXPECT_EQ(b.current(), state::open);
  EXPECT_EQ(b.times_opened(), 2u);
  EXPECT_FALSE(b.allow_call(219));
  EXPECT_TRUE(b.allow_call(220));
}

TEST(CircuitBreaker, ALostProbeIsReplacedAfterACoolDown) {
  circuit_breaker b(opts(1, 100));
  b.record_failure(0);
  ASSERT_TRUE(b.allow_call(100));  // probe out, never reported
  EXPECT_FALSE(b.allow_call(199));
  EXPECT_TRUE(b.allow_call(200));
  EXPECT_FALSE(b.allow_call(201));
}

TEST(CircuitBreaker, FailureRateOverTheWindow) {
  circuit_breaker_options o;
  o.consecutive_failures = 1000;  // only the rate rule
  o.failure_rate_percent = 50;
  o.rate_window = 10;
  o.rate_min_calls = 10;
  o.cool_down = 5;
  circuit_breaker b(o);
  // Alternate: 4 failures in the first 9 calls, under the minimum of 10 calls.
  for (int i = 0; i < 9; ++i) (i % 2 == 1) ? b.record_failure(i) : b.record_success(i);
  EXPECT_EQ(b.current(), state::closed);
  b.record_failure(9);  // 5 of 10 = 50%
  EXPECT_EQ(b.current(), state::open);
}

TEST(CircuitBreaker, FailureRateBelowThresholdStaysClosed) {
  circuit_breaker_options o;
  o.consecutive_failures = 1000;
  o.failure_rate_percent = 50;
  o.rate_window = 10;
  o.rate_min_calls = 10;
  circuit_breaker b(o);
  // 4 failures in every 10 calls, for a long time: 40% < 50%.
  for (int i = 0; i < 1000; ++i) (i % 10 < 4) ? b.record_failure(i) : b.record_success(i);
  EXPECT_EQ(b.current(), state::closed);
}

TEST(CircuitBreaker, FailuresWhileOpenChangeNothing) {
  circuit_breaker b(opts(1, 100));
  b.record_failure(0);
  b.record_failure(50);  // a call that was let through before it opened
  EXPECT_EQ(b.times_opened(), 1u);
  EXPECT_TRUE(b.allow_call(100));  // the cool-down still counts from 0
}

TEST(CircuitBreaker, CoolDownNearTheEndOfTimeSaturates) {
  circuit_breaker b(opts(1, INT64_MAX));
  b.record_failure(INT64_MAX - 5);
  EXPECT_FALSE(b.allow_call(INT64_MAX - 1));
  EXPECT_EQ(b.current(), state::open);
}

TEST(CircuitBreaker, ThreadsOnlyOneProbe) {
  circuit_breaker b(opts(1, 10));
  b.record_failure(0);
  std::atomic<int> probes{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 1000; ++i)
        if (b.allow_call(10)) probes.fetch_add(1);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(probes.load(), 1);
  EXPECT_EQ(circuit_breaker::name(b.current()), "half-open");
}

}  // namespace
}  // namespace sluice::remote
