// A request id belongs to its request (semantics.md, "Request ids"): a
// repeat with the same checks replays, a repeat with other checks (another
// policy, key, cost, order or number) is an id conflict — never a replayed
// admit for a key over its limit — and the memory store and the Redis store
// answer every id trace alike, field for field.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "conformance/traces.hpp"
#include "redis/conformance_draw.hpp"
#include "redis/store_support.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::redis_test::redis_store_request_id_test {
namespace {

std::unique_ptr<memory_store> memory() {
  memory_store_options o;
  o.keyed.auto_purge = false;
  o.keyed.shards = 1;
  o.keyed.hash_seed = 7;
  o.idempotency_window = std::numeric_limits<tick>::max();  // the Redis store's window is wall-clock time
  return std::make_unique<memory_store>(o);
}

struct id_answer {
  store_decision d;
  std::vector<decision> per;
  std::vector<std::optional<tick>> grows;
  bool operator==(const id_answer& o) const {
    return d.from == o.d.from && d.d == o.d.d && per == o.per && grows == o.grows;
  }
};

std::string show(const id_answer& a) {
  std::string s = std::string(name_of(a.d.from)) + " " + redis_test::show(a.d.d);
  for (std::size_t i = 0; i < a.per.size(); ++i)
    s += " [" + redis_test::show(a.per[i]) + " t=" + (a.grows[i] ? show_tick(*a.grows[i]) : "-") + "]";
  return s;
}

id_answer ask(store& s, std::vector<check> cs, tick now, std::string_view id, std::int64_t cost = 1) {
  id_answer a;
  a.per.assign(cs.size(), decision{});
  a.grows.assign(cs.size(), std::nullopt);
  a.d = s.decide_at({.checks = cs, .now = now, .cost = cost, .id = id}, a.per, a.grows);
  return a;
}

/// The directed cases, on one store.
void other_checks_under_a_used_id_are_refused(store& s, const std::string& tag) {
  SCOPED_TRACE(tag);
  const std::int64_t hour = 3'600'000'000'000;
  const policy_id p = s.define(tag + "p", any_policy{fixed_window::make(rate{1, hour}).value()}).value();
  const policy_id q = s.define(tag + "q", any_policy{fixed_window::make(rate{5, hour}).value()}).value();
  // bob is over his limit.
  ASSERT_TRUE(ask(s, {{p, "bob"}}, 0, {}).d.d.allowed);
  ASSERT_FALSE(ask(s, {{p, "bob"}}, 1, {}).d.d.allowed);
  // alice's request under id "x" admits.
  const id_answer first = ask(s, {{p, "alice"}}, 2, "x");
  ASSERT_TRUE(first.d.d.allowed);
  EXPECT_EQ(first.d.from, source::store);
  // The same id for bob: not alice's replayed admit.
  const id_answer bob = ask(s, {{p, "bob"}}, 3, "x");
  EXPECT_FALSE(bob.d.d.allowed) << show(bob);
  EXPECT_EQ(bob.d.from, source::id_conflict) << show(bob);
  EXPECT_EQ(bob.d.d.retry_after, never);
  EXPECT_FALSE(bob.grows[0].has_value());
  // Every other way of being another request: another policy, another cost,
  // more checks, the same checks in another order.
  EXPECT_EQ(ask(s, {{q, "alice"}}, 3, "x").d.from, source::id_conflict);
  EXPECT_EQ(ask(s, {{p, "alice", 2}}, 3, "x").d.from, source::id_conflict);
  EXPECT_EQ(ask(s, {{p, "alice"}}, 3, "x", 2).d.from, source::id_conflict);  // the request's cost
  EXPECT_EQ(ask(s, {{p, "alice"}, {q, "alice"}}, 3, "x").d.from, source::id_conflict);
  ASSERT_EQ(ask(s, {{p, "carol"}, {q, "carol"}}, 4, "y").d.from, source::store);
  EXPECT_EQ(ask(s, {{q, "carol"}, {p, "carol"}}, 5, "y").d.from, source::id_conflict);
  EXPECT_EQ(ask(s, {{p, "carol"}}, 5, "y").d.from, source::id_conflict);
  // Nothing was charged by a conflict: q has all 5 for alice, bob is still over.
  EXPECT_EQ(ask(s, {{q, "alice"}}, 6, {}).per[0].remaining, 4);
  EXPECT_FALSE(ask(s, {{p, "bob"}}, 6, {}).d.d.allowed);
  // The first request is still remembered as it was: the same checks replay
  // its decision, with its figures; its own cost given either way is the same.
  const id_answer again = ask(s, {{p, "alice"}}, 7, "x");
  EXPECT_EQ(again.d.from, source::replayed);
  EXPECT_EQ(again.d.d, first.d.d);
  EXPECT_EQ(again.per, first.per);
  EXPECT_EQ(again.grows, first.grows);
  EXPECT_EQ(ask(s, {{p, "alice", 1}}, 8, "x").d.from, source::replayed);
  EXPECT_EQ(ask(s, {{p, "carol"}, {q, "carol"}}, 9, "y").d.from, source::replayed);
  EXPECT_EQ(s.stats().id_conflicts, 7U);
}

TEST(RequestIds, AnIdFirstUsedForAnotherKeyIsRefusedNotReplayedAsAnAdmit_Memory) {
  auto m = memory();
  other_checks_under_a_used_id_are_refused(*m, "m");
}

TEST(RequestIds, AnIdFirstUsedForAnotherKeyIsRefusedNotReplayedAsAnAdmit_Redis) {
  auto r = open_store();
  ASSERT_TRUE(r);
  other_checks_under_a_used_id_are_refused(*r, "r");
}

/// The shared suite's traces with request ids drawn from a small pool: a
/// fresh id, the same request again under its id (a replay), or another
/// step's checks under a used id (a conflict, unless they are the same
/// request), through both stores one decide_at at a time, answers compared
/// field for field, each check's too.
class RequestIdTraces : public ::testing::TestWithParam<algorithm> {};

TEST_P(RequestIdTraces, MemoryAndRedisAnswerAlike) {
  auto r = open_patient_store();
  ASSERT_TRUE(r);
  std::size_t refused = 0;
  const auto traces = draw_traces(GetParam(), 150, 9'000'000, refused, true);
  std::size_t replayed = 0, conflicts = 0, steps = 0;
  for (std::size_t j = 0; j < traces.size(); ++j) {
    const conformance::trace& t = traces[j];
    auto m = memory();
    const std::string prefix = "id" + std::to_string(j) + ":";
    auto [mi, e1] = conformance::define_all(*m, t, prefix);
    auto [ri, e2] = conformance::define_all(*r, t, prefix);
    ASSERT_EQ(e1 + e2, "");
    std::mt19937_64 g(j);
    std::vector<std::pair<std::string, std::size_t>> used;  // (id, the step it was first sent with)
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
      const int roll = static_cast<int>(g() % 100);
      std::string id;
      std::size_t as = i;  // whose checks and costs this request carries
      const std::pair<std::string, std::size_t>* u = used.empty() ? nullptr : &used[g() % used.size()];
      // The memory store's window is in ticks (here all of them), the Redis
      // store's in wall-clock time: keep repeats within 2^62 ticks of the first.
      if (u != nullptr) {
        const detail::i128 gap = static_cast<detail::i128>(t.steps[i].now) - t.steps[u->second].now;
        if (gap > (detail::i128{1} << 62) || gap < -(detail::i128{1} << 62)) u = nullptr;
      }
      if (roll < 30 || u == nullptr) {
        id = prefix + "fresh" + std::to_string(i);
        used.emplace_back(id, i);
      } else if (roll < 65) {
        id = u->first;
        as = u->second;  // the same request again
      } else if (roll < 90) {
        id = u->first;  // this step's checks under a used id
      }
      const conformance::trace_step& st = t.steps[as];
      std::vector<std::string> keys;
      for (const auto& c : st.checks) keys.push_back(prefix + c.key);
      std::vector<check> cm, cr;
      for (std::size_t k = 0; k < st.checks.size(); ++k) {
        cm.push_back({mi[st.checks[k].policy], keys[k], st.checks[k].cost});
        cr.push_back({ri[st.checks[k].policy], keys[k], st.checks[k].cost});
      }
      const tick now = t.steps[i].now;
      const id_answer a = ask(*m, cm, now, id, st.cost);
      const id_answer b = ask(*r, cr, now, id, st.cost);
      ++steps;
      replayed += a.d.from == source::replayed;
      conflicts += a.d.from == source::id_conflict;
      if (a.d.from == source::error) {
        ASSERT_EQ(b.d.from, source::error) << t.describe() << " step " << i;
        continue;
      }
      ASSERT_EQ(a, b) << t.describe() << "\n  step " << i << " id " << id << " as step " << as << " ("
                      << conformance::show(st) << ") now " << now << "\n  memory " << show(a) << "\n  redis  "
                      << show(b);
    }
  }
  std::printf("request ids, %-16s %zu traces, %zu steps: %zu replayed, %zu id conflicts, alike in both stores\n",
              std::string(name_of(GetParam())).c_str(), traces.size(), steps, replayed, conflicts);
  EXPECT_GT(replayed, 100U);
  EXPECT_GT(conflicts, 50U);
  EXPECT_EQ(r->redis_stats().mismatches, 0U);
  EXPECT_EQ(r->stats().store_failures, 0U);
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, RequestIdTraces, ::testing::ValuesIn(conformance::all_algorithms),
                         algorithm_test_name);

}  // namespace
}  // namespace sluice::redis_test::redis_store_request_id_test
