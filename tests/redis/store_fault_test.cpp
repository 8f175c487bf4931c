// The Redis store when Redis fails, with a real server of each test's own:
// kill -9 and restart, SIGSTOP, FLUSHALL and a restart with empty data,
// maxmemory, a wrong password, and many threads on one key. For each: no
// crash, every call answered and counted by source, and recovery within a
// second of the server coming back.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "redis/store_support.hpp"
#include "redis/test_client.hpp"

namespace sluice::redis_test::redis_store_fault_test {
namespace {

using clock_t_ = std::chrono::steady_clock;

store_options fast_options(const testing::redis_server& srv, failure_mode mode) {
  store_options o;
  o.url = srv.url();
  o.key_prefix = fresh_prefix("fault");
  o.on_failure = mode;
  o.connect_timeout = std::chrono::milliseconds(100);
  o.command_timeout = std::chrono::milliseconds(100);
  o.breaker_failures = 3;
  o.breaker_cool_down = std::chrono::milliseconds(100);
  return o;
}

std::unique_ptr<redis_store> open(const store_options& o) {
  auto s = redis_store::open(o);
  EXPECT_TRUE(s.ok()) << (s ? "" : s.err().what());
  return s ? std::move(s).value() : nullptr;
}

redis::test_client raw(const testing::redis_server& srv) {
  redis::async_client_options co;
  co.where = redis::parse_url(srv.url()).value();
  co.command_timeout = std::chrono::seconds(2);
  return redis::test_client(co);
}

/// Decides on `ch` until `stop`, counting answers by source.
struct load {
  std::map<source, std::uint64_t> by_source;
  std::uint64_t calls = 0;
  void one(redis_store& st, const check& ch) {
    store_request r;
    r.checks = std::span<const check>(&ch, 1);
    r.now = st.now();
    ++by_source[st.decide_at(r).from];
    ++calls;
  }
  [[nodiscard]] std::uint64_t answered() const {
    std::uint64_t n = 0;
    for (const auto& [s, c] : by_source) n += c;
    return n;
  }
};

/// Calls until the store answers from Redis again; the time it took.
double recovery_seconds(redis_store& st, const check& ch, load& l) {
  const auto t0 = clock_t_::now();
  while (clock_t_::now() - t0 < std::chrono::seconds(5)) {
    store_request r;
    r.checks = std::span<const check>(&ch, 1);
    r.now = st.now();
    const auto d = st.decide_at(r);
    ++l.by_source[d.from];
    ++l.calls;
    if (d.from == source::store) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return std::chrono::duration<double>(clock_t_::now() - t0).count();
}

TEST(RedisFaults, KillNineThenRestart) {
  testing::redis_server srv;
  auto st = open(fast_options(srv, failure_mode::local));
  ASSERT_TRUE(st);
  const check ch{st->define("g", any_policy{gcra::make(rate{1'000'000, 1'000'000'000}, 1'000'000).value()}).value(),
                 "k"};
  load l;
  for (int i = 0; i < 200; ++i) l.one(*st, ch);
  EXPECT_EQ(l.by_source[source::store], 200U);
  srv.kill9();
  const auto t0 = clock_t_::now();
  while (clock_t_::now() - t0 < std::chrono::milliseconds(400)) l.one(*st, ch);
  EXPECT_GT(l.by_source[source::fallback], 0U);
  srv.restart();  // empty data: the function library is gone too
  const double secs = recovery_seconds(*st, ch, l);
  EXPECT_LT(secs, 1.0) << "recovery after the server came back";
  EXPECT_EQ(l.by_source[source::error], 0U);
  const auto s = st->stats();
  EXPECT_EQ(l.answered(), l.calls);
  EXPECT_EQ(s.decisions, l.calls) << "every call answered and counted";
  EXPECT_EQ(s.from_store + s.fallbacks, l.calls);
  EXPECT_GT(s.store_failures, 0U);
  std::printf("kill -9: %llu calls, %llu from the store, %llu by the local fallback; back in %.3f s\n",
              static_cast<unsigned long long>(l.calls), static_cast<unsigned long long>(s.from_store),
              static_cast<unsigned long long>(s.fallbacks), secs);
}

TEST(RedisFaults, SigstopEveryCallReturnsWithinTheTimeout) {
  testing::redis_server srv;
  auto o = fast_options(srv, failure_mode::local);
  auto st = open(o);
  ASSERT_TRUE(st);
  const check ch{st->define("q", any_policy{quota::make(1'000'000).value()}).value(), "k"};
  load l;
  for (int i = 0; i < 50; ++i) l.one(*st, ch);
  srv.pause();
  double worst = 0;
  for (int i = 0; i < 30; ++i) {
    const auto t0 = clock_t_::now();
    l.one(*st, ch);
    worst = std::max(worst, std::chrono::duration<double>(clock_t_::now() - t0).count());
  }
  // A call that must reconnect may take the connect timeout on top.
  EXPECT_LT(worst, 0.1 + 0.1 + 0.1) << "a call waited past the command timeout";
  EXPECT_EQ(l.by_source[source::fallback], 30U);
  srv.resume();
  const double secs = recovery_seconds(*st, ch, l);
  EXPECT_LT(secs, 1.0);
  EXPECT_EQ(st->stats().decisions, l.calls);
  std::printf("SIGSTOP: slowest call %.3f s; back in %.3f s after SIGCONT\n", worst, secs);
}

TEST(RedisFaults, FailOpenAndFailClosedAnswerAsConfigured) {
  testing::redis_server srv;
  auto open_st = open(fast_options(srv, failure_mode::fail_open));
  auto o = fast_options(srv, failure_mode::fail_closed);
  o.fail_closed_retry_after = 777;
  auto closed_st = open(o);
  ASSERT_TRUE(open_st && closed_st);
  const auto p = any_policy{quota::make(1).value()};
  const check a{open_st->define("q", p).value(), "k"};
  const check b{closed_st->define("q", p).value(), "k"};
  srv.kill9();
  for (int i = 0; i < 5; ++i) {
    const auto x = open_st->decide_at(one_check(a, 0));
    EXPECT_TRUE(x.d.allowed);
    EXPECT_EQ(x.from, source::fail_open);
    const auto y = closed_st->decide_at(one_check(b, 0));
    EXPECT_FALSE(y.d.allowed);
    EXPECT_EQ(y.d.retry_after, 777);
    EXPECT_EQ(y.from, source::fail_closed);
  }
  EXPECT_EQ(open_st->stats().fallbacks, 5U);
  EXPECT_EQ(closed_st->stats().fallbacks, 5U);
  EXPECT_GT(closed_st->redis_stats().breaker_trips, 0U);
}

TEST(RedisFaults, FlushallAndARestartWithEmptyDataReloadTheLibrary) {
  testing::redis_server srv;
  auto st = open(fast_options(srv, failure_mode::fail_closed));
  ASSERT_TRUE(st);
  const check ch{st->define("q", any_policy{quota::make(2).value()}).value(), "k"};
  EXPECT_TRUE(st->decide_at(one_check(ch, 0)).d.allowed);
  EXPECT_TRUE(st->decide_at(one_check(ch, 0)).d.allowed);
  EXPECT_FALSE(st->decide_at(one_check(ch, 0)).d.allowed);
  auto c = raw(srv);
  (void)c.call({"FLUSHALL"});
  (void)c.call({"FUNCTION", "FLUSH"});
  auto d = st->decide_at(one_check(ch, 0));
  EXPECT_EQ(d.from, source::store) << "the library was not reloaded";
  EXPECT_TRUE(d.d.allowed) << "the state was flushed";
  srv.restart();
  load l;
  const double secs = recovery_seconds(*st, ch, l);
  EXPECT_LT(secs, 1.0);
  // The recovery's admit used one unit of the fresh state: one is left.
  const auto p = st->peek_at(one_check(ch, 0));
  EXPECT_TRUE(p.d.allowed) << "after the restart the key is fresh again";
  EXPECT_EQ(p.d.remaining, 0);
}

TEST(RedisFaults, MaxmemoryIsAStoreFailureNotACrash) {
  testing::redis_server srv;
  auto st = open(fast_options(srv, failure_mode::fail_closed));
  ASSERT_TRUE(st);
  const check ch{st->define("g", any_policy{gcra::make(rate{10, 1000}, 10).value()}).value(), "k"};
  EXPECT_TRUE(st->decide_at(one_check(ch, 0)).d.allowed);
  auto c = raw(srv);
  // The data set is over maxmemory (set below what the server already
  // uses): with noeviction every write is refused ("OOM command not
  // allowed"), reads still answer.
  ASSERT_TRUE(std::holds_alternative<redis::reply>(c.call({"CONFIG", "SET", "maxmemory", "100000"})));
  const auto probe = c.call({"SET", "probe", "1"});
  const auto* refused = std::get_if<redis::call_error>(&probe);
  ASSERT_TRUE(refused != nullptr && refused->message.find("OOM") != std::string::npos) << "the server takes writes";
  const auto d = st->decide_at(one_check(ch, 1));
  EXPECT_EQ(d.from, source::fail_closed);
  EXPECT_FALSE(d.d.allowed);
  EXPECT_GT(st->stats().store_failures, 0U);
  // Reads still work: a peek is a no-writes function.
  const auto p = st->peek_at(one_check(ch, 1));
  EXPECT_EQ(p.from, source::store);
  EXPECT_TRUE(p.d.allowed);
}

TEST(RedisFaults, AWrongPasswordIsAStoreFailure) {
  testing::redis_server_options so;
  so.password = "s3cret";
  testing::redis_server srv(so);
  auto o = fast_options(srv, failure_mode::fail_closed);
  o.url = "redis://:wrong@127.0.0.1:" + std::to_string(srv.port());
  auto bad = open(o);
  ASSERT_TRUE(bad);
  const check ch{bad->define("q", any_policy{quota::make(5).value()}).value(), "k"};
  const auto d = bad->decide_at(one_check(ch, 0));
  EXPECT_EQ(d.from, source::fail_closed);
  EXPECT_EQ(bad->stats().store_failures, 1U);
  o.url = "redis://:s3cret@127.0.0.1:" + std::to_string(srv.port());
  auto good = open(o);
  const check g{good->define("q", any_policy{quota::make(5).value()}).value(), "k"};
  EXPECT_EQ(good->decide_at(one_check(g, 0)).from, source::store);
}

TEST(RedisFaults, ManyThreadsOnOneKeyAdmitExactlyTheLimit) {
  testing::redis_server srv;
  auto o = fast_options(srv, failure_mode::fail_closed);
  o.command_timeout = std::chrono::seconds(5);
  auto st = open(o);
  ASSERT_TRUE(st);
  const check q{st->define("q", any_policy{quota::make(1000).value()}).value(), "k"};
  // A token bucket that does not refill within the run's 400 ticks.
  const check t{st->define("tb", any_policy{token_bucket::make(rate{1, std::int64_t{1} << 40}, 700).value()}).value(),
                "k"};
  std::atomic<int> admitted_q{0};
  std::atomic<int> admitted_t{0};
  std::atomic<int> other{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&] {
      for (int i = 0; i < 400; ++i) {
        const auto a = st->decide_at(one_check(q, i));
        const auto b = st->decide_at(one_check(t, i));
        admitted_q += a.d.allowed;
        admitted_t += b.d.allowed;
        other += (a.from != source::store) + (b.from != source::store);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(admitted_q.load(), 1000);
  EXPECT_EQ(admitted_t.load(), 700);
  EXPECT_EQ(st->stats().decisions, 3200U);
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_fault_test
