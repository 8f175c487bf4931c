// Running the conformance suite's lease traces (conformance/lease_traces.hpp)
// through a store, and judging a Redis store's answers against the core's
// and, field for field, the memory store's. Shared by store_lease_test.cpp
// and the Cluster's lease test.
#pragma once

#include <future>
#include <string>
#include <vector>

#include "conformance/lease_traces.hpp"
#include "redis/store_support.hpp"
#include "sluice/core/store.hpp"

namespace sluice::redis_test {

using conformance::lease_answer;
using conformance::lease_trace;

/// How the store under test decides a lease trace's acquires.
enum class face { one_call, async, pipelined };

/// One step's full answer: the store's decision (figures included), whether
/// it took a lease, and a release's units per check.
struct full_answer {
  store_decision d;
  std::vector<std::int64_t> freed;
};

/// Decides `r` through `face` (the pipelined face decides it alone; runs of
/// acquires are batched by run_trace).
inline store_decision decide_through(redis_store& s, face f, const store_request& r) {
  if (f != face::async) return s.decide_at(r);
  std::promise<store_decision> p;
  s.decide_async(r, {}, {}, [&p](const store_decision& d) { p.set_value(d); });
  return p.get_future().get();
}

/// Runs `t` on `s` under `prefix` (policy names) and `key_prefix` (keys):
/// each step's answer.
inline std::vector<full_answer> run_trace(store& s, const lease_trace& t, const std::string& prefix, face f,
                                          redis_store* rs = nullptr, const std::string& key_prefix = "") {
  std::vector<policy_id> ids;
  for (std::size_t p = 0; p < t.policies.size(); ++p) {
    auto id = s.define(prefix + std::to_string(p), t.policies[p]);
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.err().what());
    ids.push_back(id.ok() ? id.value() : 0);
  }
  std::vector<full_answer> out(t.steps.size());
  std::vector<std::uint64_t> lease_of(t.steps.size(), 0);
  std::vector<std::vector<check>> checks(t.steps.size());
  std::vector<std::vector<std::string>> keys(t.steps.size());  // the checks' keys point into these
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    for (const auto& [p, k] : conformance::release_checks(t, t.steps[i])) keys[i].push_back(key_prefix + k);
    std::size_t j = 0;
    for (const auto& [p, k] : conformance::release_checks(t, t.steps[i]))
      checks[i].push_back(check{ids[p], keys[i][j++], 0});
  }
  for (std::size_t i = 0; i < t.steps.size();) {
    const auto& st = t.steps[i];
    if (st.release) {
      const std::uint64_t n = st.of ? lease_of[*st.of] : 0;
      const release_result r = s.release_at(checks[i], n == 0 ? 0xdead : n, st.now);
      EXPECT_EQ(r.from, source::store) << "step " << i;
      std::int64_t sum = 0;
      for (std::size_t k = 0; k < checks[i].size(); ++k) {
        out[i].freed.push_back(n == 0 ? 0 : r.per_check[k]);
        sum += r.per_check[k];
      }
      EXPECT_EQ(r.units, sum);
      ++i;
      continue;
    }
    // A run of acquires: pipelined in one batch, or one by one.
    std::size_t j = i;
    while (j < t.steps.size() && !t.steps[j].release) ++j;
    if (f == face::pipelined && rs != nullptr) {
      std::vector<store_request> reqs;
      for (std::size_t k = i; k < j; ++k)
        reqs.push_back({.checks = checks[k], .now = t.steps[k].now, .cost = t.steps[k].cost, .id = {}});
      std::vector<store_decision> got(reqs.size());
      rs->decide_many_at(reqs, got);
      for (std::size_t k = i; k < j; ++k) out[k].d = got[k - i];
    } else {
      for (std::size_t k = i; k < j; ++k) {
        const store_request r{.checks = checks[k], .now = t.steps[k].now, .cost = t.steps[k].cost, .id = {}};
        out[k].d = rs != nullptr ? decide_through(*rs, f, r) : s.decide_at(r);
      }
    }
    for (std::size_t k = i; k < j; ++k) lease_of[k] = out[k].d.lease;
    i = j;
  }
  return out;
}

/// "" when `got` agrees with the core's answers and, field for field, with
/// the memory store's; else the first difference.
inline std::string judge(const lease_trace& t, const std::vector<full_answer>& got, const std::vector<full_answer>& mem,
                         const std::vector<lease_answer>& core) {
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const std::string at = "step " + std::to_string(i) + " (now " + std::to_string(t.steps[i].now) + "): ";
    if (t.steps[i].release) {
      if (got[i].freed != core[i].freed) return at + "freed differs from the core's";
      if (got[i].freed != mem[i].freed) return at + "freed differs from the memory store's";
      continue;
    }
    if (got[i].d.from != source::store) return at + "not from the store";
    if (got[i].d.d.allowed != core[i].d.allowed) return at + "allowed differs from the core's";
    if ((got[i].d.lease != 0) != core[i].leased) return at + "lease differs from the core's";
    if (!(got[i].d.d == mem[i].d.d)) return at + show(got[i].d.d) + " but the memory store " + show(mem[i].d.d);
  }
  return "";
}

}  // namespace sluice::redis_test
