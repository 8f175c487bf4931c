// The asynchronous client against a hung server (SIGSTOP): every pending
// call times out at its own deadline, not one after another; the event
// loop stays responsive meanwhile; after SIGCONT the late replies are
// dropped and the next caller gets its own reply.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <vector>

#include "redis/client/async_client.hpp"
#include "support/redis_server.hpp"

namespace sluice::redis::redis_async_timeout_test {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

TEST(AsyncTimeout, EveryPendingCallTimesOutAtItsOwnDeadlineAndTheLoopStaysResponsive) {
  testing::redis_server srv;
  asio::io_context io;
  async_client_options o;
  o.where = parse_url(srv.url()).value();
  o.command_timeout = 200ms;
  auto c = async_client::create(io.get_executor(), o).value();

  // Connected first.
  bool pong = false;
  c->async_call({"PING"}, [&](call_result r) {
    pong = std::holds_alternative<reply>(r);
    io.stop();
  });
  io.run_for(5s);
  io.restart();
  ASSERT_TRUE(pong);

  srv.pause();
  constexpr int n = 20;
  struct one {
    steady::time_point sent{}, done{};
    call_error e{};
    bool answered = false;
  };
  std::vector<one> calls(n);
  std::vector<std::unique_ptr<asio::steady_timer>> timers;
  int answered = 0;
  const auto t0 = steady::now();
  // One call every 10 ms on the loop's own timers.
  for (int i = 0; i < n; ++i) {
    timers.push_back(std::make_unique<asio::steady_timer>(io, t0 + i * 10ms));
    timers.back()->async_wait([&, i](const boost::system::error_code&) {
      calls[static_cast<std::size_t>(i)].sent = steady::now();
      c->async_call({"INCR", "k"}, [&, i](call_result r) {
        one& x = calls[static_cast<std::size_t>(i)];
        x.done = steady::now();
        x.answered = true;
        if (auto* e = std::get_if<call_error>(&r)) x.e = *e;
        if (++answered == n) io.stop();
      });
    });
  }
  // A timer on the same loop, due while every call is pending.
  steady::time_point heartbeat{};
  asio::steady_timer beat(io, t0 + 150ms);
  beat.async_wait([&](const boost::system::error_code&) { heartbeat = steady::now(); });
  io.run_for(5s);
  io.restart();

  ASSERT_EQ(answered, n);
  std::chrono::nanoseconds worst{0};
  for (int i = 0; i < n; ++i) {
    const one& x = calls[static_cast<std::size_t>(i)];
    EXPECT_EQ(x.e.kind, call_error::timeout) << i << ": " << x.e.what();
    EXPECT_TRUE(x.e.maybe_applied) << i;
    const auto waited = x.done - x.sent;
    EXPECT_GE(waited, 200ms) << i;
    EXPECT_LT(waited, 300ms) << i << ": not at its own deadline";  // a loaded 2-core machine
    worst = std::max(worst, std::chrono::nanoseconds(waited - 200ms));
  }
  // Not one after another (that would take 20 x 200 ms): the last answered
  // about 190 ms after the first.
  const auto spread = calls[n - 1].done - calls[0].done;
  EXPECT_GT(spread, 150ms);
  EXPECT_LT(spread, 300ms);
  const auto late = heartbeat - (t0 + 150ms);
  EXPECT_LT(late, 20ms) << "the loop was blocked";
  std::printf("SIGSTOP: %d calls timed out each at its deadline + at most %.1f ms; a timer fired %.1f ms late\n", n,
              static_cast<double>(worst.count()) / 1e6,
              static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(late).count()) / 1e3);

  // SIGCONT: the 20 INCRs run (they were sent); their replies are dropped,
  // and the next call gets its own.
  srv.resume();
  std::optional<call_result> next;
  c->async_call({"INCR", "k"}, [&](call_result r) {
    next = std::move(r);
    io.stop();
  });
  io.run_for(5s);
  io.restart();
  ASSERT_TRUE(next.has_value());
  ASSERT_TRUE(std::holds_alternative<reply>(*next)) << std::get<call_error>(*next).what();
  EXPECT_EQ(std::get<reply>(*next).as_integer(), n + 1);
  EXPECT_EQ(c->stats().late_replies, static_cast<std::uint64_t>(n));
  EXPECT_EQ(c->stats().timeouts, static_cast<std::uint64_t>(n));
  EXPECT_EQ(c->stats().connects, 1u);
  c->close();
  io.run_for(1s);
}

TEST(AsyncTimeout, AConnectionHungPastTheStallTimeoutIsClosed) {
  testing::redis_server srv;
  asio::io_context io;
  async_client_options o;
  o.where = parse_url(srv.url()).value();
  o.command_timeout = 50ms;
  o.stall_timeout = 300ms;
  auto c = async_client::create(io.get_executor(), o).value();
  std::vector<call_result> got;
  c->async_call({"PING"}, [&](call_result r) {
    got.push_back(std::move(r));
    io.stop();
  });
  io.run_for(5s);
  io.restart();
  srv.pause();
  const auto t0 = steady::now();
  c->async_call({"PING"}, [&](call_result r) { got.push_back(std::move(r)); });
  asio::steady_timer end(io, t0 + 600ms);
  end.async_wait([&](const boost::system::error_code&) { io.stop(); });
  io.run_for(5s);
  io.restart();
  srv.resume();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(std::get<call_error>(got[1]).kind, call_error::timeout);
  EXPECT_EQ(c->stats().broken, 1u) << "closed after 300 ms without a reply";
  c->close();
  io.run_for(1s);
}

}  // namespace
}  // namespace sluice::redis::redis_async_timeout_test
