// The Redis store's two paths (docs/redis.md, "The store and the module"):
// `?module=auto|on|off` on real redis-servers with and without
// sluice_module.so loaded, and with ACLs that refuse its commands at
// connect or at call time. The server's own `INFO commandstats` shows
// which commands ran; the store's redis_stats() which path it took.
#include <gtest/gtest.h>

#include <charconv>
#include <string>

#include "redis/store_support.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/leaky_queue.hpp"

namespace sluice::redis_test::store_module_test {
namespace {

/// GCRA at 1 per 1000 s with a burst of 4: at one instant exactly 4 admits.
any_policy four_at_once() { return any_policy{gcra::make(rate{1, 1'000'000'000'000}, 4).value()}; }

/// How many times `command` ran on the server of `c` (INFO commandstats).
std::uint64_t calls_of(redis::test_client& c, const std::string& command) {
  const auto r = c.call({"INFO", "commandstats"});
  const auto* rep = std::get_if<redis::reply>(&r);
  if (rep == nullptr || !rep->as_string()) return 0;
  const std::string text(*rep->as_string());
  const std::string head = "cmdstat_" + command + ":calls=";
  const auto at = text.find(head);
  if (at == std::string::npos) return 0;
  std::uint64_t n = 0;
  const char* p = text.data() + at + head.size();
  std::from_chars(p, text.data() + text.size(), n);
  return n;
}

redis::test_client client_of(const testing::redis_server& srv) {
  redis::async_client_options co;
  co.where = redis::parse_url(srv.url()).value();
  co.where.module = redis::module_use::off;
  co.command_timeout = std::chrono::seconds(10);
  return redis::test_client(co);
}

/// The one server's path as the store shows it.
std::string path_of(const redis_store& st) {
  const auto s = st.redis_stats();
  return s.module_paths.size() == 1 ? s.module_paths[0].path : "(" + std::to_string(s.module_paths.size()) + " paths)";
}

/// Decides `n` requests of one check at instant `now`; how many were admitted
/// (every one must come from the store).
int admits(redis_store& st, const check& c, tick now, int n) {
  int yes = 0;
  for (int i = 0; i < n; ++i) {
    const store_decision d = st.decide_at(one_check(c, now));
    EXPECT_EQ(d.from, source::store) << "request " << i;
    yes += d.d.allowed ? 1 : 0;
  }
  return yes;
}

TEST(RedisModulePath, AutoSendsTheModuleItsAlgorithmsAndTheLibraryTheRest) {
  auto raw = client_of(module_server());
  const std::uint64_t one0 = calls_of(raw, "sluice.one");
  auto st = open_store({}, module_server().url());  // no ?module=: auto
  ASSERT_TRUE(st);
  const policy_id g = st->define("g", four_at_once()).value();
  const policy_id s = st->define("s", any_policy{leaky_queue::make(rate{4, 1'000'000'000'000}, 4).value()}).value();
  const check cg{g, "k"}, cs{s, "k"};
  const tick now = 1'000'000'000;
  EXPECT_EQ(admits(*st, cg, now, 6), 4);
  EXPECT_EQ(admits(*st, cs, now, 6), 4);
  EXPECT_EQ(path_of(*st), "module (letters b,c,f,g,l,s,u)");
  // The GCRA decisions ran as SLUICE.ONE (the first may have gone before
  // the connection's probe answered); the leaky queue's, whose leaf the
  // store does not send the module (module.hpp), as FCALLs.
  EXPECT_GE(calls_of(raw, "sluice.one") - one0, 5U);
  const auto stats = st->redis_stats();
  EXPECT_GE(stats.module_calls, 5U);
  EXPECT_GE(stats.library_calls, 6U);
}

/// A store on `url` decides exactly through the library, showing `path`,
/// with no call to the module.
void expect_library(const std::string& url, const std::string& path) {
  auto st = open_store({}, url);
  ASSERT_TRUE(st);
  const check c{st->define("g", four_at_once()).value(), "k"};
  EXPECT_EQ(admits(*st, c, 1'000'000'000, 6), 4);
  EXPECT_EQ(path_of(*st), path);
  EXPECT_EQ(st->redis_stats().module_calls, 0U);
}

TEST(RedisModulePath, AutoWithoutTheModuleIsTheLibrary) {
  expect_library(shared_server().url(), "library (no module)");
}

TEST(RedisModulePath, OffNeverCallsTheModule) {
  auto raw = client_of(module_server());
  const std::uint64_t one0 = calls_of(raw, "sluice.one");
  expect_library(module_server().url() + "?module=off", "library (module=off)");
  EXPECT_EQ(calls_of(raw, "sluice.one"), one0);
}

TEST(RedisModulePath, OnWithoutTheModuleIsAClearErrorAtOpen) {
  store_options o;
  o.url = shared_server().url() + "?module=on";
  auto st = redis_store::open(o);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.err().field, "module");
  EXPECT_NE(st.err().message.find("module=on, but the server runs no sluice module for this user (no module)"),
            std::string::npos)
      << st.err().message;
}

TEST(RedisModulePath, AModuleValueOtherThanAutoOnOffIsRefusedNamingModule) {
  for (const std::string& url : {shared_server().url() + "?module=yes", std::string("unix:///tmp/x.sock?module="),
                                 std::string("redis+cluster://127.0.0.1:1?module=ON")}) {
    store_options o;
    o.url = url;
    auto st = redis_store::open(o);
    ASSERT_FALSE(st) << url;
    EXPECT_EQ(st.err().field, "module") << url;
  }
}

/// A server with the module and two users: `app` may run everything,
/// `lim` everything but the module's commands.
testing::redis_server& acl_server() {
  static testing::redis_server srv([] {
    auto o = testing::with_module();
    o.acl_users = {"app on >pw ~* &* +@all",
                   "lim on >pw ~* &* +@all -sluice.one -sluice.decide -sluice.peek -sluice.report"};
    return o;
  }());
  return srv;
}

std::string acl_url(const std::string& user, const std::string& query) {
  return "redis://" + user + ":pw@127.0.0.1:" + std::to_string(acl_server().port()) + query;
}

TEST(RedisModulePath, AutoUnderAnAclThatRefusesTheModuleIsTheLibrary) {
  expect_library(acl_url("lim", ""), "library (the ACL refuses SLUICE.ONE)");
}

TEST(RedisModulePath, OnUnderAnAclThatRefusesTheModuleIsAClearErrorAtOpen) {
  store_options o;
  o.url = acl_url("lim", "?module=on");
  auto st = redis_store::open(o);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.err().field, "module");
  EXPECT_NE(st.err().message.find("the ACL refuses SLUICE.ONE"), std::string::npos) << st.err().message;
  EXPECT_EQ(st.err().message.find("pw"), std::string::npos) << st.err().message;  // no password shown
}

/// An ACL that refuses the module's commands after the store connected:
/// each refused call ran nothing, so no decision is lost or made twice.
/// Under auto the call goes to the library at once; under on the failure
/// mode answers it.
void refuse_after_connect(const std::string& query, bool expect_module_after) {
  auto admin = client_of(acl_server());
  const std::string user = expect_module_after ? "late_on" : "late_auto";
  ASSERT_TRUE(
      std::holds_alternative<redis::reply>(admin.call({"ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all"})));
  store_options o;
  o.on_failure = failure_mode::fail_closed;
  o.breaker_failures = 0;  // the failure mode answers only the refused calls, not a breaker's cool-down
  auto st = open_store(o, acl_url(user, query));
  ASSERT_TRUE(st);
  const check c{st->define("g", four_at_once()).value(), "k"};
  const tick now = 1'000'000'000;
  EXPECT_EQ(admits(*st, c, now, 2), 2);
  EXPECT_TRUE(path_of(*st).starts_with("module")) << path_of(*st);
  const auto r = admin.call({"ACL", "SETUSER", user, "-sluice.one"});
  ASSERT_TRUE(std::holds_alternative<redis::reply>(r));
  if (!expect_module_after) {
    // auto: the refused call is decided by the library, once.
    EXPECT_EQ(admits(*st, c, now, 4), 2);
    // (The path shown may still read "module": a connection's probe that
    // answered before the ACL changed may report after the refusal; the
    // next call's refusal corrects it. Not checked here.)
    return;
  }
  // on: the failure mode answers, the state untouched ...
  const store_decision d = st->decide_at(one_check(c, now));
  EXPECT_EQ(d.from, source::fail_closed);
  const auto s = st->redis_stats();
  EXPECT_NE(s.last_failure.find("NOPERM"), std::string::npos) << s.last_failure;
  // ... so once allowed again, exactly the 2 admits left remain.
  ASSERT_TRUE(std::holds_alternative<redis::reply>(admin.call({"ACL", "SETUSER", user, "+sluice.one"})));
  EXPECT_EQ(admits(*st, c, now, 4), 2);
}

TEST(RedisModulePath, AutoSendsACallTheAclRefusesAfterConnectToTheLibraryOnce) {
  refuse_after_connect("?module=auto", false);
}

TEST(RedisModulePath, OnAnswersACallTheAclRefusesAfterConnectByTheFailureMode) {
  refuse_after_connect("?module=on", true);
}

}  // namespace
}  // namespace sluice::redis_test::store_module_test
