// Leases through every in-process store (lease_traces.hpp): the keyed
// store's multi-key form with release_at, and the memory store's decide_at
// and release_at, step for step as the core decides and releases.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "conformance/lease_traces.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice {
namespace {

using conformance::lease_answer;
using conformance::lease_trace;

std::string diff(const lease_trace& t, const std::vector<lease_answer>& got, const std::vector<lease_answer>& want) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (got[i].d.allowed != want[i].d.allowed || got[i].leased != want[i].leased || got[i].freed != want[i].freed)
      return "step " + std::to_string(i) + " (now " + std::to_string(t.steps[i].now) + "): allowed " +
             std::to_string(got[i].d.allowed) + " want " + std::to_string(want[i].d.allowed) + ", leased " +
             std::to_string(got[i].leased) + " want " + std::to_string(want[i].leased);
  }
  return "";
}

std::vector<lease_answer> run_on_memory(memory_store& s, const lease_trace& t, const std::string& prefix) {
  std::vector<policy_id> ids;
  for (std::size_t p = 0; p < t.policies.size(); ++p)
    ids.push_back(s.define(prefix + std::to_string(p), t.policies[p]).value());
  std::vector<lease_answer> out;
  std::vector<std::uint64_t> lease_of(t.steps.size(), 0);
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const auto& st = t.steps[i];
    std::vector<check> cs;
    for (const auto& [p, k] : conformance::release_checks(t, st)) cs.push_back(check{ids[p], k, 0});
    lease_answer a;
    if (st.release) {
      const std::uint64_t n = st.of ? lease_of[*st.of] : 0xdead;
      const release_result r = s.release_at(cs, n == 0 ? 0xdead : n, st.now);
      EXPECT_EQ(r.from, source::store);
      for (std::size_t k = 0; k < cs.size(); ++k) a.freed.push_back(n == 0 ? 0 : r.per_check[k]);
    } else {
      const store_decision d = s.decide_at({.checks = cs, .now = st.now, .cost = st.cost, .id = {}});
      a.d.allowed = d.d.allowed;
      a.leased = d.lease != 0;
      lease_of[i] = d.lease;
    }
    out.push_back(a);
  }
  return out;
}

std::vector<lease_answer> run_on_keyed(const lease_trace& t) {
  keyed_options ko;
  ko.auto_purge = false;
  std::vector<std::unique_ptr<keyed_limiter>> ks;
  for (const auto& p : t.policies) ks.push_back(std::make_unique<keyed_limiter>(p, ko));
  std::vector<lease_answer> out;
  std::vector<std::uint64_t> lease_of(t.steps.size(), 0);
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const auto& st = t.steps[i];
    lease_answer a;
    if (st.release) {
      const std::uint64_t n = st.of ? lease_of[*st.of] : 0;
      for (const auto& [p, k] : conformance::release_checks(t, st))
        a.freed.push_back(n == 0 ? 0 : ks[p]->release_at(k, n, st.now));
    } else {
      std::vector<keyed_check> cs;
      for (const auto& [p, k] : st.checks) cs.push_back({ks[p].get(), k, 0});
      const lease_scope scope(draw_lease_nonce());
      const decision d = keyed_limiter::try_acquire_all_at(cs, st.now, st.cost);
      a.d.allowed = d.allowed;
      a.leased = d.allowed && scope.issued() > 0;
      lease_of[i] = a.leased ? scope.nonce() : 0;
    }
    out.push_back(a);
  }
  return out;
}

TEST(LeaseConformance, KeyedStoreAcquiresAndReleasesAsTheCore) {
  std::size_t admits = 0, denials = 0, leased = 0, freed = 0, held_nowhere = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const lease_trace t = conformance::make_lease_trace(seed);
    const auto want = conformance::reference_answers(t);
    ASSERT_EQ(diff(t, run_on_keyed(t), want), "") << "seed " << seed;
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (t.steps[i].release) {
        std::int64_t units = 0;
        for (auto u : want[i].freed) units += u;
        ++(units > 0 ? freed : held_nowhere);
      } else {
        ++(want[i].d.allowed ? admits : denials);
        leased += want[i].leased ? 1 : 0;
      }
    }
  }
  // The traces reach every kind of step.
  EXPECT_GT(admits, 1000U);
  EXPECT_GT(denials, 1000U);
  EXPECT_GT(leased, 1000U);
  EXPECT_GT(freed, 300U);
  EXPECT_GT(held_nowhere, 300U);
}

TEST(LeaseConformance, MemoryStoreAcquiresAndReleasesAsTheCore) {
  memory_store_options o;
  o.keyed.auto_purge = false;
  o.max_policies = 1200;
  memory_store s(o);
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const lease_trace t = conformance::make_lease_trace(seed);
    ASSERT_EQ(diff(t, run_on_memory(s, t, "t" + std::to_string(seed) + ":"), conformance::reference_answers(t)), "")
        << "seed " << seed;
  }
}

}  // namespace
}  // namespace sluice
