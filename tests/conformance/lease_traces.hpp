// Lease traces for the conformance suite (semantics.md, "Leases"): random
// acquires and releases on policies with concurrency parts, several keys,
// requests of one and of several checks, the clock now and then stepping
// back. A store runs each step and answers its decision (and lease) or the
// units a release freed; the reference is the core — `decide` under a
// `lease_scope` of the reference's own nonce, and `release` — on one state
// per (policy, key). A release step names an earlier acquire step (its
// lease, as the store under test answered it: nonces differ between stores,
// decisions must not), or a lease no one was handed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sluice/core/lease.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/store.hpp"

namespace sluice::conformance {

struct lease_step {
  std::vector<std::pair<std::size_t, std::string>> checks;  ///< (policy index, key)
  tick now = 0;
  std::int64_t cost = 1;
  /// A release of the lease of step `of` (or, when `of` is none, of a lease
  /// never handed out).
  bool release = false;
  std::optional<std::size_t> of;
};

struct lease_trace {
  std::vector<any_policy> policies;
  std::vector<lease_step> steps;
};

/// One step's answer: an acquire's decision and whether it took a lease,
/// or a release's units per check.
struct lease_answer {
  decision d;
  bool leased = false;
  std::vector<std::int64_t> freed;
  friend bool operator==(const lease_answer&, const lease_answer&) = default;
};

inline lease_trace make_lease_trace(std::uint64_t seed) {
  std::mt19937_64 g(seed);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  const char* shapes[] = {"concurrency %N lease=%Dns", "all(gcra %R/20ns burst=3, concurrency %N lease=%Dns)",
                          "any(concurrency %N lease=%Dns, quota 2)", "all(concurrency %N lease=%Dns, concurrency 2)",
                          "gcra %R/10ns"};
  lease_trace t;
  const std::int64_t np = pick(1, 3);
  for (std::int64_t i = 0; i < np; ++i) {
    std::string s = shapes[i == 0 ? g() % 4 : g() % 5];
    const auto fill = [&](const std::string& k, std::int64_t v) {
      for (std::size_t at; (at = s.find(k)) != std::string::npos;) s.replace(at, k.size(), std::to_string(v));
    };
    fill("%N", pick(0, 4));
    fill("%D", pick(1, 30));
    fill("%R", pick(1, 5));
    t.policies.push_back(parse_policy(s).value());
  }
  tick now = pick(-100, 100);
  std::vector<std::size_t> acquires;
  for (int i = 0; i < 60; ++i) {
    lease_step st;
    st.now = now;
    if (!acquires.empty() && pick(0, 9) < 3) {
      st.release = true;
      if (pick(0, 9) > 0)
        st.of = acquires[g() % acquires.size()];
      else
        st.checks.push_back({0, "k0"});  // a lease never handed out
    } else {
      const std::int64_t n = pick(1, np);
      for (std::int64_t k = 0; k < n; ++k)
        st.checks.push_back({static_cast<std::size_t>(k), "k" + std::to_string(pick(0, 1))});
      st.cost = pick(0, 5) == 0 ? pick(2, 4) : 1;
      acquires.push_back(t.steps.size());
    }
    t.steps.push_back(std::move(st));
    now += pick(0, 9) == 0 ? -pick(1, 15) : pick(0, 6);
  }
  return t;
}

/// The checks a release step names: its acquire's.
inline const std::vector<std::pair<std::size_t, std::string>>& release_checks(const lease_trace& t,
                                                                              const lease_step& s) {
  return s.of ? t.steps[*s.of].checks : s.checks;
}

/// The contract's answers, from the core on one state per (policy, key).
inline std::vector<lease_answer> reference_answers(const lease_trace& t) {
  std::map<std::pair<std::size_t, std::string>, any_state> states;
  const auto state_of = [&](std::size_t p, const std::string& k) -> any_state& {
    auto it = states.find({p, k});
    if (it == states.end()) it = states.emplace(std::make_pair(p, k), fresh_state(t.policies[p])).first;
    return it->second;
  };
  std::vector<lease_answer> out;
  std::vector<std::uint64_t> nonce_of(t.steps.size(), 0);
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const lease_step& s = t.steps[i];
    lease_answer a;
    if (s.release) {
      const std::uint64_t n = s.of ? nonce_of[*s.of] : 0xdead;
      for (const auto& [p, k] : release_checks(t, s))
        a.freed.push_back(n == 0 ? 0 : release(t.policies[p], state_of(p, k), s.now, n));
      out.push_back(a);
      continue;
    }
    // all_of over the checks: admitted iff every check admits; only then does each decide.
    bool all = true;
    for (const auto& [p, k] : s.checks) all = all && peek(t.policies[p], state_of(p, k), s.now, s.cost).allowed;
    std::uint64_t issued = 0;
    if (all) {
      const lease_scope scope(i + 1);
      for (const auto& [p, k] : s.checks) (void)decide(t.policies[p], state_of(p, k), s.now, s.cost);
      issued = scope.issued();
    }
    a.d.allowed = all;
    a.leased = issued > 0;
    nonce_of[i] = a.leased ? i + 1 : 0;
    out.push_back(a);
  }
  return out;
}

}  // namespace sluice::conformance
