// The Redis store on its caller's event loops (remote/event_loops.hpp), on a
// real redis-server: a call made on an attached loop goes out on that loop's
// own connection and is answered on that loop's thread, with one exact limit
// over every loop; calls from other threads keep the store's thread;
// detaching ends the loop's connection, so the loop runs out of work, and
// answers (by the failure mode) the calls still waiting on a stopped server.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "redis/store_support.hpp"
#include "redis/test_client.hpp"
#include "sluice/core/policy_expr.hpp"

namespace sluice::redis_test::redis_store_loops_test {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

/// An event loop: an io_context run by one thread until it runs out of work
/// once `release` drops its guard.
struct loop {
  asio::io_context ctx{1};
  asio::executor_work_guard<asio::io_context::executor_type> guard = asio::make_work_guard(ctx);
  std::promise<void> ended;
  std::future<void> ended_f = ended.get_future();
  std::thread thread{[this] {
    ctx.run();
    ended.set_value();
  }};
  loop() = default;
  loop(const loop&) = delete;
  loop& operator=(const loop&) = delete;
  ~loop() {
    guard.reset();
    ctx.stop();
    if (thread.joinable()) thread.join();
  }
  /// Runs `f` on the loop and waits for it.
  template <class F>
  void on(F f) {
    std::promise<void> done;
    asio::post(ctx, [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }
  /// Detaches `st` on the loop's own thread, drops the guard, and says
  /// whether the loop then ended (ran out of work) within `within`.
  bool detach_and_end(redis_store& st, std::chrono::milliseconds within) {
    on([&] { st.detach_loop(ctx); });
    guard.reset();
    return ended_f.wait_for(within) == std::future_status::ready;
  }
};

/// How many of the server's connections last ran FCALL (CLIENT LIST).
int fcall_connections(const testing::redis_server& srv) {
  redis::async_client_options o;
  o.where = redis::parse_url(srv.url()).value();
  redis::test_client c(o);
  const auto r = c.call({"CLIENT", "LIST"});
  const auto* rep = std::get_if<redis::reply>(&r);
  if (rep == nullptr || !rep->as_string()) {
    ADD_FAILURE() << "CLIENT LIST failed";
    return -1;
  }
  int n = 0;
  const std::string_view list = *rep->as_string();
  for (std::size_t at = list.find(" cmd=fcall "); at != std::string_view::npos; at = list.find(" cmd=fcall ", at + 1))
    ++n;
  return n;
}

any_policy policy_of(std::string_view text) { return parse_policy(text).value(); }

TEST(RedisLoops, EachLoopDecidesOnItsOwnThreadAndConnectionUnderOneExactLimit) {
  testing::redis_server srv;
  store_options o;
  o.command_timeout = 5s;  // a loaded machine's slow call is no failure here
  auto st = open_store(o, srv.url());
  ASSERT_TRUE(st);
  constexpr std::int64_t limit = 40;
  const check ch{st->define("fw", policy_of("fixed-window 40/1h")).value(), "shared"};
  loop a, b;
  asio::io_context* loops[] = {&a.ctx, &b.ctx};
  ASSERT_TRUE(st->attach_loops(loops));
  const auto again = st->attach_loops(loops);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.err().field, "store");

  // 2·limit calls made on each loop at once, every one in flight together.
  constexpr int per_loop = 2 * limit;
  std::atomic<int> admitted{0}, from_store{0}, on_own_loop{0}, answered{0};
  std::promise<void> all;
  const auto make_calls = [&](loop& l) {
    for (int i = 0; i < per_loop; ++i) {
      st->decide_async(one_check(ch, st->now()), {}, {}, [&](const store_decision& d) {
        if (d.d.allowed) admitted.fetch_add(1);
        if (d.from == source::store) from_store.fetch_add(1);
        if (l.ctx.get_executor().running_in_this_thread()) on_own_loop.fetch_add(1);
        if (answered.fetch_add(1) + 1 == 2 * per_loop) all.set_value();
      });
    }
  };
  asio::post(a.ctx, [&] { make_calls(a); });
  asio::post(b.ctx, [&] { make_calls(b); });
  // (Not an ASSERT: the loops must be detached before the store goes, or
  // its end would wait for calls no running loop can answer.)
  EXPECT_EQ(all.get_future().wait_for(30s), std::future_status::ready) << answered.load();
  EXPECT_EQ(admitted.load(), limit) << "one limit over both loops' connections";
  EXPECT_EQ(from_store.load(), 2 * per_loop);
  EXPECT_EQ(on_own_loop.load(), 2 * per_loop) << "an answer ran on another thread than its loop's";

  // A call from a thread that runs no loop keeps the store's own thread.
  std::promise<bool> elsewhere;
  st->decide_async(one_check(ch, st->now()), {}, {}, [&](const store_decision& d) {
    elsewhere.set_value(d.from == source::store && !a.ctx.get_executor().running_in_this_thread() &&
                        !b.ctx.get_executor().running_in_this_thread());
  });
  EXPECT_TRUE(elsewhere.get_future().get());
  // Three connections ran the library: each loop's own, and the store's.
  EXPECT_EQ(fcall_connections(srv), 3);

  // Detached, a loop holds nothing of the store: it runs out of work.
  EXPECT_TRUE(a.detach_and_end(*st, 5s)) << "a detached loop kept running";
  EXPECT_TRUE(b.detach_and_end(*st, 5s)) << "a detached loop kept running";
  EXPECT_EQ(st->stats().decisions, static_cast<std::uint64_t>(2 * per_loop + 1));
}

TEST(RedisLoops, DetachingAnswersTheCallsWaitingOnAStoppedServerAtOnce) {
  testing::redis_server srv;
  store_options o;
  o.url = srv.url();
  o.key_prefix = fresh_prefix("loops");
  o.command_timeout = 10s;  // far past the test's bound: the detach answers, not the deadline
  o.on_failure = failure_mode::fail_closed;
  o.breaker_failures = 0;
  auto st = redis_store::open(o);
  ASSERT_TRUE(st) << st.err().what();
  const check ch{(*st)->define("q", policy_of("quota 1000000")).value(), "k"};
  loop l;
  asio::io_context* loops[] = {&l.ctx};
  ASSERT_TRUE((*st)->attach_loops(loops));
  std::promise<source> warm;
  l.on([&] {
    (*st)->decide_async(one_check(ch, (*st)->now()), {}, {}, [&](const store_decision& d) { warm.set_value(d.from); });
  });
  ASSERT_EQ(warm.get_future().get(), source::store);

  srv.pause();
  constexpr int waiting = 20;
  std::mutex mu;
  std::vector<source> got;
  std::promise<void> all;
  l.on([&] {
    for (int i = 0; i < waiting; ++i)
      (*st)->decide_async(one_check(ch, (*st)->now()), {}, {}, [&](const store_decision& d) {
        const std::lock_guard lock(mu);
        got.push_back(d.from);
        if (got.size() == waiting) all.set_value();
      });
  });
  std::this_thread::sleep_for(100ms);  // written, and waiting on the stopped server
  {
    const std::lock_guard lock(mu);
    EXPECT_TRUE(got.empty()) << "answered before the detach";
  }
  const auto t0 = steady::now();
  EXPECT_TRUE(l.detach_and_end(**st, 3s)) << "the detached loop kept running";
  ASSERT_EQ(all.get_future().wait_for(1s), std::future_status::ready);
  EXPECT_LT(steady::now() - t0, 3s);
  for (const source s : got) EXPECT_EQ(s, source::fail_closed);
  srv.resume();
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_loops_test
