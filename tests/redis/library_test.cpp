// The FUNCTION library path of the client's fcall (test_client.hpp): loaded when missing (fresh
// server, FUNCTION FLUSH, restart without persistence), and run through
// EVALSHA where FUNCTION is refused (an ACL user without +function).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redis/client_support.hpp"
#include "redis/test_client.hpp"
#include "support/redis_server.hpp"

namespace sluice::redis::redis_library_test {
namespace {

using testing::redis_server;

// incr_by(key, n): INCRBY; echo(args...): the arguments back; fail(): an error reply.
constexpr std::string_view test_library = R"(#!lua name=sluice_test_v1
local function incr_by(keys, args)
  return redis.call('INCRBY', keys[1], args[1])
end
redis.register_function('incr_by', incr_by)
redis.register_function{function_name = 'echo', callback = function(keys, args) return args end}
redis.register_function('fail', function(keys, args) return redis.error_reply('sluice: corrupt state') end)
)";

using client_support::options_for;

std::int64_t incr(test_client& c, std::string_view key, std::string_view by) {
  const std::string_view argv[] = {key, by};
  auto r = c.fcall({"incr_by", 1, argv});
  if (auto* e = std::get_if<call_error>(&r)) {
    ADD_FAILURE() << e->what();
    return -1;
  }
  return std::get<reply>(r).as_integer().value_or(-1);
}

TEST(Library, RejectsCodeThatNamesAnotherLibrary) {
  test_client c(options_for("redis://127.0.0.1:1"));
  auto r = c.set_library("sluice_v2", std::string(test_library));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().field, "library");
  EXPECT_NE(r.err().message.find("#!lua name=sluice_v2"), std::string::npos);
  EXPECT_TRUE(c.set_library("sluice_test_v1", std::string(test_library)).ok());
}

TEST(Library, LoadsItselfOnAFreshServerAndAfterFunctionFlush) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  ASSERT_TRUE(c.set_library("sluice_test_v1", std::string(test_library)).ok());
  EXPECT_EQ(incr(c, "k", "5"), 5);
  EXPECT_EQ(c.stats().library_loads, 1u);
  EXPECT_EQ(incr(c, "k", "2"), 7);
  EXPECT_EQ(c.stats().library_loads, 1u);  // loaded once, not per call
  EXPECT_EQ(c.mode(), library_mode::function);

  ASSERT_TRUE(std::holds_alternative<reply>(c.call({"FLUSHALL"})));
  ASSERT_TRUE(std::holds_alternative<reply>(c.call({"FUNCTION", "FLUSH"})));
  EXPECT_EQ(incr(c, "k", "3"), 3);
  EXPECT_EQ(c.stats().library_loads, 2u);

  srv.restart();  // no persistence: the library is gone
  EXPECT_EQ(incr(c, "k", "4"), 4);
  EXPECT_EQ(c.stats().library_loads, 3u);
}

TEST(Library, ArgumentsAndErrorsPassThrough) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  ASSERT_TRUE(c.set_library("sluice_test_v1", std::string(test_library)).ok());
  const std::string_view args[] = {"a", std::string_view("\0b", 2), "-9007199254740991"};
  auto r = c.fcall({"echo", 0, args});
  ASSERT_TRUE(std::holds_alternative<reply>(r)) << std::get<call_error>(r).what();
  const auto* arr = std::get<reply>(r).as_array();
  ASSERT_NE(arr, nullptr);
  ASSERT_EQ(arr->size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ((*arr)[i].as_string(), args[i]);

  auto f = c.fcall({"fail", 0, {}});
  ASSERT_TRUE(std::holds_alternative<call_error>(f));
  EXPECT_EQ(std::get<call_error>(f).kind, call_error::server);
  EXPECT_EQ(std::get<call_error>(f).message, "sluice: corrupt state");
  EXPECT_EQ(c.stats().library_loads, 1u);  // an error of the function is not a missing library
}

TEST(Library, PipelinedCallsReloadOnceAndKeepOrder) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  ASSERT_TRUE(c.set_library("sluice_test_v1", std::string(test_library)).ok());
  std::vector<std::string> keys;
  for (int i = 0; i < 16; ++i) keys.push_back("pk" + std::to_string(i % 4));
  std::vector<std::array<std::string_view, 2>> argv(keys.size());
  std::vector<function_call> calls;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    argv[i] = {keys[i], "1"};
    calls.push_back({"incr_by", 1, argv[i]});
  }
  for (int round = 1; round <= 2; ++round) {
    auto r = c.fcall_pipeline(calls);
    ASSERT_TRUE(std::holds_alternative<std::vector<reply>>(r)) << std::get<call_error>(r).what();
    const auto& replies = std::get<std::vector<reply>>(r);
    ASSERT_EQ(replies.size(), calls.size());
    for (std::size_t i = 0; i < replies.size(); ++i)
      EXPECT_EQ(replies[i].as_integer(), static_cast<std::int64_t>(i / 4 + 1) + (round - 1) * 4) << i;
  }
  EXPECT_EQ(c.stats().library_loads, 1u);
}

TEST(Library, FallsBackToEvalshaWhenFunctionIsRefused) {
  redis_server srv({.acl_users = {"nofn on >pw ~* +@all -function", "nofcall on >pw ~* +@all -function -fcall"}});
  for (const char* user : {"nofn", "nofcall"}) {
    SCOPED_TRACE(user);
    test_client c(options_for(std::string("redis://") + user + ":pw@127.0.0.1:" + std::to_string(srv.port())));
    ASSERT_TRUE(c.set_library("sluice_test_v1", std::string(test_library)).ok());
    const std::string key = std::string("ev:") + user;
    EXPECT_EQ(incr(c, key, "5"), 5);
    EXPECT_EQ(c.mode(), library_mode::script);
    EXPECT_EQ(incr(c, key, "1"), 6);
    EXPECT_EQ(c.stats().script_loads, 1u);
    // The script cache is emptied (as by a restart or failover): NOSCRIPT -> SCRIPT LOAD -> retry.
    test_client admin(options_for(srv.url()));
    ASSERT_TRUE(std::holds_alternative<reply>(admin.call({"SCRIPT", "FLUSH"})));
    EXPECT_EQ(incr(c, key, "1"), 7);
    EXPECT_EQ(c.stats().script_loads, 2u);
    auto f = c.fcall({"fail", 0, {}});
    ASSERT_TRUE(std::holds_alternative<call_error>(f));
    EXPECT_EQ(std::get<call_error>(f).message.find("sluice: corrupt state") != std::string::npos, true)
        << std::get<call_error>(f).message;
  }
}

}  // namespace
}  // namespace sluice::redis::redis_library_test
