// The Redis store over the asynchronous client (every URL's): the
// shared conformance suite pipelined through decide_many_at (the first
// 2,000 of the single-server run's traces per algorithm, as for a cluster)
// and one call at a time, and threads deciding at once on one connection —
// the calls of every thread pipelined, the count of admits still exact.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "conformance/traces.hpp"
#include "redis/conformance_draw.hpp"
#include "redis/store_support.hpp"

namespace sluice::redis_test::redis_store_pipelined_test {
namespace {

store_options pipelined() {
  store_options o;
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

// The store seen through its asynchronous face: every decision, peek and
// report made with decide_async / peek_async / report_async and waited for
// here, so the shared
// conformance suite runs through the path the service takes.
class through_async final : public store, public store_refunds {
 public:
  explicit through_async(store& s) : s_(s) {}
  result<policy_id> define(std::string_view name, const any_policy& policy) override { return s_.define(name, policy); }
  store_decision run_at(store_op op, const store_request& r, std::span<decision> per_check,
                        std::span<std::optional<tick>> grows_after) override {
    // the asynchronous peek has no per-check figures
    if (op == store_op::peek && !per_check.empty()) return s_.peek_at(r, per_check);
    std::promise<store_decision> p;
    auto f = p.get_future();
    s_.run_async(op, r, per_check, grows_after, [&p](const store_decision& d) { p.set_value(d); });
    return f.get();
  }
  void decide_many_at(std::span<const store_request> requests, std::span<store_decision> out) override {
    s_.decide_many_at(requests, out);
  }
  refund_answer refund_at(std::string_view id, tick now, std::span<decision> per_check,
                          std::span<std::int64_t> given) override {
    return s_.refund_at(id, now, per_check, given);
  }
  [[nodiscard]] tick now() const noexcept override { return s_.now(); }
  [[nodiscard]] store_stats stats() const override { return s_.stats(); }
  [[nodiscard]] store_capabilities capabilities() const noexcept override {
    return {.refunds = const_cast<through_async*>(this)};
  }

 private:
  store& s_;
};

TEST_P(RedisPipelinedConformance, PerCheckDecisionsThroughTheAsynchronousFace) {
  auto st = open_store(pipelined());
  ASSERT_TRUE(st);
  through_async a(*st);
  std::size_t refused = 0;
  const auto traces = draw_traces(GetParam(), 100, 1'000'000, refused, false);
  for (std::size_t j = 0; j < traces.size(); ++j)
    ASSERT_EQ(conformance::run_conformance(a, traces[j], "y" + std::to_string(j) + ":"), "");
  EXPECT_EQ(st->redis_stats().mismatches, 0U);
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

TEST(RedisPipelinedStore, ManyDecisionsInFlightAtOnceAdmitExactlyTheLimit) {
  // Issued from one thread without waiting: all in flight together on the
  // one connection, each answered once, the admits exactly the limit.
  auto st = open_store(pipelined());
  ASSERT_TRUE(st);
  constexpr std::int64_t limit = 300;
  const auto id = st->define("fw", any_policy{fixed_window::make(rate{limit, 3'600'000'000'000}).value()}).value();
  const check c{id, "shared"};
  constexpr int n = 1000;
  std::atomic<std::int64_t> admitted{0}, failed{0}, answered{0};
  std::promise<void> all;
  const tick now = st->now();
  for (int i = 0; i < n; ++i)
    st->decide_async(one_check(c, now), {}, {}, [&](const store_decision& d) {
      admitted += d.from == source::store && d.d.allowed;
      failed += d.from != source::store && d.from != source::deny_cache;
      if (++answered == n) all.set_value();
    });
  ASSERT_EQ(all.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(admitted.load(), limit);
}

TEST(RedisPipelinedStore, DestroyedWithDecisionsInFlightAnswersEachOnce) {
  // The store's end answers what still waits (the failure mode), while
  // every part of the store is alive; none is answered twice or lost.
  auto st = open_store(pipelined());
  ASSERT_TRUE(st);
  const auto id = st->define("g", any_policy{gcra::make(rate{5, 100'000'000}, 3).value()}).value();
  std::vector<std::string> keys;
  for (int i = 0; i < 200; ++i) keys.push_back("k" + std::to_string(i));
  std::vector<check> checks;
  for (const auto& k : keys) checks.push_back(check{id, k});
  std::atomic<int> answered{0};
  const tick now = st->now();
  for (const auto& c : checks) st->decide_async(one_check(c, now), {}, {}, [&](const store_decision&) { ++answered; });
  st.reset();
  EXPECT_EQ(answered.load(), 200);
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_pipelined_test

namespace sluice::redis_test::redis_store_pipelined_test {
namespace {

TEST(RedisPipelinedStore, AsynchronousDecisionsAtTheStoresClockTakeItsInstant) {
  store_options o = pipelined();
  o.clock = store_clock::store;
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const check c{st->define("g", any_policy{gcra::make(rate{5, 100'000'000}, 3).value()}).value(), "k"};
  const tick before =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::promise<store_decision> p;
  st->decide_async(one_check(c, 0), {}, {}, [&p](const store_decision& d) { p.set_value(d); });
  const store_decision d = p.get_future().get();
  EXPECT_EQ(d.from, source::store);
  EXPECT_GE(d.at, before - 1000);  // Redis's clock, not the request's 0
  std::promise<store_decision> q;
  st->report_async(one_check(c, 0), {}, [&q](const store_decision& r) { q.set_value(r); });
  EXPECT_GE(q.get_future().get().at, d.at);
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_pipelined_test
