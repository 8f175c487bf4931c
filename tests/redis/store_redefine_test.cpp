// Redefining a policy in the Redis store carries its states over exactly as
// the memory store's eager `define_at` does (store.hpp, reconfigure.hpp):
// the same traces (tests/conformance/traces.hpp), with one or two
// redefinitions of their policies (same algorithm or composite shape, new
// parameters) at drawn steps and instants, give field for field the same
// decisions — and every check's — through a memory store and a Redis store,
// one call at a time and pipelined. Every algorithm and composite.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "conformance/traces.hpp"
#include "redis/redefine_scenarios.hpp"
#include "redis/store_support.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::redis_test::redis_store_redefine_test {
namespace {

using conformance::answer;
using namespace redefine;

class RedisRedefine : public ::testing::TestWithParam<algorithm> {};

TEST_P(RedisRedefine, CarriesStatesOverAsTheMemoryStoreOneCallAtATime) {
  auto st = open_patient_store();
  ASSERT_TRUE(st);
  auto mem = exact_memory_store();
  constexpr std::size_t n = 400;
  const auto scenarios = draw(GetParam(), n, 1, false);
  ASSERT_EQ(scenarios.size(), n);
  std::size_t decisions = 0;
  for (std::size_t j = 0; j < scenarios.size(); ++j) {
    const std::string prefix = "r" + std::to_string(j) + ":";
    std::string err;
    const auto want = run_one_by_one(*mem, scenarios[j], prefix, err);
    ASSERT_EQ(err, "") << scenarios[j].t.describe();
    const auto got = run_one_by_one(*st, scenarios[j], prefix, err);
    ASSERT_EQ(err, "") << scenarios[j].t.describe();
    ASSERT_EQ(conformance::compare(scenarios[j].t, got, want, true), "") << explain(scenarios[j], got, want);
    decisions += got.size();
  }
  const auto s = st->redis_stats();
  std::printf("redefine %-16s %zu traces, %zu decisions agree with the memory store; %llu carried over\n",
              std::string(name_of(GetParam())).c_str(), scenarios.size(), decisions,
              static_cast<unsigned long long>(s.carried));
  EXPECT_GT(s.carried, 0U);
  EXPECT_EQ(s.mismatches, 0U);
  EXPECT_EQ(s.unknown_config, 0U);
  EXPECT_EQ(s.base.store_failures, 0U);
}

TEST_P(RedisRedefine, CarriesStatesOverAsTheMemoryStorePipelined) {
  auto st = open_patient_store();
  ASSERT_TRUE(st);
  auto mem = exact_memory_store();
  constexpr std::size_t n = 1000;  // 2,000 took 190 s of CI's ASan run over the 11 algorithms
  const auto scenarios = draw(GetParam(), n, 1'000'000, true);
  ASSERT_EQ(scenarios.size(), n);
  // Step i of every scenario in one batch; each scenario's redefinitions
  // before its step, in both stores.
  std::vector<std::vector<policy_id>> ids_m(n);
  std::vector<std::vector<policy_id>> ids_r(n);
  std::size_t longest = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const std::string prefix = "p" + std::to_string(j) + ":";
    auto [a, e1] = conformance::define_all(*mem, scenarios[j].t, prefix);
    auto [b, e2] = conformance::define_all(*st, scenarios[j].t, prefix);
    ASSERT_EQ(e1 + e2, "");
    ids_m[j] = a;
    ids_r[j] = b;
    longest = std::max(longest, scenarios[j].t.steps.size());
  }
  std::vector<std::vector<answer>> got(n);
  std::vector<std::vector<answer>> want(n);
  std::vector<std::size_t> next(n, 0);
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
      const std::string prefix = "p" + std::to_string(j) + ":";
      for (; next[j] < sc.changes.size() && sc.changes[next[j]].step == i; ++next[j]) {
        const change& c = sc.changes[next[j]];
        ASSERT_TRUE(mem->define_at(prefix + sc.t.policies[c.policy].name, c.to, c.at).ok());
        ASSERT_TRUE(st->define_at(prefix + sc.t.policies[c.policy].name, c.to, c.at).ok());
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
  for (std::size_t j = 0; j < n; ++j)
    ASSERT_EQ(conformance::compare(scenarios[j].t, got[j], want[j], false), "")
        << explain(scenarios[j], got[j], want[j]);
  const auto s = st->redis_stats();
  std::printf("redefine pipelined %-16s %zu traces agree with the memory store; %llu carried over\n",
              std::string(name_of(GetParam())).c_str(), n, static_cast<unsigned long long>(s.carried));
  EXPECT_GT(s.carried, 0U);
  EXPECT_EQ(s.mismatches, 0U);
  EXPECT_EQ(s.base.store_failures, 0U);
}

TEST(RedisRedefineRules, TheDenyCacheForgetsARedefinedPolicy) {
  store_options o;
  o.deny_cache = true;
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const policy_id p = st->define_at("q", any_policy{quota::make(2).value()}, 0).value();
  const check c{p, "k"};
  EXPECT_TRUE(st->decide_at(one_check(c, 1)).d.allowed);
  EXPECT_TRUE(st->decide_at(one_check(c, 2)).d.allowed);
  EXPECT_EQ(st->decide_at(one_check(c, 3)).from, source::store);  // denied: never, cached
  EXPECT_TRUE(cache_answers_denial(*st, one_check(c, 4)));        // answered locally (soon)
  // A larger quota keeps the two units used: one more fits, from the store.
  ASSERT_EQ(st->define_at("q", any_policy{quota::make(3).value()}, 5).value(), p);
  const auto d = st->decide_at(one_check(c, 6));
  EXPECT_EQ(d.from, source::store);
  EXPECT_TRUE(d.d.allowed);
  EXPECT_EQ(d.d.remaining, 0);
  EXPECT_FALSE(st->decide_at(one_check(c, 7)).d.allowed);
  EXPECT_EQ(st->redis_stats().carried, 1U);
}

TEST(RedisRedefineRules, AFleetMidRolloutNeverAdmitsWrongly) {
  // Two processes on one Redis: `old_` knows only A (5 per 1000 ticks),
  // `new_` has redefined it to B (8 per 1000 ticks) at 100.
  store_options o;
  o.key_prefix = fresh_prefix("rollout");
  auto old_ = open_store(o);
  auto new_ = open_store(o);
  ASSERT_TRUE(old_ && new_);
  const any_policy a{fixed_window::make(rate{5, 1000}).value()};
  const any_policy b{fixed_window::make(rate{8, 1000}).value()};
  const check co{old_->define_at("w", a, 0).value(), "k"};
  const check cn{new_->define_at("w", a, 0).value(), "k"};
  ASSERT_EQ(new_->define_at("w", b, 100).value(), cn.policy);
  // The old process admits 3 units under A.
  for (tick t = 101; t < 104; ++t) ASSERT_TRUE(old_->decide_at(one_check(co, t)).d.allowed);
  // The new one carries them over: 5 more fit under B's 8, not 8.
  std::size_t admitted = 0;
  for (tick t = 110; t < 120; ++t) admitted += new_->decide_at(one_check(cn, t)).d.allowed ? 1 : 0;
  EXPECT_EQ(admitted, 5U);
  EXPECT_GE(new_->redis_stats().carried, 1U);
  // The old process now meets B's value: an error (a denial), counted, and
  // nothing it writes.
  for (tick t = 120; t < 125; ++t) {
    const auto d = old_->decide_at(one_check(co, t));
    EXPECT_EQ(d.from, source::error);
    EXPECT_FALSE(d.d.allowed);
  }
  EXPECT_EQ(old_->redis_stats().unknown_config, 5U);
  // A key only the old process wrote is carried by the new one with its
  // units: 5 admitted under A, then 3 more under B (the window is the same).
  const check ko{co.policy, "other"};
  const check kn{cn.policy, "other"};
  for (tick t = 200; t < 210; ++t) old_->decide_at(one_check(ko, t));
  admitted = 0;
  for (tick t = 210; t < 220; ++t) admitted += new_->decide_at(one_check(kn, t)).d.allowed ? 1 : 0;
  EXPECT_EQ(admitted, 3U);
  // A process started with only B meets A's values the same way.
  auto fresh = open_store(o);
  ASSERT_TRUE(fresh);
  const check kf{fresh->define_at("w", b, 300).value(), "third"};
  const check k3{co.policy, "third"};
  ASSERT_TRUE(old_->decide_at(one_check(k3, 301)).d.allowed);
  EXPECT_EQ(fresh->decide_at(one_check(kf, 302)).from, source::error);
  EXPECT_EQ(fresh->redis_stats().unknown_config, 1U);
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, RedisRedefine, ::testing::ValuesIn(conformance::all_algorithms),
                         algorithm_test_name);

}  // namespace
}  // namespace sluice::redis_test::redis_store_redefine_test
