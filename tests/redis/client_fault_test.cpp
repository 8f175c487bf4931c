// The client's faults against a real redis-server (through test_client: the
// asynchronous client's synchronous face): kill -9 and restart, SIGSTOP, a
// wrong password, FLUSHALL + FUNCTION FLUSH, maxmemory, CLIENT KILL, a
// command that outlives its timeout. Each test is bounded to a few seconds.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "redis/test_client.hpp"
#include "support/redis_server.hpp"

namespace sluice::redis::redis_client_fault_test {
namespace {

using namespace std::chrono_literals;
using testing::redis_server;
using steady = std::chrono::steady_clock;

constexpr std::string_view counter_library = R"(#!lua name=sluice_fault_v1
redis.register_function('bump', function(keys, args) return redis.call('INCR', keys[1]) end)
)";

async_client_options fast_options(const std::string& text) {
  async_client_options o;
  o.where = parse_url(text).value();
  o.connect_timeout = 100ms;
  o.command_timeout = 100ms;
  return o;
}

call_result bump(test_client& c, std::string_view key) {
  const std::string_view argv[] = {key};
  return c.fcall({"bump", 1, argv});
}

std::chrono::milliseconds since(steady::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
}

// Calls until one succeeds or `limit` passes; how long it took.
std::chrono::milliseconds until_success(test_client& c, std::chrono::milliseconds limit) {
  const auto t0 = steady::now();
  while (since(t0) < limit) {
    if (std::holds_alternative<reply>(bump(c, "probe"))) return since(t0);
    std::this_thread::sleep_for(2ms);
  }
  return limit + 1ms;
}

TEST(ClientFault, RefusedWhenNothingListens) {
  redis_server srv;
  const std::string url = srv.url();
  srv.kill9();
  test_client c(fast_options(url));
  const auto t0 = steady::now();
  auto r = c.call({"PING"});
  ASSERT_TRUE(std::holds_alternative<call_error>(r));
  EXPECT_EQ(std::get<call_error>(r).kind, call_error::refused) << std::get<call_error>(r).what();
  EXPECT_FALSE(std::get<call_error>(r).maybe_applied);
  // During the backoff calls fail at once, without a connect.
  auto again = c.call({"PING"});
  ASSERT_TRUE(std::holds_alternative<call_error>(again));
  EXPECT_EQ(std::get<call_error>(again).kind, call_error::refused);
  EXPECT_LT(since(t0), 100ms);
  EXPECT_LE(c.stats().connect_failures, 2u);
}

TEST(ClientFault, KillNineDuringAStreamThenRestart) {
  redis_server srv;
  test_client c(fast_options(srv.url()));
  ASSERT_TRUE(c.set_library("sluice_fault_v1", std::string(counter_library)).ok());
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(std::holds_alternative<reply>(bump(c, "n")));
  EXPECT_EQ(c.stats().library_loads, 1u);

  srv.kill9();
  int failed = 0;
  for (int i = 0; i < 50; ++i) {
    const auto t0 = steady::now();
    auto r = bump(c, "n");
    ASSERT_TRUE(std::holds_alternative<call_error>(r)) << "a call succeeded with the server dead";
    const auto k = std::get<call_error>(r).kind;
    EXPECT_TRUE(k == call_error::io || k == call_error::refused) << std::get<call_error>(r).what();
    EXPECT_LT(since(t0), 150ms);
    ++failed;
  }
  EXPECT_EQ(failed, 50);

  srv.restart();
  const auto took = until_success(c, 2000ms);
  EXPECT_LT(took, 1000ms) << "no success within a second of the restart";
  EXPECT_EQ(c.stats().library_loads, 2u);  // the restart lost it; it reloaded itself
  auto r = bump(c, "n");
  ASSERT_TRUE(std::holds_alternative<reply>(r));
  EXPECT_EQ(std::get<reply>(r).as_integer(), 1);  // no persistence: a fresh counter
}

TEST(ClientFault, KillNineUnderTwoThreads) {
  redis_server srv;
  test_client c(fast_options(srv.url()));
  ASSERT_TRUE(c.set_library("sluice_fault_v1", std::string(counter_library)).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0}, slow{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t)
    ts.emplace_back([&] {
      while (!stop.load()) {
        const auto t0 = steady::now();
        if (std::holds_alternative<reply>(bump(c, "n")))
          ok.fetch_add(1);
        else
          failed.fetch_add(1);
        if (since(t0) > 300ms) slow.fetch_add(1);
        std::this_thread::sleep_for(1ms);
      }
    });
  std::this_thread::sleep_for(100ms);
  srv.kill9();
  std::this_thread::sleep_for(200ms);
  const int ok_before_restart = ok.load();
  srv.restart();
  std::this_thread::sleep_for(700ms);
  stop = true;
  for (auto& t : ts) t.join();
  EXPECT_GT(failed.load(), 0);
  EXPECT_GT(ok.load(), ok_before_restart) << "no call succeeded after the restart";
  EXPECT_EQ(slow.load(), 0);
}

TEST(ClientFault, PausedServerEveryCallReturnsWithinTheTimeout) {
  redis_server srv;
  test_client c(fast_options(srv.url()));
  ASSERT_TRUE(c.set_library("sluice_fault_v1", std::string(counter_library)).ok());
  ASSERT_TRUE(std::holds_alternative<reply>(bump(c, "n")));
  srv.pause();
  for (int i = 0; i < 5; ++i) {
    const auto t0 = steady::now();
    auto r = bump(c, "n");
    const auto took = since(t0);
    ASSERT_TRUE(std::holds_alternative<call_error>(r));
    const auto& e = std::get<call_error>(r);
    EXPECT_EQ(e.kind, call_error::timeout) << e.what();
    EXPECT_TRUE(e.maybe_applied);
    // command timeout 100 ms; a reconnect's connect is answered by the kernel.
    EXPECT_LT(took, 180ms) << "call " << i;
    EXPECT_GE(took, 90ms) << "call " << i;
  }
  srv.resume();
  EXPECT_LT(until_success(c, 2000ms), 1000ms);
}

TEST(ClientFault, CloseFailsACallerWaitingOnItsOwnConnectionAtOnce) {
  // A call on a caller's own connection to a stopped server waits in its
  // own poll, not on the I/O thread: closing the client from another
  // thread must end it at once, not at its command timeout (a store being
  // destroyed waited out a clock measurement's 20 s like this).
  redis_server srv;
  auto o = fast_options(srv.url());
  o.command_timeout = 20s;
  test_client c(o);
  ASSERT_TRUE(std::holds_alternative<reply>(c.call({"PING"})));
  srv.pause();
  std::atomic<bool> started{false};
  call_result waited{reply{}};
  steady::time_point ended{};
  std::thread caller([&] {
    started = true;
    waited = c.call({"TIME"});
    ended = steady::now();
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(200ms);  // the call is written and waiting
  const auto t0 = steady::now();
  c.close();
  caller.join();
  srv.resume();
  ASSERT_TRUE(std::holds_alternative<call_error>(waited));
  EXPECT_EQ(std::get<call_error>(waited).kind, call_error::io) << std::get<call_error>(waited).what();
  EXPECT_LT(ended - t0, 2s);
  // Every later call fails at once too, on any thread.
  const auto t1 = steady::now();
  EXPECT_TRUE(std::holds_alternative<call_error>(c.call({"PING"})));
  EXPECT_LT(since(t1), 1000ms);
}

TEST(ClientFault, TimedOutCommandIsNotRetried) {
  redis_server srv;
  test_client c(fast_options(srv.url()));
  auto r = c.call({"DEBUG", "SLEEP", "0.3"});
  ASSERT_TRUE(std::holds_alternative<call_error>(r));
  EXPECT_EQ(std::get<call_error>(r).kind, call_error::timeout);
  EXPECT_TRUE(std::get<call_error>(r).maybe_applied);
  std::this_thread::sleep_for(350ms);
  test_client admin(fast_options(srv.url()));
  auto info = admin.call({"INFO", "commandstats"});
  ASSERT_TRUE(std::holds_alternative<reply>(info));
  const std::string text(std::get<reply>(info).as_string().value_or(""));
  EXPECT_NE(text.find("cmdstat_debug:calls=1,"), std::string::npos) << text;
  // The client goes on (the late reply, when it came, was dropped).
  EXPECT_TRUE(std::holds_alternative<reply>(c.call({"PING"})));
}

TEST(ClientFault, PipelineCutByATimeoutFailsWholeAndMayHaveRun) {
  redis_server srv;
  test_client c(fast_options(srv.url()));
  std::vector<std::vector<std::string_view>> cmds;
  for (int i = 0; i < 16; ++i)
    cmds.push_back(i == 4 ? std::vector<std::string_view>{"DEBUG", "SLEEP", "0.3"}
                          : std::vector<std::string_view>{"INCR", "cut"});
  auto r = c.pipeline(cmds);
  ASSERT_TRUE(std::holds_alternative<call_error>(r));
  EXPECT_EQ(std::get<call_error>(r).kind, call_error::timeout);
  EXPECT_TRUE(std::get<call_error>(r).maybe_applied);
  std::this_thread::sleep_for(350ms);
  auto n = c.call({"GET", "cut"});
  ASSERT_TRUE(std::holds_alternative<reply>(n));
  EXPECT_EQ(std::get<reply>(n).as_string(), "15");  // research §5: the batch ran anyway
}

TEST(ClientFault, WrongPasswordIsAnAuthErrorWithAClearMessage) {
  redis_server srv({.password = "right"});
  test_client c(fast_options("redis://:wrong@127.0.0.1:" + std::to_string(srv.port())));
  auto r = c.call({"PING"});
  ASSERT_TRUE(std::holds_alternative<call_error>(r));
  const auto& e = std::get<call_error>(r);
  EXPECT_EQ(e.kind, call_error::auth);
  EXPECT_NE(e.message.find("AUTH failed"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("WRONGPASS"), std::string::npos) << e.message;
  EXPECT_EQ(e.message.find("wrong"), std::string::npos) << "the password leaked into: " << e.message;
  auto again = c.call({"PING"});
  ASSERT_TRUE(std::holds_alternative<call_error>(again));
  EXPECT_EQ(std::get<call_error>(again).kind, call_error::auth);

  test_client acl(fast_options("redis://nobody:x@127.0.0.1:" + std::to_string(srv.port())));
  auto a = acl.call({"PING"});
  ASSERT_TRUE(std::holds_alternative<call_error>(a));
  EXPECT_EQ(std::get<call_error>(a).kind, call_error::auth);
}

TEST(ClientFault, FlushallAndFunctionFlushUnderPipelines) {
  redis_server srv;
  test_client c(fast_options(srv.url()));
  ASSERT_TRUE(c.set_library("sluice_fault_v1", std::string(counter_library)).ok());
  const std::string_view key[] = {"f"};
  std::vector<function_call> calls(16, function_call{"bump", 1, key});
  for (int round = 0; round < 3; ++round) {
    auto r = c.fcall_pipeline(calls);
    ASSERT_TRUE(std::holds_alternative<std::vector<reply>>(r)) << std::get<call_error>(r).what();
    const auto& replies = std::get<std::vector<reply>>(r);
    for (std::size_t i = 0; i < replies.size(); ++i)
      EXPECT_EQ(replies[i].as_integer(), static_cast<std::int64_t>(i + 1)) << "round " << round;
    test_client admin(fast_options(srv.url()));
    ASSERT_TRUE(std::holds_alternative<reply>(admin.call({"FLUSHALL"})));
    ASSERT_TRUE(std::holds_alternative<reply>(admin.call({"FUNCTION", "FLUSH"})));
  }
  EXPECT_EQ(c.stats().library_loads, 3u);
}

TEST(ClientFault, MaxmemoryRefusesWritesAsServerErrors) {
  redis_server srv({.maxmemory = "1mb"});
  test_client c(fast_options(srv.url()));
  ASSERT_TRUE(c.set_library("sluice_fault_v1", std::string(counter_library)).ok());
  const std::string big(16 * 1024, 'x');
  bool refused = false;
  for (int i = 0; i < 400 && !refused; ++i) {
    const std::string key = "big" + std::to_string(i);
    auto r = c.call({"SET", key, big});
    if (auto* e = std::get_if<call_error>(&r)) {
      EXPECT_EQ(e->kind, call_error::server) << e->what();
      EXPECT_EQ(e->message.substr(0, 3), "OOM") << e->message;
      refused = true;
    }
  }
  ASSERT_TRUE(refused) << "1mb of maxmemory never refused a write";
  // A script that writes is refused too, as a server error; reads still work.
  auto f = bump(c, "counter");
  ASSERT_TRUE(std::holds_alternative<call_error>(f));
  EXPECT_EQ(std::get<call_error>(f).kind, call_error::server) << std::get<call_error>(f).what();
  EXPECT_NE(std::get<call_error>(f).message.find("OOM"), std::string::npos) << std::get<call_error>(f).message;
  EXPECT_TRUE(std::holds_alternative<reply>(c.call({"GET", "big0"})));
  EXPECT_TRUE(std::holds_alternative<reply>(c.call({"PING"})));
}

// A caller's call larger than the socket buffers, to a hung server: what
// the caller could write at once went out on its thread, the rest waits
// on the connection; the call still ends at its deadline, and the
// connection serves the next call once the server is back.
TEST(ClientFault, ACallLargerThanTheSocketBuffersToAHungServerEndsAtItsDeadline) {
  redis_server srv;
  test_client c(fast_options(srv.url()));
  ASSERT_TRUE(std::holds_alternative<reply>(c.call({"PING"})));
  const std::string big(32u << 20, 'x');  // 32 MiB: far past loopback's buffers
  srv.pause();
  const auto t0 = steady::now();
  const auto r = c.call({"SET", "big", big});
  const auto took = since(t0);
  srv.resume();
  ASSERT_TRUE(std::holds_alternative<call_error>(r));
  const call_error& e = std::get<call_error>(r);
  EXPECT_EQ(e.kind, call_error::timeout) << e.what();
  EXPECT_TRUE(e.maybe_applied) << "part of it was written";
  EXPECT_LT(took, 1000ms) << "the 100 ms command timeout bounds the call";
  // The next calls drive the connection: the rest of the SET goes out, or
  // the stall timeout closes it and a new one answers.
  bool back = false;
  for (const auto t1 = steady::now(); !back && since(t1) < 3000ms;)
    back = std::holds_alternative<reply>(c.call({"PING"}));
  ASSERT_TRUE(back);
  auto len = c.call({"STRLEN", "big"});
  ASSERT_TRUE(std::holds_alternative<reply>(len)) << std::get<call_error>(len).what();
  // Either the whole SET arrived (the connection kept writing it) or none
  // of it was applied (the stall timeout closed the connection first).
  const auto n = std::get<reply>(len).as_integer().value_or(-1);
  EXPECT_TRUE(n == static_cast<std::int64_t>(big.size()) || n == 0) << n;
}

TEST(ClientFault, ConnectionClosedByTheServerIsReplacedBeforeTheNextCommand) {
  redis_server srv;
  test_client c(fast_options(srv.url()));
  auto id = c.call({"CLIENT", "ID"});
  ASSERT_TRUE(std::holds_alternative<reply>(id));
  const std::string id_text = std::to_string(std::get<reply>(id).as_integer().value());
  test_client admin(fast_options(srv.url()));
  auto k = admin.call({"CLIENT", "KILL", "ID", id_text});
  ASSERT_TRUE(std::holds_alternative<reply>(k));
  ASSERT_EQ(std::get<reply>(k).as_integer(), 1);
  std::this_thread::sleep_for(20ms);  // let the FIN arrive
  auto r = c.call({"INCR", "after-kill"});
  ASSERT_TRUE(std::holds_alternative<reply>(r)) << std::get<call_error>(r).what();
  EXPECT_EQ(std::get<reply>(r).as_integer(), 1);
  EXPECT_EQ(c.stats().broken, 1u);
  EXPECT_EQ(c.stats().connects, 2u);
}

}  // namespace
}  // namespace sluice::redis::redis_client_fault_test
