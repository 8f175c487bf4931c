// The client against a real redis-server (through test_client: the
// asynchronous client's synchronous face): call, pipeline, AUTH/ACL,
// SELECT, unix sockets, threads.
#include "redis/client_support.hpp"
#include "redis/test_client.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "support/redis_cluster.hpp"
#include "support/redis_server.hpp"

namespace sluice::redis::redis_client_test {
namespace {

using testing::redis_server;
using testing::redis_server_options;

using client_support::ok;
using client_support::options_for;

TEST(RedisServer, StartsAnswersAndStopsByPid) {
  redis_server srv;
  ASSERT_GT(srv.port(), 0);
  ASSERT_TRUE(srv.running());
  test_client c(options_for(srv.url()));
  EXPECT_EQ(ok(c.call({"PING"})).as_status(), "PONG");
  const pid_t pid = srv.pid();
  srv.kill9();
  EXPECT_FALSE(srv.running());
  EXPECT_NE(::kill(pid, 0), 0);  // gone and reaped
  srv.restart();
  EXPECT_TRUE(srv.running());
}

TEST(RedisServer, TwoServersGetDifferentPorts) {
  redis_server a;
  redis_server b;
  EXPECT_NE(a.port(), b.port());
}

// The harness's tool runner (redis-cli for the cluster tests): output and
// status, and a tool past its timeout killed with what it was doing.
TEST(RedisServer, ToolsRunWithTheirOutputAndAreKilledAtTheirTimeout) {
  const auto r = testing::run_tool({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::seconds(10));
  EXPECT_EQ(r.out, "out\nerr\n");
  EXPECT_EQ(r.status, 3);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)testing::run_tool({"/bin/sleep", "30"}, std::chrono::milliseconds(300));
    ADD_FAILURE() << "no timeout";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("took longer than 300 ms (killed; it was running"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(Client, CallDecodesEveryReplyType) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  EXPECT_EQ(ok(c.call({"SET", "k", "v"})).as_status(), "OK");
  EXPECT_EQ(ok(c.call({"GET", "k"})).as_string(), "v");
  EXPECT_TRUE(ok(c.call({"GET", "missing"})).is_nil());
  EXPECT_EQ(ok(c.call({"INCRBY", "n", "41"})).as_integer(), 41);
  EXPECT_EQ(ok(c.call({"INCR", "n"})).as_integer(), 42);
  const reply arr = ok(c.call({"MGET", "k", "missing", "n"}));
  ASSERT_NE(arr.as_array(), nullptr);
  ASSERT_EQ(arr.elements.size(), 3u);
  EXPECT_EQ(arr.elements[0].as_string(), "v");
  EXPECT_TRUE(arr.elements[1].is_nil());
  EXPECT_EQ(arr.elements[2].as_string(), "42");
  // Strict accessors: a string is not an integer, a status is not a string.
  EXPECT_FALSE(arr.elements[2].as_integer().has_value());
  EXPECT_FALSE(ok(c.call({"PING"})).as_string().has_value());
}

TEST(Client, BinarySafeArguments) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  const std::string key("a\0b\r\nc", 6);
  const std::string value("\0\xff\r\n", 4);
  EXPECT_EQ(ok(c.call({"SET", key, value})).as_status(), "OK");
  EXPECT_EQ(ok(c.call({"GET", key})).as_string(), value);
}

TEST(Client, ErrorReplyIsServerError) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  ok(c.call({"SET", "k", "v"}));
  auto r = c.call({"INCR", "k"});
  ASSERT_TRUE(std::holds_alternative<call_error>(r));
  const auto& e = std::get<call_error>(r);
  EXPECT_EQ(e.kind, call_error::server);
  EXPECT_NE(e.message.find("not an integer"), std::string::npos) << e.message;
  // The connection is still usable.
  EXPECT_EQ(ok(c.call({"GET", "k"})).as_string(), "v");
}

TEST(Client, PipelineKeepsOrderAndPerCommandErrors) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  std::vector<std::vector<std::string_view>> cmds;
  for (int i = 0; i < 100; ++i) cmds.push_back({"INCR", "p"});
  cmds.push_back({"HSET", "p", "f", "v"});  // WRONGTYPE: an element, not a batch failure
  cmds.push_back({"GET", "p"});
  auto r = c.pipeline(cmds);
  ASSERT_TRUE(std::holds_alternative<std::vector<reply>>(r)) << std::get<call_error>(r).what();
  const auto& replies = std::get<std::vector<reply>>(r);
  ASSERT_EQ(replies.size(), cmds.size());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(replies[static_cast<std::size_t>(i)].as_integer(), i + 1);
  EXPECT_TRUE(replies[100].is_error());
  EXPECT_EQ(replies[100].as_error()->substr(0, 9), "WRONGTYPE");
  EXPECT_EQ(replies[101].as_string(), "100");
  auto empty = c.pipeline({});
  ASSERT_TRUE(std::holds_alternative<std::vector<reply>>(empty));
  EXPECT_TRUE(std::get<std::vector<reply>>(empty).empty());
}

