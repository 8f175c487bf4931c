// Answers that need no state (semantics.md): always-allow and always-deny
// (and composites of them only) are decided in process, exactly as the
// memory store decides them, with no call to Redis (INFO commandstats), and
// no failure of Redis — killed or SIGSTOPped, under every failure mode —
// changes them. An answer the rules know but whose figures read a state
// (a cost past a leaf's capacity, all(X, always-deny), any(always-allow,
// X), a request mixing a stateless check with a stateful one) goes to Redis
// while it answers, and keeps its known answer when it does not.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "redis/store_support.hpp"
#include "redis/test_client.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::redis_test::redis_store_state_free_test {
namespace {

const std::map<std::string, std::string> policies = {
    {"allow", "always-allow"},
    {"deny", "always-deny"},
    {"deny2", "any(always-deny, always-deny)"},
    {"allow2", "all(always-allow, any(always-deny, always-allow))"},
    {"mixed", "all(always-allow, always-deny)"},
    {"g", "gcra 1/1h burst=3"},
    {"g_or_deny", "all(gcra 1/1h burst=3, always-deny)"},
    {"allow_or_g", "any(always-allow, gcra 1/1h burst=3)"},
    {"deny_or_g", "any(always-deny, gcra 1/1h burst=3)"},
};

std::map<std::string, policy_id> define(store& s) {
  std::map<std::string, policy_id> ids;
  for (const auto& [name, expr] : policies) ids[name] = s.define(name, parse_policy(expr).value()).value();
  return ids;
}

struct free_answer {
  store_decision d;
  std::vector<decision> per;
  std::vector<std::optional<tick>> grows;
};

free_answer ask(store& s, const std::map<std::string, policy_id>& ids,
                std::vector<std::pair<std::string, std::int64_t>> checks, tick now, std::string_view id = {}) {
  std::vector<check> cs;
  for (const auto& [name, cost] : checks) cs.push_back({ids.at(name), "k", cost});
  free_answer a;
  a.per.assign(cs.size(), decision{});
  a.grows.assign(cs.size(), std::nullopt);
  a.d = s.decide_at({.checks = cs, .now = now, .cost = 1, .id = id}, a.per, a.grows);
  return a;
}

std::map<std::string, std::int64_t> fcalls(const testing::redis_server& srv) {
  redis::async_client_options co;
  co.where = redis::parse_url(srv.url()).value();
  redis::test_client c(co);
  const auto info = c.call({"INFO", "commandstats"});
  std::map<std::string, std::int64_t> out;
  const std::string text(std::get<redis::reply>(info).as_string().value_or(""));
  // Not TIME: the store reads it about once a second to measure its clock's
  // offset (docs/redis.md, "The store's clock"), whatever the requests.
  for (const char* cmd : {"fcall", "fcall_ro", "get", "set"}) {
    const std::string tag = std::string("cmdstat_") + cmd + ":calls=";
    const auto at = text.find(tag);
    out[cmd] = at == std::string::npos ? 0 : std::stoll(text.substr(at + tag.size()));
  }
  return out;
}

/// The stateless requests: one check, several, at costs of their own, with
/// and without an id.
const std::vector<std::vector<std::pair<std::string, std::int64_t>>> stateless_requests = {
    {{"allow", 1}},
    {{"deny", 1}},
    {{"deny2", 1}},
    {{"allow2", 5}},
    {{"mixed", 1}},
    {{"allow", 7}, {"allow2", 1}},
    {{"allow", 1}, {"deny", 3}},
};

TEST(RedisStateFree, AlwaysAllowAndAlwaysDenyAreDecidedWithoutACallExactlyAsInProcess) {
  testing::redis_server srv;
  store_options o;
  o.url = srv.url();
  o.key_prefix = fresh_prefix("free");
  auto r = redis_store::open(o).value();
  memory_store m;
  const auto ri = define(*r);
  const auto mi = define(m);
  ASSERT_TRUE(ask(*r, ri, {{"g", 1}}, 0).d.d.allowed);  // loads the library: not what is counted
  const auto before = fcalls(srv);
  int n = 0;
  for (const auto& req : stateless_requests)
    for (const std::string id : {"", "rid"}) {
      const free_answer a = ask(*r, ri, req, 100 + n, id);
      const free_answer b = ask(m, mi, req, 100 + n, id);
      ++n;
      EXPECT_EQ(a.d.from, source::store) << req[0].first;
      EXPECT_EQ(b.d.from, source::store) << req[0].first;
      EXPECT_EQ(a.d.d, b.d.d) << req[0].first << ": redis " << show(a.d.d) << ", memory " << show(b.d.d);
      EXPECT_EQ(a.per, b.per) << req[0].first;
      EXPECT_EQ(a.grows, b.grows) << req[0].first;
    }
  EXPECT_EQ(fcalls(srv), before) << "a stateless request made a call";
  EXPECT_EQ(r->stats().store_failures, 0U);
}

/// Under every failure mode, with Redis killed or stopped.
class RedisStateFreeDown : public ::testing::TestWithParam<std::pair<failure_mode, bool>> {};

TEST_P(RedisStateFreeDown, KnownAnswersStandWhateverTheFailureMode) {
  const auto [mode, kill] = GetParam();
  testing::redis_server srv;
  store_options o;
  o.url = srv.url();
  o.key_prefix = fresh_prefix("down");
  o.on_failure = mode;
  o.fail_closed_retry_after = 2'000'000'000;
  o.connect_timeout = std::chrono::milliseconds(100);
  o.command_timeout = std::chrono::milliseconds(100);
  o.breaker_failures = 2;
  o.breaker_cool_down = std::chrono::milliseconds(100);
  auto r = redis_store::open(o).value();
  memory_store m;
  const auto ri = define(*r);
  const auto mi = define(m);
  ASSERT_EQ(ask(*r, ri, {{"g", 1}}, 0).d.from, source::store);
  if (kill)
    srv.kill9();
  else
    srv.pause();
  // Stateless: the memory store's answer, from the store, every time.
  for (int round = 0; round < 3; ++round)
    for (const auto& req : stateless_requests) {
      const free_answer a = ask(*r, ri, req, 10 + round, round == 1 ? "rid" : "");
      const free_answer b = ask(m, mi, req, 10 + round);
      EXPECT_EQ(a.d.from, source::store) << req[0].first;
      EXPECT_EQ(a.d.d, b.d.d) << req[0].first;
    }
  const auto is_local = mode == failure_mode::local;
  // Known answers whose figures read a state: kept, by rule (the local
  // limiter follows the same rules, with its own figures).
  const std::vector<std::pair<std::vector<std::pair<std::string, std::int64_t>>, bool>> known = {
      {{{"g", 4}}, false},                    // past the burst of 3
      {{{"g_or_deny", 1}}, false},            // all(X, always-deny)
      {{{"deny", 1}, {"g", 1}}, false},       // a denying stateless check beside a stateful one
      {{{"allow_or_g", 1}}, true},            // any(always-allow, X): X is never charged
      {{{"g", 1}, {"deny_or_g", 9}}, false},  // any(always-deny, X) is X, here past its burst
  };
  for (const auto& [req, allowed] : known) {
    const free_answer a = ask(*r, ri, req, 20);
    EXPECT_EQ(a.d.d.allowed, allowed) << req[0].first << " " << show(a.d.d);
    EXPECT_EQ(a.d.from, is_local ? source::fallback : source::rule) << req[0].first;
    if (!allowed) {
      EXPECT_EQ(a.d.d.retry_after, never) << req[0].first;
    }
  }
  // Answers that depend on a state are the failure mode's.
  const free_answer dep = ask(*r, ri, {{"allow", 1}, {"g", 1}}, 30);
  EXPECT_EQ(dep.d.from, mode == failure_mode::fail_open     ? source::fail_open
                        : mode == failure_mode::fail_closed ? source::fail_closed
                                                            : source::fallback);
  EXPECT_EQ(dep.d.d.allowed, mode != failure_mode::fail_closed);
  if (!kill) srv.resume();
}

INSTANTIATE_TEST_SUITE_P(EveryMode, RedisStateFreeDown,
                         ::testing::Values(std::pair{failure_mode::fail_open, true},
                                           std::pair{failure_mode::fail_open, false},
                                           std::pair{failure_mode::fail_closed, true},
                                           std::pair{failure_mode::fail_closed, false},
                                           std::pair{failure_mode::local, true}, std::pair{failure_mode::local, false}),
                         [](const auto& i) {
                           const char* m = i.param.first == failure_mode::fail_open     ? "FailOpen"
                                           : i.param.first == failure_mode::fail_closed ? "FailClosed"
                                                                                        : "Local";
                           return std::string(m) + (i.param.second ? "Killed" : "Stopped");
                         });

TEST(RedisStateFree, KnownAnswersWithStateFiguresStillAskRedisForTheFigures) {
  // While Redis answers, a known answer whose figures read a state is one
  // call, and every figure is the memory store's.
  testing::redis_server srv;
  store_options o;
  o.url = srv.url();
  o.key_prefix = fresh_prefix("figs");
  auto r = redis_store::open(o).value();
  memory_store m;
  const auto ri = define(*r);
  const auto mi = define(m);
  ASSERT_TRUE(ask(*r, ri, {{"g", 1}}, 0).d.d.allowed);
  ASSERT_TRUE(ask(m, mi, {{"g", 1}}, 0).d.d.allowed);
  const auto before = fcalls(srv);
  const std::vector<std::vector<std::pair<std::string, std::int64_t>>> reqs = {
      {{"g", 4}}, {{"g_or_deny", 1}}, {{"deny", 1}, {"g", 1}}, {{"allow_or_g", 1}}, {{"allow", 1}, {"g", 1}}};
  for (const auto& req : reqs) {
    const free_answer a = ask(*r, ri, req, 5);
    const free_answer b = ask(m, mi, req, 5);
    EXPECT_EQ(a.d.from, source::store) << req[0].first;
    EXPECT_EQ(a.d.d, b.d.d) << req[0].first << ": redis " << show(a.d.d) << ", memory " << show(b.d.d);
    EXPECT_EQ(a.per, b.per) << req[0].first;
    EXPECT_EQ(a.grows, b.grows) << req[0].first;
  }
  EXPECT_EQ(fcalls(srv)["fcall"] - before.at("fcall"), static_cast<std::int64_t>(reqs.size()));
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_state_free_test
