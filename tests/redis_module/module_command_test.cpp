// The module's commands on real redis-servers: CL.THROTTLE's replies, the
// keys each command declares, bad input answered with a clear error (and
// the server still up), an ACL that refuses a command, the effect
// replicated to a replica that has no module, and deny-oom.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "redis_module/module_support.hpp"
#include "sluice/core/concurrency.hpp"
#include "sluice/core/policy_expr.hpp"

namespace sluice::redis_module_test::module_command_test {
namespace {

using module_support::fcall;
using module_support::module_call;
using module_support::one_header;
using module_support::run;
using module_support::tree_header;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// max_burst 2 (a limit of 3), 10 per 60 s: one unit every 6 s. All calls
// within a second, so every figure is exact in whole seconds (rounded up).
TEST(RedisModuleThrottle, RepliesAsRedisCellDecidedByGcra) {
  auto c = module_support::client_of(module_support::shared_server());
  const auto t = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{"CL.THROTTLE", "th:a"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(c, argv);
  };
  EXPECT_EQ(t({"2", "10", "60"}), "[0 3 2 -1 6]");
  EXPECT_EQ(t({"2", "10", "60", "1"}), "[0 3 1 -1 12]");
  EXPECT_EQ(t({"2", "10", "60", "3"}), "[1 3 1 12 12]");  // 3 units: two more intervals
  EXPECT_EQ(t({"2", "10", "60", "0"}), "[0 3 1 -1 12]");  // a quantity of 0 asks and takes nothing
  EXPECT_EQ(t({"2", "10", "60", "4"}), "[1 3 1 -1 12]");  // above the limit: never (-1)
  EXPECT_EQ(t({"2", "10", "60"}), "[0 3 0 -1 18]");
  EXPECT_EQ(t({"2", "10", "60"}), "[1 3 0 6 18]");
  // The state is the Lua library's GCRA value: a 'g' tag and four fields,
  // expiring when fresh (18 s from the first call, rounded down, + 2 ms).
  const std::string v = run(c, {"GET", "th:a"});
  EXPECT_TRUE(v.starts_with("s41:67")) << v;  // 41 bytes, 'g'
  const long long pttl = std::atoll(run(c, {"PTTL", "th:a"}).c_str());
  EXPECT_GT(pttl, 16000);
  EXPECT_LE(pttl, 18002);
  // Another burst or period decides on the same state (as redis-cell):
  // with max_burst 5 the same debt leaves room for 3 more.
  EXPECT_EQ(t({"5", "10", "60"}), "[0 6 2 -1 24]");
  // Another count: the stored debt's units differ.
  EXPECT_TRUE(has(t({"2", "11", "60"}), "another count")) << t({"2", "11", "60"});
}

TEST(RedisModuleThrottle, BadArgumentsAreClearErrors) {
  auto c = module_support::client_of(module_support::shared_server());
  const auto t = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{"CL.THROTTLE"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(c, argv);
  };
  EXPECT_TRUE(has(t({"k", "1", "2"}), "wrong number of arguments")) << t({"k", "1", "2"});
  EXPECT_TRUE(has(t({"k", "1", "2", "3", "4", "5"}), "wrong number of arguments"));
  EXPECT_EQ(t({"k", "x", "10", "60"}), "ERR<ERR CL.THROTTLE: max_burst must be an integer (got 'x')>");
  EXPECT_EQ(t({"k", "-1", "10", "60"}), "ERR<ERR CL.THROTTLE: max_burst must be at least 0 (got -1)>");
  EXPECT_EQ(t({"k", "1", "0", "60"}), "ERR<ERR CL.THROTTLE: count must be at least 1 (got 0)>");
  EXPECT_EQ(t({"k", "1", "10", "0"}), "ERR<ERR CL.THROTTLE: period must be at least 1 (got 0)>");
  EXPECT_EQ(t({"k", "1", "10", "60", "-2"}), "ERR<ERR CL.THROTTLE: quantity must be at least 0 (got -2)>");
  EXPECT_EQ(t({"k", "1", "10", "1e3"}), "ERR<ERR CL.THROTTLE: period must be an integer (got '1e3')>");
  EXPECT_EQ(t({"k", "1", "10", "99999999999999999999"}),
            "ERR<ERR CL.THROTTLE: period must be an integer (got '99999999999999999999')>");
  EXPECT_TRUE(has(t({"k", "1000000000", "1", "4000000"}), "below 2^52 microseconds"));
  ASSERT_EQ(run(c, {"LPUSH", "th:list", "x"}), "1");
  EXPECT_TRUE(has(t({"th:list", "1", "10", "60"}), "WRONGTYPE"));
  ASSERT_EQ(run(c, {"SET", "th:text", "hello"}), "+OK");
  EXPECT_TRUE(has(t({"th:text", "1", "10", "60"}), "WRONGTYPE CL.THROTTLE"));
  EXPECT_EQ(run(c, {"GET", "th:text"}), "s5:68656c6c6f");  // untouched
  EXPECT_EQ(run(c, {"PING"}), "+PONG");
}

TEST(RedisModule, BadRequestsAreClearErrorsAndWriteNothing) {
  auto c = module_support::client_of(module_support::shared_server());
  const redis::plan pl = redis::plan::make(parse_policy("gcra 10/1s burst=2").value()).value();
  std::string blob = one_header(1000, 1, 3);
  pl.append_leaf(0, 1000, 1, blob);
  EXPECT_TRUE(has(run(c, {"SLUICE.ONE"}), "wrong number of arguments"));
  EXPECT_TRUE(has(run(c, {"SLUICE.ONE", "x", "k", blob}), "numkeys must be an integer"));
  EXPECT_TRUE(has(run(c, {"SLUICE.ONE", "5", "k", blob}), "numkeys must be an integer"));
  EXPECT_TRUE(has(run(c, {"SLUICE.ONE", "-1", "k", blob}), "numkeys must be an integer"));
  EXPECT_TRUE(has(module_call(c, "one", {"e:k"}, {blob.substr(0, 20)}), "sluice: bad request (the argument ends"));
  EXPECT_TRUE(has(module_call(c, "one", {"e:k"}, {blob.substr(0, blob.size() - 1)}), "sluice: bad request"));
  EXPECT_TRUE(has(module_call(c, "one", {"e:k"}, {}), "sluice: bad request"));
  std::string fraction = blob;
  fraction[7] = 0x3f;  // th's double is no longer an integer
  fraction[6] = static_cast<char>(0xf8);
  EXPECT_TRUE(has(module_call(c, "one", {"e:k"}, {fraction}), "th is not an integer below 2^53"));
  std::string tree = tree_header(1000, 1, 3);
  tree += "A";
  redis::put_number(tree, 2);
  pl.append_tree(1000, 1, tree);
  pl.append_tree(1000, 1, tree);
  EXPECT_TRUE(has(module_call(c, "decide", {"e:k"}, {tree}), "fewer keys than the request's checks"));
  EXPECT_TRUE(has(module_call(c, "decide", {"e:k", "e:k2"}, {tree.substr(0, tree.size() - 3)}), "sluice: bad request"));
  // A windowed leaf whose window and offset split another instant than
  // the call's: a clear error.
  const redis::plan fixed = redis::plan::make(parse_policy("fixed-window 10/1s").value()).value();
  std::string fb = one_header(1000, 1, 3);
  fixed.append_leaf(0, 5'000'000'000, 1, fb);
  EXPECT_TRUE(has(module_call(c, "one", {"e:f"}, {fb}), "not the call's instant"))
      << module_call(c, "one", {"e:f"}, {fb});
  // A leaky queue leaf whose K is not its queue's report bound.
  const redis::plan leaky = redis::plan::make(parse_policy("leaky-queue 10/1s queue=5").value()).value();
  std::string qb = one_header(1000, 1, 3);
  leaky.append_leaf(0, 1000, 1, qb);
  std::int64_t kq = 0;  // the leaf's last two numbers: kq kr
  ASSERT_TRUE(redis::get_number(qb.data() + qb.size() - 16, kq));
  std::string bumped;
  redis::put_number(bumped, kq + 1);
  qb.replace(qb.size() - 16, 8, bumped);
  EXPECT_TRUE(has(module_call(c, "one", {"e:f"}, {qb}), "not its queue's report bound"))
      << module_call(c, "one", {"e:f"}, {qb});
  // A concurrency leaf's report through SLUICE.ONE (it fits and writes
  // nothing): an error, as the library's _one fails on it.
  const redis::plan lease = redis::plan::make(parse_policy("concurrency 2 lease=1s").value()).value();
  std::string lb = one_header(1000, 1, 3);
  lease.append_leaf(0, 1000, 1, lb, true);
  EXPECT_TRUE(has(module_call(c, "one", {"e:f"}, {lb}), "reports go through SLUICE.REPORT"))
      << module_call(c, "one", {"e:f"}, {lb});
  EXPECT_TRUE(has(fcall(c, "one", {"e:f"}, {lb}), "ERR<")) << fcall(c, "one", {"e:f"}, {lb});
  // A key of another type, a corrupt value.
  ASSERT_EQ(run(c, {"LPUSH", "e:list", "x"}), "1");
  EXPECT_EQ(module_call(c, "one", {"e:list"}, {blob}), "ERR<sluice: corrupt state (not a string key)>");
  const std::string tag(pl.leaves()[0].tag_view());
  ASSERT_EQ(run(c, {"SET", "e:bad", tag + "short"}), "+OK");
  EXPECT_TRUE(module_call(c, "one", {"e:bad"}, {blob}).starts_with("ERR<sluice: corrupt state (gcra: "));
  EXPECT_EQ(run(c, {"STRLEN", "e:bad"}), "14");              // untouched
  EXPECT_EQ(run(c, {"EXISTS", "e:k", "e:k2", "e:f"}), "0");  // nothing written by a refused call
  EXPECT_EQ(run(c, {"PING"}), "+PONG");
}

TEST(RedisModule, CommandsDeclareTheirKeys) {
  auto c = module_support::client_of(module_support::shared_server());
  EXPECT_EQ(run(c, {"COMMAND", "GETKEYS", "SLUICE.DECIDE", "3", "id", "{u}:a", "{u}:b", "blob", "identity"}),
            "[s2:6964 s5:7b757d3a61 s5:7b757d3a62]");
  EXPECT_EQ(run(c, {"COMMAND", "GETKEYS", "SLUICE.ONE", "1", "k", "blob"}), "[s1:6b]");
  EXPECT_EQ(run(c, {"COMMAND", "GETKEYS", "CL.THROTTLE", "user:1", "1", "2", "3"}), "[s6:757365723a31]");
  const std::string info = run(c, {"COMMAND", "INFO", "SLUICE.ONE", "SLUICE.PEEK", "CL.THROTTLE"});
  EXPECT_TRUE(has(info, "+write +denyoom +module +fast")) << info;
  EXPECT_TRUE(has(info, "+readonly +module")) << info;
}

TEST(RedisModule, AnAclThatRefusesACommandGivesAClearError) {
  // 7.0 gives module commands no ACL category: a user with the categories
  // the Lua library needs may FCALL but not run the module's commands
  // until they are granted by name (docs/redis.md, "The Redis module").
  testing::redis_server srv([] {
    auto o = module_support::with_module();
    o.acl_users = {"lua on >pw ~* +@read +@write +@fast +@scripting +@connection",
                   "mod on >pw ~rl:* +@read +@write +@fast +@scripting +@connection +sluice.one +cl.throttle"};
    return o;
  }());
  auto admin = module_support::client_of(srv);
  auto lua = module_support::client_of(srv, "redis://lua:pw@127.0.0.1:" + std::to_string(srv.port()));
  auto mod = module_support::client_of(srv, "redis://mod:pw@127.0.0.1:" + std::to_string(srv.port()));
  const redis::plan pl = redis::plan::make(parse_policy("gcra 10/1s burst=2").value()).value();
  std::string blob = one_header(1000, 1, 3);
  pl.append_leaf(0, 1000, 1, blob);
  EXPECT_EQ(module_support::fcall(lua, "one", {"rl:a"}, {blob}).substr(0, 3), "[1 ");
  EXPECT_EQ(module_call(lua, "one", {"rl:b"}, {blob}),
            "ERR<NOPERM this user has no permissions to run the 'sluice.one' command>");
  EXPECT_EQ(run(lua, {"CL.THROTTLE", "rl:c", "1", "1", "1"}),
            "ERR<NOPERM this user has no permissions to run the 'cl.throttle' command>");
  EXPECT_EQ(module_call(mod, "one", {"rl:b"}, {blob}).substr(0, 3), "[1 ");
  EXPECT_EQ(module_call(mod, "one", {"other:b"}, {blob}),
            "ERR<NOPERM this user has no permissions to access one of the keys used as arguments>");
  EXPECT_EQ(module_call(mod, "decide", {"rl:b"}, {blob}),
            "ERR<NOPERM this user has no permissions to run the 'sluice.decide' command>");
  EXPECT_EQ(run(admin, {"EXISTS", "rl:c", "other:b"}), "0");
}

TEST(RedisModule, AReplicaWithoutTheModuleHoldsTheSameValuesAndExpiries) {
  testing::redis_server primary(module_support::with_module({"repl-diskless-sync-delay 0"}));
  testing::redis_server replica;  // no module: it gets the effect, SET … PXAT
  auto p = module_support::client_of(primary);
  auto r = module_support::client_of(replica);
  ASSERT_EQ(run(r, {"REPLICAOF", "127.0.0.1", std::to_string(primary.port())}), "+OK");
  for (int i = 0; i < 400 && !has(run(r, {"INFO", "replication"}), "master_link_status:up"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  const redis::plan pl =
      redis::plan::make(parse_policy("all(gcra 10/1s burst=2, token-bucket 5/1m burst=5)").value()).value();
  const tick now = 1'700'000'000'000'000'000;
  std::string tree = tree_header(now, 1, 3, true, 60000);
  pl.append_tree(now, 1, tree);
  ASSERT_EQ(module_call(p, "decide", {"rp:id", "rp:a", "rp:b"}, {tree, "ident"}).substr(0, 3), "[1 ");
  const redis::plan one = redis::plan::make(parse_policy("gcra 10/1h burst=2").value()).value();
  std::string blob = one_header(now, 1'000'000, 3);
  one.append_leaf(0, now, 1, blob);
  ASSERT_EQ(module_call(p, "one", {"rp:one"}, {blob}).substr(0, 3), "[1 ");
  ASSERT_EQ(run(p, {"CL.THROTTLE", "rp:cell", "5", "10", "60"}).substr(0, 3), "[0 ");
  std::string nottl = one_header(now, 0, 0);  // tns 0, base 0: no expiry
  one.append_leaf(0, now, 1, nottl);
  ASSERT_EQ(module_call(p, "one", {"rp:forever"}, {nottl}).substr(0, 3), "[1 ");
  // A lease released (its key keeps its expiry), a value deleted by a
  // compare-and-set, a refund's mark (expiring with the record): their
  // effects reach the replica too.
  const redis::plan lease = redis::plan::make(parse_policy("concurrency 2 lease=10s").value()).value();
  for (const std::uint64_t nonce : {5, 6}) {
    const lease_scope scope(nonce);
    std::string b = tree_header(now, 1, 3);
    lease.append_tree(now, 1, b);
    ASSERT_EQ(module_call(p, "decide", {"rp:lease"}, {b}).substr(0, 3), "[1 ");
  }
  const std::string released = module_call(p, "release", {"rp:lease"}, {module_support::release_blob(now, 5, lease)});
  ASSERT_TRUE(released.starts_with("[1 s") && !released.ends_with(" nil]")) << released;
  ASSERT_EQ(run(p, {"SET", "rp:gone", "x"}), "+OK");
  ASSERT_EQ(module_call(p, "cas", {"rp:gone"}, {"0", "0", "", "", "=x", "-", "0"}), "[1]");
  ASSERT_EQ(run(p, {"SET", "rp:rid", "rec", "PX", "60000"}), "+OK");
  ASSERT_EQ(module_call(p, "refund", {"rp:rid", "rp:mark"}, {"rec"}), "[1]");
  ASSERT_EQ(run(p, {"WAIT", "1", "5000"}), "1");
  EXPECT_EQ(run(r, {"EXISTS", "rp:gone"}), "0");
  for (const std::string k : {"rp:id", "rp:a", "rp:b", "rp:one", "rp:cell", "rp:forever", "rp:lease", "rp:mark"}) {
    EXPECT_EQ(run(r, {"GET", k}), run(p, {"GET", k})) << k;
    EXPECT_NE(run(r, {"GET", k}), "nil") << k;
    EXPECT_EQ(run(r, {"PEXPIRETIME", k}), run(p, {"PEXPIRETIME", k})) << k;
  }
  EXPECT_EQ(run(r, {"PEXPIRETIME", "rp:forever"}), "-1");
  EXPECT_FALSE(has(replica.log_tail(200), "CRITICAL")) << replica.log_tail(200);
}

TEST(RedisModule, DenyOomRefusesBeforeAnythingRuns) {
  testing::redis_server srv([] {
    auto o = module_support::with_module();
    o.maxmemory = "1";  // below what the server already uses: every write command is refused
    return o;
  }());
  auto c = module_support::client_of(srv);
  const redis::plan pl = redis::plan::make(parse_policy("gcra 10/1s burst=2").value()).value();
  std::string blob = one_header(1000, 1, 3);
  pl.append_leaf(0, 1000, 1, blob);
  EXPECT_TRUE(module_call(c, "one", {"oom:k"}, {blob}).starts_with("ERR<OOM "))
      << module_call(c, "one", {"oom:k"}, {blob});
  EXPECT_TRUE(run(c, {"CL.THROTTLE", "oom:c", "1", "1", "1"}).starts_with("ERR<OOM "));
  EXPECT_EQ(run(c, {"DBSIZE"}), "0");
}

}  // namespace
}  // namespace sluice::redis_module_test::module_command_test