TEST(Client, EmptyCommandsAreRefusedWithoutSending) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  auto r = c.call(std::span<const std::string_view>{});
  ASSERT_TRUE(std::holds_alternative<call_error>(r));
  EXPECT_EQ(std::get<call_error>(r).kind, call_error::protocol);
  const std::vector<std::vector<std::string_view>> cmds{{"PING"}, {}};
  auto p = c.pipeline(cmds);
  ASSERT_TRUE(std::holds_alternative<call_error>(p));
  EXPECT_EQ(std::get<call_error>(p).kind, call_error::protocol);
  EXPECT_EQ(ok(c.call({"PING"})).as_status(), "PONG");
}

TEST(Client, PasswordAuth) {
  redis_server srv({.password = "p@ss word"});
  test_client good(options_for("redis://:p%40ss%20word@127.0.0.1:" + std::to_string(srv.port())));
  EXPECT_EQ(ok(good.call({"PING"})).as_status(), "PONG");

  test_client none(options_for(srv.url()));
  auto r = none.call({"GET", "k"});
  ASSERT_TRUE(std::holds_alternative<call_error>(r));
  EXPECT_EQ(std::get<call_error>(r).kind, call_error::auth) << std::get<call_error>(r).what();
}

TEST(Client, AclUserAuth) {
  redis_server srv({.acl_users = {"app on >apppw ~app:* +@all"}});
  test_client c(options_for("redis://app:apppw@127.0.0.1:" + std::to_string(srv.port())));
  EXPECT_EQ(ok(c.call({"SET", "app:x", "1"})).as_status(), "OK");
  auto denied = c.call({"SET", "other", "1"});
  ASSERT_TRUE(std::holds_alternative<call_error>(denied));
  EXPECT_EQ(std::get<call_error>(denied).kind, call_error::server);
  EXPECT_NE(std::get<call_error>(denied).message.find("NOPERM"), std::string::npos);
}

TEST(Client, SelectsTheDatabase) {
  redis_server srv;
  test_client db3(options_for(srv.url() + "/3"));
  test_client db0(options_for(srv.url()));
  ok(db3.call({"SET", "k", "three"}));
  EXPECT_TRUE(ok(db0.call({"GET", "k"})).is_nil());
  EXPECT_EQ(ok(db3.call({"GET", "k"})).as_string(), "three");
  EXPECT_EQ(ok(db3.call({"CLIENT", "INFO"})).as_string()->find("db=3") != std::string_view::npos, true);
}

TEST(Client, ADatabaseTheServerLacksIsAClearError) {
  redis_server srv;
  test_client c(options_for(srv.url() + "/99"));
  auto r = c.call({"PING"});
  ASSERT_TRUE(std::holds_alternative<call_error>(r));
  const auto& e = std::get<call_error>(r);
  EXPECT_EQ(e.kind, call_error::server);
  EXPECT_NE(e.message.find("SELECT failed"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("out of range"), std::string::npos) << e.message;
}

TEST(Client, UnixSocket) {
  redis_server srv({.unix_socket = true});
  test_client c(options_for(srv.unix_url() + "?db=2"));
  ok(c.call({"SET", "k", "v"}));
  test_client tcp(options_for(srv.url() + "/2"));
  EXPECT_EQ(ok(tcp.call({"GET", "k"})).as_string(), "v");
}

TEST(Client, ThreadsShareOneClient) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  constexpr int threads = 4;
  constexpr int per_thread = 500;
  std::atomic<int> failures{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < per_thread; ++i) {
        auto r = c.call({"INCR", "shared"});
        if (!std::holds_alternative<reply>(r)) failures.fetch_add(1);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(ok(c.call({"GET", "shared"})).as_string(), std::to_string(threads * per_thread));
  EXPECT_LE(c.stats().connects, static_cast<std::uint64_t>(threads));
}

}  // namespace
}  // namespace sluice::redis::redis_client_test
