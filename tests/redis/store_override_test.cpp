// Overrides in the Redis store (semantics.md, "Overrides"; docs/redis.md,
// "Overrides") against a real redis-server: the redefinition scenarios'
// traces (redefine_scenarios.hpp) with overrides set, replaced and deleted
// mid-trace decide field for field as the memory store, one call at a time
// (with request ids) and pipelined; a decision racing a change is never
// decided on a fresh state; a request id's repeat stands after the override
// that decided it is gone; and the admin members (get, list, the bound, bad
// input), the asynchronous path, the deny cache, refunds and releases.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "redis/redefine_scenarios.hpp"
#include "redis/store_support.hpp"
#include "redis/test_client.hpp"
#include "sluice/core/concurrency.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/quota.hpp"

namespace sluice::redis_test::redis_store_override_test {
namespace {

using conformance::answer;
using namespace redefine;

any_policy expr(std::string_view text) { return parse_policy(text).value(); }

/// `name` defined as `text` at 0 in the Redis store and in the memory
/// store: (the Redis store's id, the memory store's).
template <typename Memory>
std::pair<policy_id, policy_id> define_both(redis_store& st, Memory& mem, std::string_view name,
                                            std::string_view text) {
  return {st.define_at(name, expr(text), 0).value(), mem.define_at(name, expr(text), 0).value()};
}

/// The limit a change puts on its key: its override, or for a delete the
/// configured policy then in force (the trace's, or its latest redefinition).
any_policy limit_after(const scenario& sc, std::size_t k) {
  const change& c = sc.changes[k];
  if (c.what != op::delete_override) return c.to;
  any_policy p = sc.t.policies[c.policy].policy;
  for (std::size_t i = 0; i < k; ++i)
    if (sc.changes[i].what == op::redefine && sc.changes[i].policy == c.policy) p = sc.changes[i].to;
  return p;
}

/// After change `k` wrote the conservative fallback (docs/redis.md,
/// "Overrides"), the new limit is at least fully used at the change's
/// instant `t`: a request on the key is denied while that limit's
/// definition denies every request after a full use — a sliding log for
/// `W` ticks from `t`, GCRA, a token bucket and a leaky queue while
/// `(now − t)·L < W` (one unit's emission interval; always with `L = 0`),
/// a window of limit 0 always — up to the key's next change. Checked where the limit is one such leaf;
/// how many requests were checked.
std::size_t check_fallback_held(const scenario& sc, std::size_t k, const std::vector<answer>& got,
                                const std::string& why) {
  const change& c = sc.changes[k];
  const any_policy p = limit_after(sc, k);
  std::optional<std::pair<std::int64_t, tick>> held;  // (L, W): denied while (now − t)·L < W
  if (const auto* log = std::get_if<sliding_log>(&p)) held = {{1, log->limit().window}};
  if (const auto* g = std::get_if<gcra>(&p)) held = {{g->limit().limit, g->limit().window}};
  if (const auto* b = std::get_if<token_bucket>(&p)) held = {{b->limit().limit, b->limit().window}};
  if (const auto* q = std::get_if<leaky_queue>(&p)) held = {{q->limit().limit, q->limit().window}};
  // A window of limit 0 admits nothing, whatever the fallback kept.
  if (const auto* w = std::get_if<sliding_counter>(&p); w != nullptr && w->limit().limit == 0) held = {{0, 1}};
  if (const auto* w = std::get_if<fixed_window>(&p); w != nullptr && w->limit().limit == 0) held = {{0, 1}};
  if (const auto* w = std::get_if<sliding_buckets>(&p); w != nullptr && w->limit().limit == 0) held = {{0, 1}};
  if (!held) return 0;
  std::size_t end = sc.t.steps.size();
  for (std::size_t i = k + 1; i < sc.changes.size(); ++i)
    if (sc.changes[i].policy == c.policy && (sc.changes[i].what == op::redefine || sc.changes[i].key == c.key)) {
      end = sc.changes[i].step;
      break;
    }
  std::size_t checked = 0;
  for (std::size_t i = c.step; i < end && i < got.size(); ++i) {
    const auto& step = sc.t.steps[i];
    const bool on_key = std::any_of(step.checks.begin(), step.checks.end(),
                                    [&](const auto& ch) { return ch.policy == c.policy && ch.key == c.key; });
    const detail::i128 since = static_cast<detail::i128>(step.now) - c.at;
    if (!on_key || since < 0 || since * held->first >= held->second) continue;
    EXPECT_FALSE(got[i].d.d.allowed) << "step " << i << " admitted after the fallback of change " << k << why;
    ++checked;
  }
  return checked;
}

class RedisOverride : public ::testing::TestWithParam<algorithm> {};

TEST_P(RedisOverride, DecidesAsTheMemoryStoreOneCallAtATime) {
  auto st = open_patient_store();
  ASSERT_TRUE(st);
  auto mem = exact_memory_store();
  constexpr std::size_t n = 150;
  const auto scenarios = draw_overrides(GetParam(), n, 7'000'000, false);
  ASSERT_EQ(scenarios.size(), n);
  std::size_t decisions = 0;
  std::size_t changes = 0;
  std::size_t refusals = 0;
  std::size_t fallbacks = 0;
  std::size_t held_checked = 0;
  for (std::size_t j = 0; j < scenarios.size(); ++j) {
    const scenario& sc = scenarios[j];
    const std::string prefix = "o" + std::to_string(j) + ":";
    std::string err;
    // Every third request with an id: its record keeps the override that
    // decided it. Every change is made in both stores (none is refused).
    std::vector<bool> refused;
    std::vector<bool> fell_back;
    const auto got = run_one_by_one(*st, sc, prefix, err, {}, true, &refused, &fell_back);
    ASSERT_EQ(err, "") << sc.t.describe();
    const auto want = run_one_by_one(*mem, sc, prefix, err, {}, true);
    ASSERT_EQ(err, "") << sc.t.describe();
    changes += refused.size();
    refusals += static_cast<std::size_t>(std::count(refused.begin(), refused.end(), true));
    fallbacks += static_cast<std::size_t>(std::count(fell_back.begin(), fell_back.end(), true));
    // Field for field up to the first change that wrote the conservative
    // fallback; from there the Redis store is stricter than the exact
    // carry, and is checked against the new limit's definition instead.
    const auto first = std::find(fell_back.begin(), fell_back.end(), true);
    const std::size_t upto = first_fallback_step(sc, fell_back, got.size());
    ASSERT_EQ(compare_head(sc, got, want, upto), "") << explain(sc, got, want);
    if (first != fell_back.end()) {
      held_checked +=
          check_fallback_held(sc, static_cast<std::size_t>(first - fell_back.begin()), got, explain(sc, got, want));
    }
    decisions += upto;
  }
  const auto s = st->redis_stats();
  std::printf(
      "overrides %-16s %zu traces, %zu decisions agree with the memory store; %llu calls built again; %zu of %zu "
      "changes refused, %zu carried the conservative fallback (%zu later requests checked denied)\n",
      std::string(name_of(GetParam())).c_str(), scenarios.size(), decisions,
      static_cast<unsigned long long>(s.override_moves), refusals, changes, fallbacks, held_checked);
  // Always revocable: no change is refused, on any algorithm; a carried
  // state outside the library's exact ranges is written as the
  // conservative fallback (docs/redis.md, "Overrides").
  EXPECT_EQ(refusals, 0U) << refusals << " of " << changes;
  EXPECT_EQ(s.override_fallbacks, fallbacks);
  EXPECT_EQ(s.mismatches, 0U);
  EXPECT_EQ(s.unknown_config, 0U);
  EXPECT_EQ(s.override_races, 0U);
  EXPECT_EQ(s.base.store_failures, 0U);
}

TEST_P(RedisOverride, DecidesAsTheMemoryStorePipelined) {
  // Two Redis stores on one server: one changes the overrides, the other
  // decides the batches without being told (it learns from status 6).
  store_options o;
  o.key_prefix = fresh_prefix("ovpipe");
  auto st = open_patient_store(o);
  auto admin = open_patient_store(o);
  ASSERT_TRUE(st && admin);
  auto mem = exact_memory_store();
  constexpr std::size_t n = 300;
  const auto scenarios = draw_overrides(GetParam(), n, 8'000'000, true);
  ASSERT_EQ(scenarios.size(), n);
  std::vector<std::vector<policy_id>> ids_m(n);
  std::vector<std::vector<policy_id>> ids_r(n);
  std::vector<std::vector<policy_id>> ids_a(n);
  std::size_t longest = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const std::string prefix = "q" + std::to_string(j) + ":";
    auto [a, e1] = conformance::define_all(*mem, scenarios[j].t, prefix);
    auto [b, e2] = conformance::define_all(*st, scenarios[j].t, prefix);
    auto [c, e3] = conformance::define_all(*admin, scenarios[j].t, prefix);
    ASSERT_EQ(e1 + e2 + e3, "");
    ids_m[j] = a;
    ids_r[j] = b;
    ids_a[j] = c;
    longest = std::max(longest, scenarios[j].t.steps.size());
  }
  std::vector<std::vector<answer>> got(n);
  std::vector<std::vector<answer>> want(n);
  std::vector<std::size_t> next(n, 0);
  std::vector<std::size_t> upto(n, longest);  // the step of a scenario's first fallback
  for (std::size_t i = 0; i < longest; ++i) {
    std::vector<std::vector<std::string>> keys(n);
    std::vector<std::vector<check>> cm(n);
    std::vector<std::vector<check>> cr(n);
    std::vector<store_request> bm;
    std::vector<store_request> br;
    std::vector<std::size_t> owner;
    for (std::size_t j = 0; j < n; ++j) {
      const scenario& sc = scenarios[j];
      if (i >= sc.t.steps.size()) continue;
      const std::string prefix = "q" + std::to_string(j) + ":";
      for (; next[j] < sc.changes.size() && sc.changes[next[j]].step == i; ++next[j]) {
        const change& c = sc.changes[next[j]];
        // A redefinition is every process's (a reload); an override is
        // set by one and read by all.
        const std::uint64_t before = admin->redis_stats().override_fallbacks;
        const std::string e = apply(*admin, c, sc.t, ids_a[j], prefix, prefix);
        ASSERT_EQ(e, "") << sc.t.describe();
        // A conservative fallback: the stores part from here (the one
        // call at a time test checks what follows against the definition).
        if (admin->redis_stats().override_fallbacks > before) upto[j] = std::min(upto[j], i);
        ASSERT_EQ(apply(*mem, c, sc.t, ids_m[j], prefix, prefix), "") << sc.t.describe();
        if (c.what == op::redefine) {
          ASSERT_EQ(apply(*st, c, sc.t, ids_r[j], prefix, prefix), "") << sc.t.describe();
        }
      }
      const auto& step = sc.t.steps[i];
      for (const auto& c : step.checks) keys[j].push_back(prefix + c.key);
      for (std::size_t k = 0; k < step.checks.size(); ++k) {
        cm[j].push_back({ids_m[j][step.checks[k].policy], keys[j][k], step.checks[k].cost});
        cr[j].push_back({ids_r[j][step.checks[k].policy], keys[j][k], step.checks[k].cost});
      }
      bm.push_back({.checks = cm[j], .now = step.now, .cost = step.cost, .id = {}});
      br.push_back({.checks = cr[j], .now = step.now, .cost = step.cost, .id = {}});
      owner.push_back(j);
    }
    std::vector<store_decision> om(bm.size());
    std::vector<store_decision> orr(br.size());
    mem->decide_many_at(bm, om);
    st->decide_many_at(br, orr);
    for (std::size_t b = 0; b < owner.size(); ++b) {
      want[owner[b]].push_back({om[b], {}, {}, {}, {}});
      got[owner[b]].push_back({orr[b], {}, {}, {}, {}});
    }
  }
  std::size_t parted = 0;
  for (std::size_t j = 0; j < n; ++j) {
    trace head = scenarios[j].t;
    if (upto[j] < head.steps.size()) {
      ++parted;
      head.steps.resize(upto[j]);
      got[j].resize(upto[j]);
      want[j].resize(upto[j]);
    }
    ASSERT_EQ(conformance::compare(head, got[j], want[j], false), "") << explain(scenarios[j], got[j], want[j]);
  }
  const auto s = st->redis_stats();
  std::printf(
      "overrides pipelined %-16s %zu traces agree with the memory store (%zu up to a conservative fallback); %llu "
      "calls built again\n",
      std::string(name_of(GetParam())).c_str(), n, parted, static_cast<unsigned long long>(s.override_moves));
  EXPECT_EQ(s.mismatches, 0U);
  EXPECT_EQ(s.override_races, 0U);
  EXPECT_EQ(s.base.store_failures, 0U);
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, RedisOverride, ::testing::ValuesIn(conformance::all_algorithms),
                         algorithm_test_name);

// ---- the admin members ----

/// On each path (`module`: the overrides' reads and compare-and-sets
/// through SLUICE.REFUND_READ and SLUICE.CAS).
class RedisOverridesOnEachPath : public ::testing::TestWithParam<store_path> {};

TEST_P(RedisOverridesOnEachPath, SetGetListDeleteAndTheStateCarries) {
  store_options o;
  o.key_prefix = fresh_prefix("ovapi");
  auto raw = raw_client(server_of(GetParam()));
  const std::uint64_t cas0 = calls_of(raw, "sluice.cas"), reads0 = calls_of(raw, "sluice.refund_read");
  auto st = open_store(o, url_of(GetParam()));
  auto other = open_store(o, url_of(GetParam()));  // another process on the same server
  ASSERT_TRUE(st && other);
  const policy_id p = st->define_at("api", expr("quota 3"), 0).value();
  const policy_id q = other->define_at("api", expr("quota 3"), 0).value();
  const check alice{p, "alice"};
  const check alice_q{q, "alice"};
  ASSERT_TRUE(st->decide_at(one_check(alice, 1)).d.allowed);  // 1 of 3 used
  const auto made = st->set_override_at(p, "alice", expr("quota 10"), 2);
  ASSERT_TRUE(made) << made.err().what();
  EXPECT_EQ(made.value(), override_change::created);
  // The other process knows at its very next decision: 9 more, not 10.
  int admitted = 0;
  for (tick t = 3; t < 30; ++t) admitted += other->decide_at(one_check(alice_q, t)).d.allowed ? 1 : 0;
  EXPECT_EQ(admitted, 9);
  EXPECT_EQ(st->set_override_at(p, "alice", expr("quota 10"), 31).value(), override_change::unchanged);
  EXPECT_EQ(st->set_override_at(p, "alice", expr("quota 12"), 32).value(), override_change::replaced);
  EXPECT_EQ(other->decide_at(one_check(alice_q, 33)).d.remaining, 1);
  const auto got = other->override_of(q, "alice").value();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(format_policy(*got), "quota 12");
  EXPECT_FALSE(other->override_of(q, "bob").value().has_value());
  for (const char* k : {"dave", "carol", "b\xff}x"})
    EXPECT_EQ(st->set_override_at(p, k, expr("quota 7"), 40).value(), override_change::created);
  auto page = other->list_overrides(q, "", 2).value();
  ASSERT_EQ(page.overrides.size(), 2U);
  EXPECT_EQ(page.overrides[0].key, "alice");
  EXPECT_EQ(page.overrides[1].key, "b\xff}x");
  ASSERT_TRUE(page.next.has_value());
  page = other->list_overrides(q, *page.next, 2).value();
  ASSERT_EQ(page.overrides.size(), 2U);
  EXPECT_EQ(page.overrides[0].key, "carol");
  EXPECT_EQ(page.overrides[1].key, "dave");
  EXPECT_EQ(format_policy(page.overrides[1].policy), "quota 7");
  EXPECT_FALSE(page.next.has_value());
  // Deleted: alice's 12 used carried back to quota 3: spent, never fresh.
  EXPECT_TRUE(other->delete_override_at(q, "alice", 50).value());
  EXPECT_FALSE(other->delete_override_at(q, "alice", 51).value());
  EXPECT_FALSE(st->decide_at(one_check(alice, 52)).d.allowed);
  EXPECT_EQ(st->list_overrides(p, "", 100).value().overrides.size(), 3U);
  // A key that never had a state gets none by an override.
  EXPECT_EQ(st->set_override_at(p, "erin", expr("quota 2"), 60).value(), override_change::created);
  EXPECT_EQ(st->decide_at(one_check(check{p, "erin"}, 61)).d.remaining, 1);
  const auto s = other->redis_stats();
  EXPECT_GE(s.override_moves, 1U);  // it learned of alice's override from a status 6
  EXPECT_EQ(s.mismatches + s.corrupt + s.unknown_config + s.override_races, 0U);
  if (GetParam() == store_path::module) {
    EXPECT_GE(calls_of(raw, "sluice.cas") - cas0, 7U);  // every set and delete that wrote
    EXPECT_GE(calls_of(raw, "sluice.refund_read") - reads0, 7U);
  } else {
    EXPECT_EQ(st->redis_stats().module_calls + s.module_calls, 0U);
  }
}

INSTANTIATE_TEST_SUITE_P(EachPath, RedisOverridesOnEachPath, ::testing::Values(store_path::library, store_path::module),
                         path_test_name);

TEST(RedisOverrides, BadOverridesAreRefusedNamingTheFieldAndChangeNothing) {
  store_options o;
  o.key_prefix = fresh_prefix("ovbad");
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const policy_id p = st->define_at("api", expr("gcra 5/1s"), 0).value();
  const policy_id free = st->define_at("free", any_policy{always_allow{}}, 0).value();
  ASSERT_TRUE(st->decide_at(one_check(check{p, "k"}, 1)).d.allowed);
  auto c = raw_client();
  const auto before = c.call({"GET", o.key_prefix + "s:api:{k}"});
  const auto field = [](const auto& r) { return r ? std::string("ok") : r.err().field; };
  EXPECT_EQ(field(st->set_override_at(p, "k", expr("quota 5"), 2)), "policy");  // another algorithm
  EXPECT_EQ(field(st->set_override_at(99, "k", expr("gcra 1/1s"), 2)), "policy");
  EXPECT_EQ(field(st->set_override_at(free, "k", any_policy{always_deny{}}, 2)), "policy");
  EXPECT_EQ(field(st->delete_override_at(99, "k", 2)), "policy");
  EXPECT_EQ(field(st->override_of(99, "k")), "policy");
  EXPECT_EQ(field(st->list_overrides(99, "", 10)), "policy");
  EXPECT_EQ(st->list_overrides(p, "", 10).value().overrides.size(), 0U);
  const auto after = c.call({"GET", o.key_prefix + "s:api:{k}"});
  EXPECT_EQ(std::get<redis::reply>(before).as_string(), std::get<redis::reply>(after).as_string());
  // A foreign value at the override key: decisions on the key are errors,
  // never admits, and nothing is written.
  (void)c.call({"SET", o.key_prefix + "o:api:{k}", "not an override"});
  const auto d = st->decide_at(one_check(check{p, "k"}, 3));
  EXPECT_EQ(d.from, source::error);
  EXPECT_FALSE(d.d.allowed);
  EXPECT_EQ(field(st->override_of(p, "k")), "store");
}

TEST(RedisOverrides, ACounterBlockedWithALimitOfZeroIsNeverRefused) {
  // A sliding counter of limit 0 holds no count in the Redis library
  // (curr ≤ max(L, min(L·W, 2^52)) = 0), so carrying a used counter to it
  // was refused as the error `store`: the operator could not block a key.
  // It is now the conservative fallback: the key keeps nothing, and limit
  // 0 admits nothing (docs/redis.md, "Overrides").
  store_options o;
  o.key_prefix = fresh_prefix("ovzero");
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const policy_id p = st->define_at("c", expr("sliding-counter 5/1000ns"), 0).value();
  const check c{p, "k"};
  for (tick t = 1; t <= 3; ++t) ASSERT_TRUE(st->decide_at(one_check(c, t)).d.allowed);
  const auto set = st->set_override_at(p, "k", expr("sliding-counter 0/1000ns"), 4);
  ASSERT_TRUE(set) << set.err().what();
  EXPECT_EQ(set.value(), override_change::created);
  EXPECT_EQ(st->redis_stats().override_fallbacks, 1U);
  for (tick t = 5; t <= 3000; t += 500) {
    const auto d = st->decide_at(one_check(c, t));
    EXPECT_FALSE(d.d.allowed) << t;
    EXPECT_EQ(d.from, source::store) << t;
  }
  // And it is revocable: the delete carries nothing back (nothing is kept).
  ASSERT_TRUE(st->delete_override_at(p, "k", 3001).value());
  EXPECT_TRUE(st->decide_at(one_check(c, 3002)).d.allowed);
}

TEST(RedisOverrides, ALowerLimitKeepsTheUnitsAlreadyCountedAndIsNeverRefused) {
  store_options o;
  o.key_prefix = fresh_prefix("ovhold");
  auto st = open_store(o);
  auto mem = exact_memory_store();
  ASSERT_TRUE(st);
  // A fixed window's 8 units stay counted under a limit of 5: denied until
  // the window ends, as in the memory store.
  const auto [p, m] = define_both(*st, *mem, "w", "fixed-window 10/1000ns");
  const check c{p, "k"};
  const check cm{m, "k"};
  for (tick t = 1; t <= 8; ++t) ASSERT_TRUE(st->decide_at(one_check(c, t)).d.allowed);
  for (tick t = 1; t <= 8; ++t) ASSERT_TRUE(mem->decide_at(one_check(cm, t)).d.allowed);
  EXPECT_EQ(st->set_override_at(p, "k", expr("fixed-window 5/1000ns"), 9).value(), override_change::created);
  EXPECT_EQ(mem->set_override_at(m, "k", expr("fixed-window 5/1000ns"), 9).value(), override_change::created);
  for (const tick t : {10, 500, 999, 1000, 1001}) {
    const auto a = st->decide_at(one_check(c, t));
    const auto b = mem->decide_at(one_check(cm, t));
    EXPECT_EQ(a.d.allowed, b.d.allowed) << t;
    EXPECT_EQ(a.d.remaining, b.d.remaining) << t;
    EXPECT_EQ(a.d.retry_after, b.d.retry_after) << t;
  }
  // A sliding log's 8 units past a limit of 5: the conservative carry keeps
  // the units that can change a decision (semantics.md, "Reconfiguration"),
  // made in both stores at once, deciding alike (it was refused naming
  // policy until the units left the window).
  const auto [l, lm] = define_both(*st, *mem, "log", "sliding-log 10/1000ns");
  const check cl{l, "k"};
  const check clm{lm, "k"};
  for (tick t = 1; t <= 8; ++t) ASSERT_TRUE(st->decide_at(one_check(cl, t)).d.allowed);
  for (tick t = 1; t <= 8; ++t) ASSERT_TRUE(mem->decide_at(one_check(clm, t)).d.allowed);
  const auto made = st->set_override_at(l, "k", expr("sliding-log 5/1000ns"), 9);
  ASSERT_TRUE(made) << made.err().what();
  EXPECT_EQ(made.value(), override_change::created);
  EXPECT_EQ(mem->set_override_at(lm, "k", expr("sliding-log 5/1000ns"), 9).value(), override_change::created);
  for (const tick t : {10, 1000, 1003, 1004, 1005, 1006, 1008, 1009, 2100}) {
    const auto a = st->decide_at(one_check(cl, t));
    const auto b = mem->decide_at(one_check(clm, t));
    EXPECT_EQ(a.d.allowed, b.d.allowed) << t;
    EXPECT_EQ(a.d.remaining, b.d.remaining) << t;
    EXPECT_EQ(a.d.retry_after, b.d.retry_after) << t;
  }
}

TEST(RedisOverrides, ARaisedSlidingLogIsRevokedWhileItsTenantKeepsUsingIt) {
  // The operator raised a tenant's sliding-log 5/4000ns to 50/4000ns; the
  // tenant keeps using it while the override is deleted. The delete is made
  // (it was refused naming policy while the units stayed in the window),
  // and every admit after it keeps the configured limit, counting what the
  // tenant took under the override: at most 5 admits in the 4000 ticks up
  // to it. Both stores decide alike.
  constexpr tick w = 4000;
  store_options o;
  o.key_prefix = fresh_prefix("ovrevoke");
  auto st = open_store(o);
  auto mem = exact_memory_store();
  ASSERT_TRUE(st);
  const auto [p, pm] = define_both(*st, *mem, "slog", "sliding-log 5/4000ns");
  const check c{p, "tenant"};
  const check cm{pm, "tenant"};
  ASSERT_EQ(st->set_override_at(p, "tenant", expr("sliding-log 50/4000ns"), 1).value(), override_change::created);
  ASSERT_EQ(mem->set_override_at(pm, "tenant", expr("sliding-log 50/4000ns"), 1).value(), override_change::created);
  std::vector<tick> admitted;
  std::size_t deletes = 0;
  // A request every 50 ticks over three windows; the delete at 1025 (made
  // before the request at 1060).
  for (tick t = 10; t < 3 * w; t += 50) {
    if (t > 1025 && deletes == 0) {
      const auto gone = st->delete_override_at(p, "tenant", 1025);
      ASSERT_TRUE(gone) << gone.err().what();
      EXPECT_TRUE(gone.value());
      ASSERT_TRUE(mem->delete_override_at(pm, "tenant", 1025).value());
      ++deletes;
    }
    const auto a = st->decide_at(one_check(c, t));
    const auto b = mem->decide_at(one_check(cm, t));
    ASSERT_EQ(a.from, source::store) << t;
    EXPECT_EQ(a.d.allowed, b.d.allowed) << t;
    EXPECT_EQ(a.d.remaining, b.d.remaining) << t;
    EXPECT_EQ(a.d.retry_after, b.d.retry_after) << t;
    if (!a.d.allowed) continue;
    admitted.push_back(t);
    if (t < 1025) continue;
    // The configured limit's definition: at most 5 admits in (t - W, t].
    const auto in_window = std::count_if(admitted.begin(), admitted.end(), [&](tick u) { return u > t - w; });
    EXPECT_LE(in_window, 5) << "admit at " << t;
  }
  const auto after = std::count_if(admitted.begin(), admitted.end(), [](tick u) { return u >= 1025; });
  const auto before = static_cast<std::ptrdiff_t>(admitted.size()) - after;
  EXPECT_EQ(before, 21);  // every request under the raised limit
  // None until all but 4 of the override's admits (10..1010) have left the
  // window (at 4810), then 5 a window: 4810..5010 and 8810..9010.
  EXPECT_EQ(after, 10);
  EXPECT_FALSE(st->override_of(p, "tenant").value().has_value());
}

TEST(RedisOverrides, TheBoundIsTenThousandOverTheStore) {
  store_options o;
  o.key_prefix = fresh_prefix("ovbound");
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const policy_id p = st->define_at("api", expr("quota 3"), 0).value();
  // 9,999 override keys written directly (any policy's: the bound is the
  // store's), then the 10,000th through the store, then one more refused.
  auto c = raw_client();
  for (int first = 0; first < 9999; first += 1000) {
    std::vector<std::string> args = {"MSET"};
    for (int i = first; i < std::min(9999, first + 1000); ++i) {
      args.push_back(o.key_prefix + "o:other:{k" + std::to_string(i) + "}");
      args.push_back("1quota 5");
    }
    std::vector<std::string_view> views(args.begin(), args.end());
    ASSERT_TRUE(std::holds_alternative<redis::reply>(c.call(views)));
  }
  EXPECT_EQ(st->set_override_at(p, "a", expr("quota 4"), 1).value(), override_change::created);
  const auto refused = st->set_override_at(p, "b", expr("quota 4"), 1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.err().field, "overrides");
  EXPECT_FALSE(st->override_of(p, "b").value().has_value());
  // Replacing one that exists is not a new one.
  EXPECT_EQ(st->set_override_at(p, "a", expr("quota 6"), 2).value(), override_change::replaced);
  EXPECT_TRUE(st->delete_override_at(p, "a", 3).value());
  EXPECT_EQ(st->set_override_at(p, "b", expr("quota 4"), 4).value(), override_change::created);
}

// ---- races and request ids ----

TEST(RedisOverrides, ADecisionRacingAChangeIsNeverDecidedOnAFreshState) {
  // Quota 4 configured, override quota 6 set and deleted over and over by
  // one process while others decide: a quota's units used carry both ways,
  // so whatever the interleaving, the key admits 6 units in all, never
  // more (a decision on a fresh state would admit again), none lost.
  store_options o;
  o.key_prefix = fresh_prefix("ovrace");
  auto admin = open_store(o);
  auto sync = open_store(o);
  auto async = open_store(o);
  ASSERT_TRUE(admin && sync && async);
  const policy_id pa = admin->define_at("api", expr("quota 4"), 0).value();
  const policy_id ps = sync->define_at("api", expr("quota 4"), 0).value();
  const policy_id pq = async->define_at("api", expr("quota 4"), 0).value();
  std::atomic<bool> stop{false};
  std::atomic<int> admitted{0}, errors{0};
  std::thread changer([&] {
    tick t = 1;
    for (int i = 0; i < 60; ++i) {
      (void)admin->set_override_at(pa, "k", expr("quota 6"), ++t);
      (void)admin->delete_override_at(pa, "k", ++t);
    }
    (void)admin->set_override_at(pa, "k", expr("quota 6"), ++t);
    stop = true;
  });
  const auto count = [&](const store_decision& d) {
    if (d.d.allowed) admitted.fetch_add(1);
    if (d.from == source::error) errors.fetch_add(1);
  };
  std::thread one([&] {
    const check c{ps, "k"};
    for (tick t = 1'000; !stop; ++t) count(sync->decide_at(one_check(c, t)));
  });
  std::thread many([&] {
    const check c{ps, "k"};
    for (tick t = 1'000; !stop; t += 4) {
      std::vector<store_request> rs(3, one_check(c, t));
      std::vector<store_decision> out(rs.size());
      sync->decide_many_at(rs, out);
      for (const auto& d : out) count(d);
    }
  });
  std::thread other([&] {
    const check c{pq, "k"};
    for (tick t = 1'000; !stop; ++t) {
      std::promise<store_decision> done;
      async->decide_async(one_check(c, t), {}, {}, [&](const store_decision& d) { done.set_value(d); });
      count(done.get_future().get());
    }
  });
  changer.join();
  one.join();
  many.join();
  other.join();
  // The override stands at the end: whatever is left of 6 is admitted now.
  const check c{ps, "k"};
  for (tick t = 100'000; t < 100'010; ++t) count(sync->decide_at(one_check(c, t)));
  EXPECT_EQ(admitted.load(), 6);
  std::printf("racing: %d errors (override changed under every attempt), %llu + %llu calls built again\n",
              errors.load(), static_cast<unsigned long long>(sync->redis_stats().override_moves),
              static_cast<unsigned long long>(async->redis_stats().override_moves));
  EXPECT_EQ(sync->redis_stats().mismatches + async->redis_stats().mismatches, 0U);
}

TEST(RedisOverrides, ARequestIdsRepeatStandsAfterItsOverrideIsGone) {
  for (const bool composite : {false, true}) {
    store_options o;
    o.key_prefix = fresh_prefix("ovid");
    auto st = open_store(o);
    auto mem = exact_memory_store();
    ASSERT_TRUE(st);
    const any_policy conf = composite ? expr("all(quota 3, gcra 100/1s)") : expr("quota 3");
    const any_policy over = composite ? expr("all(quota 10, gcra 100/1s)") : expr("quota 10");
    const policy_id p = st->define_at("api", conf, 0).value();
    const policy_id m = mem->define_at("api", conf, 0).value();
    const check c{p, "k"};
    const check cm{m, "k"};
    ASSERT_TRUE(st->set_override_at(p, "k", over, 1).ok());
    ASSERT_TRUE(mem->set_override_at(m, "k", over, 1).ok());
    const auto first = st->decide_at(one_check(c, 2, 2, "r1"));
    const auto first_m = mem->decide_at(one_check(cm, 2, 2, "r1"));
    ASSERT_TRUE(first.d.allowed);
    EXPECT_EQ(first.d.remaining, first_m.d.remaining);
    EXPECT_EQ(first.d.remaining, 8);
    ASSERT_TRUE(st->delete_override_at(p, "k", 3).value());
    ASSERT_TRUE(mem->delete_override_at(m, "k", 3).value());
    // The repeat is the first decision again (decided under quota 10),
    // charging nothing; the key is back on quota 3 with 2 used.
    const auto again = st->decide_at(one_check(c, 4, 2, "r1"));
    const auto again_m = mem->decide_at(one_check(cm, 4, 2, "r1"));
    EXPECT_EQ(again.from, source::replayed);
    EXPECT_TRUE(again.d.allowed);
    EXPECT_EQ(again.d.remaining, 8);
    EXPECT_EQ(again.d.remaining, again_m.d.remaining);
    EXPECT_EQ(again.d.allowed, again_m.d.allowed);
    const auto next = st->decide_at(one_check(c, 5));
    EXPECT_TRUE(next.d.allowed);
    EXPECT_EQ(next.d.remaining, 0);
    EXPECT_EQ(next.d.remaining, mem->decide_at(one_check(cm, 5)).d.remaining);
    // Its refund gives back the 2 units under the limit in force now.
    const auto back = st->refund_at("r1", 6);
    EXPECT_EQ(back.status, refund_status::refunded);
    EXPECT_EQ(st->decide_at(one_check(c, 7, 2)).d.remaining, 0);
  }
}

// ---- the asynchronous path, the deny cache, leases ----

TEST(RedisOverrides, TheAsynchronousPathAndReportsHonourOverrides) {
  store_options o;
  o.key_prefix = fresh_prefix("ovasync");
  auto st = open_store(o);
  auto admin = open_store(o);
  ASSERT_TRUE(st && admin);
  const policy_id p = st->define_at("api", expr("quota 2"), 0).value();
  const policy_id a = admin->define_at("api", expr("quota 2"), 0).value();
  ASSERT_TRUE(admin->set_override_at(a, "k", expr("quota 5"), 1).ok());
  const check c{p, "k"};
  const auto decide = [&](tick t) {
    std::promise<store_decision> done;
    st->decide_async(one_check(c, t), {}, {}, [&](const store_decision& d) { done.set_value(d); });
    return done.get_future().get();
  };
  int admitted = 0;
  for (tick t = 2; t < 5; ++t) admitted += decide(t).d.allowed ? 1 : 0;
  EXPECT_EQ(admitted, 3);
  const auto r = st->report_at(one_check(c, 6));  // the fourth unit, charged under quota 5
  EXPECT_EQ(r.from, source::store);
  EXPECT_EQ(r.d.remaining, 1);
  ASSERT_TRUE(admin->delete_override_at(a, "k", 7).value());
  const auto d = decide(8);  // quota 2 with 4 used
  EXPECT_FALSE(d.d.allowed);
  EXPECT_EQ(d.from, source::store);
}

TEST(RedisOverrides, TheProcessThatChangesAnOverrideDropsItsCachedDenials) {
  store_options o;
  o.key_prefix = fresh_prefix("ovdeny");
  o.deny_cache = true;
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const policy_id p = st->define_at("api", expr("quota 1"), 0).value();
  const check c{p, "k"};
  ASSERT_TRUE(st->decide_at(one_check(c, 1)).d.allowed);
  EXPECT_EQ(st->decide_at(one_check(c, 2)).from, source::store);
  EXPECT_TRUE(cache_answers_denial(*st, one_check(c, 3)));
  ASSERT_TRUE(st->set_override_at(p, "k", expr("quota 3"), 4).ok());
  const auto d = st->decide_at(one_check(c, 5));
  EXPECT_EQ(d.from, source::store);
  EXPECT_TRUE(d.d.allowed);
}

TEST(RedisOverrides, ALeaseTakenUnderAnOverrideIsReleasedUnderIt) {
  store_options o;
  o.key_prefix = fresh_prefix("ovlease");
  auto st = open_store(o);
  auto other = open_store(o);
  ASSERT_TRUE(st && other);
  const policy_id p = st->define_at("c", expr("concurrency 1"), 0).value();
  const policy_id q = other->define_at("c", expr("concurrency 1"), 0).value();
  ASSERT_TRUE(st->set_override_at(p, "k", expr("concurrency 2"), 1).ok());
  const check c{p, "k"};
  const auto a = st->decide_at(one_check(c, 2));
  const auto b = st->decide_at(one_check(c, 3));
  ASSERT_TRUE(a.d.allowed && b.d.allowed);
  EXPECT_FALSE(st->decide_at(one_check(c, 4)).d.allowed);
  // Another process that never decided on the key releases one lease.
  const check cq{q, "k"};
  const auto rel = other->release_at(std::span<const check>(&cq, 1), a.lease, 5);
  EXPECT_EQ(rel.from, source::store);
  EXPECT_EQ(rel.units, 1);
  EXPECT_TRUE(st->decide_at(one_check(c, 6)).d.allowed);
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_override_test
