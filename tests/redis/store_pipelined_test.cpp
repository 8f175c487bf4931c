// The Redis store over the asynchronous client (pipelined_client): the
// shared conformance suite pipelined through decide_many_at (the first
// 2,000 of the single-server run's traces per algorithm, as for a cluster)
// and one call at a time, and threads deciding at once on one connection —
// the calls of every thread pipelined, the count of admits still exact.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "conformance/traces.hpp"
#include "redis/conformance_draw.hpp"
#include "redis/store_support.hpp"

namespace sluice::redis_test {
namespace {

redis_store_options pipelined() {
  redis_store_options o;
  o.pipelined_client = true;
  o.command_timeout = std::chrono::seconds(10);  // a loaded CI machine must not turn into store failures
  return o;
}

class RedisPipelinedConformance : public ::testing::TestWithParam<algorithm> {};

TEST_P(RedisPipelinedConformance, TracesPipelined) {
  auto st = open_store(pipelined());
  ASSERT_TRUE(st);
  constexpr std::size_t n = 2'000;
  std::size_t refused = 0;
  const auto traces = draw_traces(GetParam(), n, 1, refused, true);
  ASSERT_EQ(traces.size(), n);
  const auto t0 = std::chrono::steady_clock::now();
  const auto prefix = [](std::size_t j) { return "c" + std::to_string(j) + ":"; };
  const std::size_t agree = run_in_groups(*st, traces, prefix, prefix);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("pipelined-client conformance %-16s traces %zu/%zu agree, %.1f s\n",
              std::string(name_of(GetParam())).c_str(), agree, n, secs);
  EXPECT_EQ(st->redis_stats().mismatches, 0U);
  EXPECT_EQ(st->stats().store_failures, 0U);
}

TEST_P(RedisPipelinedConformance, PerCheckDecisionsOneCallAtATime) {
  auto st = open_store(pipelined());
  ASSERT_TRUE(st);
  std::size_t refused = 0;
  const auto traces = draw_traces(GetParam(), 100, 1'000'000, refused, false);
  for (std::size_t j = 0; j < traces.size(); ++j)
    ASSERT_EQ(conformance::run_conformance(*st, traces[j], "q" + std::to_string(j) + ":"), "");
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, RedisPipelinedConformance, ::testing::ValuesIn(conformance::all_algorithms),
                         algorithm_test_name);

TEST(RedisPipelinedStore, ThreadsDecidingAtOnceAdmitExactlyTheLimit) {
  auto st = open_store(pipelined());
  ASSERT_TRUE(st);
  constexpr std::int64_t limit = 1000;
  const auto id = st->define("fw", any_policy{fixed_window::make(rate{limit, 3'600'000'000'000}).value()}).value();
  const check c{id, "shared"};
  constexpr int threads = 6;
  constexpr int per_thread = 400;  // 2,400 requests for 1,000 admits
  std::atomic<std::int64_t> admitted{0}, failed{0};
  const tick now = st->now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        // Alternately one decision and a batch of four: decide_at and decide_many_at share the connection.
        if (i % 2 == 0) {
          const store_decision d = st->decide_at(one_check(c, now + t));
          admitted += d.from == source::store && d.d.allowed;
          failed += d.from != source::store;
        } else {
          std::vector<store_request> reqs(4, one_check(c, now + t));
          std::vector<store_decision> out(4);
          st->decide_many_at(reqs, out);
          for (const auto& d : out) {
            admitted += d.from == source::store && d.d.allowed;
            failed += d.from != source::store;
          }
          i += 3;
        }
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(admitted.load(), limit);
}

}  // namespace
}  // namespace sluice::redis_test

namespace sluice::redis_test {
namespace {

TEST(RedisPipelinedStore, ServerClockModeReadsTimeThroughTheAsyncClient) {
  redis_store_options o = pipelined();
  o.server_clock = true;
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const check c{st->define("g", any_policy{gcra::make(rate{5, 100'000'000}, 3).value()}).value(), "k"};
  const store_decision d = st->decide_at(one_check(c, 0));
  EXPECT_EQ(d.from, source::store);
  EXPECT_GT(d.at, 0);
}

}  // namespace
}  // namespace sluice::redis_test
