// The Redis store's two paths (docs/redis.md, "The store and the module"):
// `?module=auto|on|off` on real redis-servers with and without
// sluice_module.so loaded, and with ACLs that refuse its commands at
// connect or at call time. The server's own `INFO commandstats` shows
// which commands ran; the store's redis_stats() which path it took.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <utility>

#include "redis/client/module.hpp"
#include "redis/store_support.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/leaky_queue.hpp"

namespace sluice::redis_test::store_module_test {
namespace {

/// GCRA at 1 per 1000 s with a burst of 4: at one instant exactly 4 admits.
any_policy four_at_once() { return any_policy{gcra::make(rate{1, 1'000'000'000'000}, 4).value()}; }

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

TEST(RedisModulePath, AutoSendsTheModuleEveryAlgorithmItsInfoNames) {
  auto raw = raw_client(module_server());
  const std::uint64_t one0 = calls_of(raw, "sluice.one");
  auto st = open_store({}, module_server().url());  // no ?module=: auto
  ASSERT_TRUE(st);
  const policy_id g = st->define("g", four_at_once()).value();
  const policy_id s = st->define("s", any_policy{leaky_queue::make(rate{4, 1'000'000'000'000}, 4).value()}).value();
  const check cg{g, "k"}, cs{s, "k"};
  const tick now = 1'000'000'000;
  EXPECT_EQ(admits(*st, cg, now, 6), 4);
  EXPECT_EQ(admits(*st, cs, now, 6), 4);
  // The letters are what the module's SLUICE.INFO answered at the login:
  // the leaky queue's 'q' among them.
  EXPECT_EQ(path_of(*st), "module (letters b,c,f,g,l,q,s,u)");
  // Both algorithms' decisions ran as SLUICE.ONE (the first may have gone
  // before the connection's probe answered).
  EXPECT_GE(calls_of(raw, "sluice.one") - one0, 11U);
  const auto stats = st->redis_stats();
  EXPECT_GE(stats.module_calls, 11U);
  EXPECT_LE(stats.library_calls, 1U);
}

/// The library's path of the same server, for a twin key's answers.
std::unique_ptr<redis_store> library_twin() { return open_store({}, module_server().url() + "?module=off"); }

TEST(RedisModulePath, ALeakyQueueReportPastItsQueueGoesToTheLibraryOnceAndDecidesAsIt) {
  auto raw = raw_client(module_server());
  auto st = open_store({}, module_server().url() + "?module=on");
  auto lib = library_twin();
  ASSERT_TRUE(st && lib);
  // A queue of Q = 2^20 at L = 2^20 per W = 2^44 ns: its Q·W − 1 (2^64 − 1)
  // is past the report bound a queue of 1 has (2^63 − 1: report_bound.hpp),
  // so a report past its queue, which no longer carries Q, leaves the
  // module unable to rebuild the queue's bound (docs/redis.md).
  constexpr std::int64_t queue = std::int64_t{1} << 20;
  const any_policy q{leaky_queue::make(rate{queue, tick{1} << 44}, queue).value()};
  const check cm{st->define("q", q).value(), "past-m"}, cl{lib->define("q", q).value(), "past-l"};
  const tick now = 1'000'000'000;
  // Both faces' connections have logged in (their probes, error replies of
  // SLUICE.REPORT among them, are behind us).
  ASSERT_EQ(admits(*st, {cm.policy, "warm"}, now, 1), 1);
  // Through the synchronous face and the asynchronous one (the store's
  // pipelines carry decisions only, never a report).
  const auto report = [&](std::int64_t cost, bool async) {
    if (!async) return st->report_at(one_check(cm, now, cost));
    std::promise<store_decision> p;
    const store_request r = one_check(cm, now, cost);
    st->report_async(r, {}, [&p](const store_decision& d) { p.set_value(d); });
    return p.get_future().get();
  };
  ASSERT_EQ(report(1, true).from, source::store);
  ASSERT_EQ(lib->report_at(one_check(cl, now, 1)).from, source::store);  // the twin alike
  for (const auto& [cost, async] :
       {std::pair{std::int64_t{2}, false}, std::pair{queue + 1, false}, std::pair{queue + 5000, true},
        std::pair{2 * queue, true}, std::pair{std::int64_t{3}, true}}) {
    const auto s0 = st->redis_stats();
    const std::uint64_t report0 = calls_of(raw, "sluice.report"), fcall0 = calls_of(raw, "fcall");
    const std::uint64_t refused0 = failed_calls_of(raw, "sluice.report");
    // A connection that logs in meanwhile (the clock measurement's, the
    // eviction poll's, or one more caller's: the store opens them when it
    // needs them) probes every command once, each refused: its refused
    // SLUICE.RELEASE counts the logins, as nothing else here releases.
    const std::uint64_t logins0 = failed_calls_of(raw, "sluice.release");
    const store_decision m = report(cost, async);
    const auto s1 = st->redis_stats();
    const std::uint64_t report1 = calls_of(raw, "sluice.report"), fcall1 = calls_of(raw, "fcall");
    const std::uint64_t refused1 = failed_calls_of(raw, "sluice.report");
    const std::uint64_t logins = failed_calls_of(raw, "sluice.release") - logins0;
    EXPECT_EQ(m.from, source::store) << cost;
    EXPECT_EQ(m.d, lib->report_at(one_check(cl, now, cost)).d) << cost;
    // Every report goes to the module; one past the queue is answered "not
    // in the module" and sent again, once, to the library.
    const bool past = cost > queue;
    EXPECT_EQ(report1 - report0, past ? 0U : 1U) << cost;
    EXPECT_EQ(refused1 - refused0, (past ? 1U : 0U) + logins) << cost;
    EXPECT_EQ(s1.module_calls - s0.module_calls, 1U) << cost;
    EXPECT_EQ(fcall1 - fcall0, past ? 1U : 0U) << cost;
    EXPECT_EQ(s1.library_calls - s0.library_calls, past ? 1U : 0U) << cost;
  }
  // The charged queue decides alike afterwards, by the module.
  for (const tick t : {now, now + (tick{1} << 30), now + (tick{1} << 50)}) {
    const store_decision m = st->decide_at(one_check(cm, t));
    EXPECT_EQ(m.from, source::store);
    EXPECT_EQ(m.d, lib->decide_at(one_check(cl, t)).d) << t;
  }
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
  auto raw = raw_client(module_server());
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
                   "lim on >pw ~* &* +@all -sluice.one -sluice.decide -sluice.peek -sluice.report",
                   "nocas on >pw ~* &* +@all -sluice.cas", "noinfo on >pw ~* &* +@all -sluice.info"};
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

TEST(RedisModulePath, AutoUnderAnAclThatRefusesTheCompareAndSetOrInfoIsTheLibrary) {
  expect_library(acl_url("nocas", ""), "library (the ACL refuses SLUICE.CAS)");
  expect_library(acl_url("noinfo", ""), "library (the ACL refuses SLUICE.INFO)");
}

/// The probe's replies of a server whose module answers `info` to
/// SLUICE.INFO (every command there).
redis::module_caps caps_with_info(redis::reply info) {
  std::vector<redis::reply> replies;
  for (std::size_t c = 1; c < redis::module_command_names.size(); ++c)
    replies.push_back(redis::reply::make_error("sluice: bad request (probe)"));
  replies.push_back(std::move(info));
  return redis::read_module_probe(replies.data(), replies.size(), "sluice_v2_0123abcd");
}

redis::reply info_of(std::int64_t version, std::string protocol, std::string letters) {
  using R = redis::reply;
  return R::make_array({R::make_string("version"), R::make_integer(version), R::make_string("protocol"),
                        R::make_string(std::move(protocol)), R::make_string("letters"),
                        R::make_string(std::move(letters))});
}

TEST(RedisModulePath, TheLettersAreWhatSluiceInfoAnswersAndAnOtherModuleIsTheLibrary) {
  const auto two = caps_with_info(info_of(2, "sluice_v2", "gf"));
  EXPECT_TRUE(two.complete());
  EXPECT_EQ(two.letters, redis::letter_bit('g') | redis::letter_bit('f'));
  EXPECT_TRUE(two.takes(redis::module_command::one, redis::letter_bit('g')));
  EXPECT_FALSE(two.takes(redis::module_command::one, redis::letter_bit('q')));
  EXPECT_TRUE(two.takes(redis::module_command::cas, 0));
  EXPECT_EQ(describe_path(two, redis::module_use::automatic), "module (letters f,g)");
  const std::pair<redis::reply, std::string> others[] = {
      {info_of(1, "sluice_v2", "g"), "module version 1, older than 2"},
      {info_of(3, "sluice_v3", "g"), "module protocol sluice_v3, not sluice_v2"},
      {info_of(2, "sluice_v2", "g?"), "SLUICE.INFO's letters \"g?\" are not algorithm letters"},
      {redis::reply::make_integer(2), "SLUICE.INFO's reply is not field-value pairs"},
      {redis::reply::make_error("ERR unknown command 'SLUICE.INFO'"),
       "a module without SLUICE.INFO (older than version 2)"}};
  for (const auto& [info, why] : others) {
    const auto caps = caps_with_info(info);
    EXPECT_FALSE(caps.complete()) << why;
    EXPECT_EQ(caps.letters, 0U) << why;
    EXPECT_EQ(describe_path(caps, redis::module_use::automatic), "library (" + why + ")");
  }
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
  auto admin = raw_client(acl_server());
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
  // The refusal named: NOPERM from the call, or, from a connection of the
  // store's that logged in after the ACL changed (its clock measurement's
  // or eviction poll's, opened when first needed), its probe's refusal.
  const auto s = st->redis_stats();
  EXPECT_TRUE(s.last_failure.find("NOPERM") != std::string::npos ||
              s.last_failure.find("the ACL refuses SLUICE.ONE") != std::string::npos)
      << s.last_failure;
  // ... so once allowed again, exactly the 2 admits left remain. A
  // connection refused at its login connects again after its back-off (5
  // ms, doubling): decisions on another key, which charge only that key,
  // wait for the store to answer a decision again. (A peek does not show
  // it: SLUICE.PEEK was never refused, and a peek may go out on another
  // connection than the decision's; a full run of the suite met that.)
  ASSERT_TRUE(std::holds_alternative<redis::reply>(admin.call({"ACL", "SETUSER", user, "+sluice.one"})));
  const check elsewhere{c.policy, "k-another"};
  EXPECT_TRUE(eventually([&] { return st->decide_at(one_check(elsewhere, now)).from == source::store; }));
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
