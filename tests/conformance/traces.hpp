// The store conformance suite's traces and judge, for every store: the same
// random, boundary and clock-back traces (several keys, costs, requests of
// one check and of several checks over several keys and policies, checks
// with costs of their own, composites as policies) must give, field for
// field, the decisions the
// contract defines — computed here from the core `decide` on one state per
// (policy, key), the in-process limiter.
//
// A store's test binary includes this header and, for each trace, defines
// its policies under fresh names, decides every step and compares:
//
//   conformance::trace t = conformance::make_trace(algorithm::gcra, seed, {});
//   EXPECT_EQ(conformance::run_conformance(my_store, t, "t42:"), "");
//
// `run_conformance_batched` sends the steps of many traces through
// `decide_many_at` (a remote store pipelines them), comparing the requests'
// decisions (a batch has no per-check figures).
//
// The contract's multi-check rule (store.hpp, semantics.md "Composition"):
// admitted iff every check admits at `now` at its own cost (the check's, or
// the step's when 0); then every check consumes its cost.
// Each check's figures are read after the decision: on an admit its own
// decision; on a denial its own (pure) answer if it denies, else
// `allowed = false`, `retry_after = 0`, `release_after = 0` and the
// untouched state's `remaining` and `reset_after` (a decision of cost 0).
// The request's: on an admit the smallest `remaining` (first such check in
// `part`), the largest `reset_after` and `release_after`; on a denial the
// largest `retry_after` among the denying checks (first such in `part`), the
// smallest `remaining`, the largest `reset_after`. One check: its decision,
// `part` 0. A bad request (a check's cost < 1, a check named twice) is
// `source::error`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "property/models.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/report.hpp"
#include "sluice/core/store.hpp"

namespace sluice::conformance {

using model::rng_t;

/// How traces are drawn.
struct trace_options {
  /// The largest L, W, burst, queue, quota and (positive) cost drawn; a
  /// Redis store holds quantities below 2^53 exactly (pass 2^52).
  std::int64_t max_quantity = std::numeric_limits<std::int64_t>::max();
  /// The largest |instant| and fixed-window origin drawn.
  tick max_time = std::numeric_limits<tick>::max();
  /// Steps per trace.
  std::size_t length = 40;
  /// Keys per trace (each step's checks draw from them).
  std::size_t keys = 3;
  /// Extra policies beside the trace's own (each of a random algorithm),
  /// for requests of several checks; 0 for single-check traces only.
  std::size_t extra_policies = 2;
  /// Let the clock step back.
  bool clock_back = true;
  /// Percent of steps whose checks carry costs of their own (a mix of
  /// costs in one request, drawn from a stream of their own so the rest of
  /// a trace is the same whatever this is).
  int own_costs = 35;
  /// Percent of steps that are reports (store::report_at: every check
  /// charged, never denied; semantics.md "Reports"), drawn from a stream of
  /// their own as `own_costs` is.
  int reports = 15;
  /// Percent of steps that are refunds (store::refund_at; semantics.md
  /// "Refunds") of the request id of an earlier step drawn at random (a
  /// decision, admitted or denied, a report, a bad request or a refund: each
  /// has its answer), from a stream of their own. When not 0, every
  /// decision carries an id of its own (the store's idempotency window must
  /// exceed the trace's span of instants).
  int refunds = 0;
};

/// A policy of a trace, defined in the store under `prefix + name`.
struct trace_policy {
  std::string name;
  any_policy policy;
  std::string describe;
  /// The largest cost it ever admits at once (a composite: its largest
  /// part's), for drawing costs near it.
  std::int64_t capacity = 1;
};

/// One check of a step: a trace policy (index), a key and its own cost
/// (0: the step's).
struct trace_check {
  std::size_t policy = 0;
  std::string key;
  std::int64_t cost = 0;
};

/// One request.
struct trace_step {
  std::vector<trace_check> checks;
  tick now = 0;
  std::int64_t cost = 1;
  /// A report (store::report_at) instead of a decision.
  bool report = false;
  /// A decision with the request id `id_of(its index)`.
  bool with_id = false;
  /// A refund (store::refund_at at `now`) of step `*refund_of`'s id instead
  /// of a decision (its checks are not sent).
  std::optional<std::size_t> refund_of;
};

/// The request id of step `i` of a trace, under `prefix`.
inline std::string id_of(std::string_view prefix, std::size_t i) {
  return std::string(prefix) + "id" + std::to_string(i);
}

/// A trace: its policies and its requests, in order.
struct trace {
  std::vector<trace_policy> policies;
  std::vector<trace_step> steps;
  std::uint64_t seed = 0;
  [[nodiscard]] std::string describe() const {
    std::string s = "seed " + std::to_string(seed) + ":";
    for (const auto& p : policies) s += " [" + p.name + ": " + p.describe + "]";
    return s;
  }
};

/// What a store answered (or must answer) for one step.
struct answer {
  store_decision d;
  std::vector<decision> per_check;
  /// Each check's `grows_after` (store.hpp); empty: not asked.
  std::vector<std::optional<tick>> grows;
  /// A refund's status (then `d.d` and `per_check` are its figures when
  /// refunded), and the units each check got back.
  std::optional<refund_status> refund;
  std::vector<std::int64_t> given;
};

namespace detail_ {

inline std::int64_t cap_q(std::int64_t v, std::int64_t m) { return std::min(v, m); }

/// A config for `a` with every quantity within `o`'s bounds, and at times
/// right at those bounds.
inline model::config bounded_config(algorithm a, rng_t& g, const trace_options& o) {
  model::config c = model::random_config(a, g);
  const std::int64_t m = o.max_quantity;
  auto edge = [&](std::int64_t v) {
    return model::chance(g, 10) ? std::max<std::int64_t>(1, m - model::uniform(g, 0, 3)) : v;
  };
  c.r.limit = c.r.limit == 0 ? 0 : std::max<std::int64_t>(1, cap_q(c.r.limit, m));
  if (m != std::numeric_limits<std::int64_t>::max()) c.r.limit = c.r.limit == 0 ? 0 : edge(c.r.limit);
  if (a == algorithm::sliding_buckets) {
    const std::int64_t n = std::min(c.extra, m);
    const std::int64_t width = std::max<std::int64_t>(1, std::min(c.r.window / c.extra, m / n));
    c.extra = n;
    c.r.window = n * width;
  } else {
    c.r.window = std::max<tick>(1, cap_q(c.r.window, m));
    if (m != std::numeric_limits<std::int64_t>::max()) c.r.window = edge(c.r.window);
    if (a == algorithm::token_bucket || a == algorithm::gcra || a == algorithm::leaky_queue) {
      c.extra = std::max<std::int64_t>(1, cap_q(c.extra, m));
      if (m != std::numeric_limits<std::int64_t>::max()) c.extra = edge(c.extra);
    } else if (a == algorithm::quota) {
      c.extra = cap_q(c.extra, m);
    }
  }
  if (c.origin > o.max_time || c.origin < -o.max_time) c.origin = c.origin % (o.max_time == 0 ? 1 : o.max_time);
  return c;
}

inline const algorithm plain_algorithms[] = {
    algorithm::fixed_window, algorithm::sliding_log, algorithm::sliding_counter, algorithm::sliding_buckets,
    algorithm::token_bucket, algorithm::gcra,        algorithm::leaky_queue,     algorithm::quota};

/// A policy of algorithm `a` (a composite: two or three parts, maybe one
/// nested composite), and the config its trace's times are drawn from.
inline std::pair<trace_policy, model::config> make_policy_of(algorithm a, rng_t& g, const trace_options& o,
                                                             int depth = 0) {
  if (a == algorithm::all_of || a == algorithm::any_of) {
    std::vector<any_policy> parts;
    std::string text = a == algorithm::all_of ? "all(" : "any(";
    model::config first;
    std::int64_t capacity = 1;
    const std::size_t n = 2 + g() % 2;
    for (std::size_t i = 0; i < n; ++i) {
      algorithm pa = plain_algorithms[g() % std::size(plain_algorithms)];
      if (depth == 0 && model::chance(g, 15)) pa = model::chance(g, 50) ? algorithm::all_of : algorithm::any_of;
      auto [part, c] = make_policy_of(pa, g, o, depth + 1);
      text += (i ? ", " : "") + part.describe;
      if (i == 0) first = c;
      capacity = std::max(capacity, part.capacity);
      parts.push_back(std::move(part.policy));
    }
    any_policy p = a == algorithm::all_of ? any_policy{all_of::make(std::move(parts)).value()}
                                          : any_policy{any_of::make(std::move(parts)).value()};
    return {{"", std::move(p), text + ")", capacity}, first};
  }
  const model::config c = bounded_config(a, g, o);
  return {{"", make_policy(model::spec_of(c)).value(), c.describe(), c.capacity()}, c};
}

/// Gives the checks of `o.own_costs` percent of `t`'s steps costs of their
/// own: the step's (0), 1, a few units, near the check's policy's capacity,
/// the step's cost plus one, past the capacity, any, and rarely a negative
/// one (a bad request). A step whose own cost is bad (0 or less) is still a
/// good request when every check has a good cost of its own. From a stream
/// of its own: the trace's other draws are the same whatever this adds.
inline void draw_own_costs(trace& t, std::uint64_t seed, algorithm a, const trace_options& o) {
  if (o.own_costs <= 0) return;
  rng_t g(model::mix(seed ^ 0x6f776e2d636f7374ULL, a));  // "own-cost"
  const std::int64_t m = o.max_quantity;
  for (trace_step& s : t.steps) {
    if (!model::chance(g, o.own_costs)) continue;
    for (trace_check& c : s.checks) {
      const std::int64_t top = std::clamp<std::int64_t>(t.policies[c.policy].capacity, 1, m);
      const int roll = static_cast<int>(g() % 100);
      if (roll < 20) {
        c.cost = 0;
      } else if (roll < 40) {
        c.cost = 1;
      } else if (roll < 55) {
        c.cost = model::uniform(g, 1, std::min<std::int64_t>(5, m));
      } else if (roll < 75) {
        c.cost = model::uniform(g, std::max<std::int64_t>(1, top / 2), top);
      } else if (roll < 85) {
        c.cost = s.cost >= 1 && s.cost < m ? s.cost + 1 : 1;
      } else if (roll < 93) {
        c.cost = top < m ? model::uniform(g, top + 1, m) : m;
      } else if (roll < 96) {
        c.cost = model::uniform(g, 1, m);
      } else {
        c.cost = -model::uniform(g, 1, 3);  // a bad request
      }
    }
  }
}

/// Makes `o.reports` percent of `t`'s steps reports, from a stream of its
/// own (the trace's other draws are the same whatever this adds).
inline void draw_reports(trace& t, std::uint64_t seed, algorithm a, const trace_options& o) {
  if (o.reports <= 0) return;
  rng_t g(model::mix(seed ^ 0x7265706f72747321ULL, a));  // "reports!"
  for (trace_step& s : t.steps) s.report = model::chance(g, o.reports);
}

/// Makes `o.refunds` percent of `t`'s steps refunds of an earlier step's
/// id, and gives every decision an id, from a stream of its own.
inline void draw_refunds(trace& t, std::uint64_t seed, algorithm a, const trace_options& o) {
  if (o.refunds <= 0) return;
  rng_t g(model::mix(seed ^ 0x726566756e647321ULL, a));  // "refunds!"
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    trace_step& s = t.steps[i];
    if (i > 0 && model::chance(g, o.refunds)) {
      // Mostly a recent step (a refund soon after its request), sometimes any.
      const std::size_t back = model::chance(g, 70) ? 1 + g() % std::min<std::size_t>(i, 3) : 1 + g() % i;
      s.refund_of = i - back;
      s.report = false;
    } else {
      s.with_id = !s.report;
    }
  }
}

}  // namespace detail_

/// A trace whose first policy is of algorithm `a` (any plain algorithm, or
/// all_of / any_of for a composite), drawn from `seed`. Deterministic.
inline trace make_trace(algorithm a, std::uint64_t seed, const trace_options& o = {}) {
  rng_t g(model::mix(seed, a));
  trace t;
  t.seed = seed;
  auto [first, c] = detail_::make_policy_of(a, g, o);
  first.name = "p0";
  t.policies.push_back(std::move(first));
  for (std::size_t i = 0; i < o.extra_policies; ++i) {
    const algorithm pa = detail_::plain_algorithms[g() % std::size(detail_::plain_algorithms)];
    auto [p, pc] = detail_::make_policy_of(pa, g, o);
    p.name = "p" + std::to_string(i + 1);
    t.policies.push_back(std::move(p));
  }
  const auto times = model::random_trace(c, g, o.length, o.clock_back);
  const std::size_t keys = std::max<std::size_t>(1, o.keys);
  for (const auto& q : times) {
    trace_step s;
    s.now = std::clamp<tick>(q.now, -o.max_time, o.max_time);
    s.cost = q.cost > 0 ? std::min(q.cost, o.max_quantity) : q.cost;
    const std::size_t pairs = t.policies.size() * keys;
    std::size_t n = 1;
    if (t.policies.size() > 1 || keys > 1) {
      const int roll = static_cast<int>(g() % 100);
      n = roll < 55 ? 1 : (roll < 85 ? 2 : 3);
    }
    n = std::min(n, pairs);
    std::vector<std::size_t> picked;
    while (picked.size() < n) {
      const std::size_t k = g() % pairs;
      if (std::find(picked.begin(), picked.end(), k) == picked.end()) picked.push_back(k);
    }
    // Mostly the trace's own policy first, so its times drive the trace.
    if (model::chance(g, 60)) picked[0] = (g() % keys) * t.policies.size();
    std::sort(picked.begin() + 1, picked.end());
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    for (std::size_t k : picked)
      s.checks.push_back({k % t.policies.size(), "k" + std::to_string(k / t.policies.size())});
    if (model::chance(g, 2)) s.checks.push_back(s.checks.front());  // a bad request: a check named twice
    t.steps.push_back(std::move(s));
  }
  detail_::draw_own_costs(t, seed, a, o);
  detail_::draw_reports(t, seed, a, o);
  detail_::draw_refunds(t, seed, a, o);
  return t;
}

/// The units check `c` of step `s` is decided at: its own cost, or the step's.
inline std::int64_t cost_of(const trace_step& s, const trace_check& c) { return c.cost != 0 ? c.cost : s.cost; }

/// Whether some check of `s` has its own cost.
inline bool mixed_costs(const trace_step& s) {
  return std::any_of(s.checks.begin(), s.checks.end(), [](const trace_check& c) { return c.cost != 0; });
}

/// Whether a step is a bad request (a check's cost below 1, a check named
/// twice).
inline bool bad_request(const trace_step& s) {
  if (s.checks.empty()) return true;
  for (std::size_t i = 0; i < s.checks.size(); ++i) {
    if (cost_of(s, s.checks[i]) < 1) return true;
    for (std::size_t j = 0; j < i; ++j)
      if (s.checks[i].policy == s.checks[j].policy && s.checks[i].key == s.checks[j].key) return true;
  }
  return false;
}

/// The answers the contract defines for every step of `t`: the core
/// `decide` on one state per (policy, key), combined as the overview says.
inline std::vector<answer> expected_answers(const trace& t) {
  std::map<std::pair<std::size_t, std::string>, any_state> states;
  auto state = [&](const trace_check& c) -> any_state& {
    auto it = states.find({c.policy, c.key});
    if (it == states.end())
      it = states.emplace(std::pair{c.policy, c.key}, fresh_state(t.policies[c.policy].policy)).first;
    return it->second;
  };
  std::vector<answer> out;
  out.reserve(t.steps.size());
  // Per step with an id that admitted: its checks' receipts (refunded:
  // used up, `refunded` set).
  std::map<std::size_t, std::vector<receipt>> tickets;
  std::vector<bool> refunded(t.steps.size(), false);
  for (std::size_t at = 0; at < t.steps.size(); ++at) {
    const trace_step& s = t.steps[at];
    answer a;
    if (s.refund_of) {
      // The contract (semantics.md "Refunds"): unknown unless a decision
      // with that id was made; its denial is not refundable; once only.
      const std::size_t j = *s.refund_of;
      const trace_step& of = t.steps[j];
      if (!of.with_id || of.refund_of || bad_request(of)) {
        a.refund = refund_status::unknown_id;
      } else if (refunded[j]) {
        a.refund = refund_status::already_refunded;
      } else if (auto it = tickets.find(j); it == tickets.end()) {
        a.refund = refund_status::not_refundable;
      } else {
        a.refund = refund_status::refunded;
        refunded[j] = true;
        const std::size_t n = of.checks.size();
        a.per_check.resize(n);
        a.given.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
          const any_policy& p = t.policies[of.checks[i].policy].policy;
          any_state& st = state(of.checks[i]);
          a.given[i] = refund(p, st, std::move(it->second[i]), s.now);
          any_state zero = st;
          any_state one = st;
          const decision z = decide(p, zero, s.now, 0);
          a.per_check[i] = report_answer(z, decide(p, one, s.now, 1));
        }
        a.d.d = combine_reports(a.per_check);
        tickets.erase(it);
      }
      out.push_back(std::move(a));
      continue;
    }
    if (bad_request(s)) {
      a.d.from = source::error;
      a.d.d.retry_after = never;
      out.push_back(std::move(a));
      continue;
    }
    const std::size_t n = s.checks.size();
    a.per_check.resize(n);
    if (s.report) {
      // Every check charged by the core's report; combined as all_of's.
      for (std::size_t i = 0; i < n; ++i)
        a.per_check[i] =
            report(t.policies[s.checks[i].policy].policy, state(s.checks[i]), s.now, cost_of(s, s.checks[i]));
      a.d.d = combine_reports(a.per_check);
      out.push_back(std::move(a));
      continue;
    }
    bool allowed = true;
    for (std::size_t i = 0; i < n; ++i) {
      a.per_check[i] = peek(t.policies[s.checks[i].policy].policy, state(s.checks[i]), s.now, cost_of(s, s.checks[i]));
      allowed = allowed && a.per_check[i].allowed;
    }
    decision& d = a.d.d;
    d.allowed = allowed;
    d.remaining = std::numeric_limits<std::int64_t>::max();
    if (allowed) {
      std::vector<receipt> mine(n);
      for (std::size_t i = 0; i < n; ++i) {
        admission ad = admit(t.policies[s.checks[i].policy].policy, state(s.checks[i]), s.now, cost_of(s, s.checks[i]));
        a.per_check[i] = ad.result;
        mine[i] = std::move(ad.ticket);
        const decision& c = a.per_check[i];
        if (d.part < 0 || c.remaining < d.remaining) {
          d.remaining = c.remaining;
          d.part = static_cast<std::int32_t>(i);
        }
        d.reset_after = std::max(d.reset_after, c.reset_after);
        d.release_after = std::max(d.release_after, c.release_after);
      }
      if (s.with_id) tickets.emplace(at, std::move(mine));
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        decision& c = a.per_check[i];
        if (c.allowed) {
          any_state copy = state(s.checks[i]);
          const decision u = decide(t.policies[s.checks[i].policy].policy, copy, s.now, 0);
          c.allowed = false;
          c.remaining = u.remaining;
          c.reset_after = u.reset_after;
          c.retry_after = 0;
          c.release_after = 0;
        } else if (d.part < 0 || c.retry_after > d.retry_after) {
          d.retry_after = c.retry_after;
          d.part = static_cast<std::int32_t>(i);
        }
        d.remaining = std::min(d.remaining, c.remaining);
        d.reset_after = std::max(d.reset_after, c.reset_after);
      }
    }
    // When each check's remaining grows by one: a peek of that cost on its
    // state after the decision (the definition, semantics.md "On the wire").
    a.grows.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t rem = a.per_check[i].remaining;
      a.grows[i] = rem == std::numeric_limits<std::int64_t>::max()
                       ? never
                       : peek(t.policies[s.checks[i].policy].policy, state(s.checks[i]), s.now, rem + 1).retry_after;
    }
    out.push_back(std::move(a));
  }
  return out;
}

inline std::string show(tick t) { return t == never ? std::string("never") : std::to_string(t); }

inline std::string show(const decision& d) {
  return std::string("{allowed=") + (d.allowed ? "yes" : "no") + " remaining=" + std::to_string(d.remaining) +
         " retry_after=" + show(d.retry_after) + " reset_after=" + show(d.reset_after) +
         " release_after=" + show(d.release_after) + " part=" + std::to_string(d.part) + "}";
}

inline std::string show(const trace_step& s) {
  if (s.refund_of) return "refund of step " + std::to_string(*s.refund_of) + " now=" + std::to_string(s.now);
  std::string out = std::string(s.report ? "report " : "") + (s.with_id ? "id " : "") + "now=" + std::to_string(s.now) +
                    " cost=" + std::to_string(s.cost) + " checks=";
  for (const auto& c : s.checks)
    out += "(p" + std::to_string(c.policy) + "," + c.key + (c.cost != 0 ? ",cost=" + std::to_string(c.cost) : "") + ")";
  return out;
}

/// Compares a store's answers with the expected ones: "" when they agree,
/// else the first difference (trace, step, field). With `per_check`, each
/// check's decision too. A bad request must be a denial from
/// `source::error` (its figures are the store's own).
inline std::string compare(const trace& t, std::span<const answer> got, std::span<const answer> want,
                           bool per_check = true) {
  if (got.size() != want.size())
    return t.describe() + ": " + std::to_string(got.size()) + " answers, want " + std::to_string(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::string where = t.describe() + "\n  step " + std::to_string(i) + " (" + show(t.steps[i]) + "): ";
    if (want[i].refund) {
      if (got[i].refund != want[i].refund)
        return where + "refund " + std::string(got[i].refund ? name_of(*got[i].refund) : "none") + ", want " +
               std::string(name_of(*want[i].refund));
      if (*want[i].refund != refund_status::refunded) continue;
      if (!(got[i].d.d == want[i].d.d)) return where + "refund got " + show(got[i].d.d) + ", want " + show(want[i].d.d);
      if (!per_check) continue;
      for (std::size_t k = 0; k < want[i].per_check.size(); ++k) {
        if (k >= got[i].per_check.size() || !(got[i].per_check[k] == want[i].per_check[k]))
          return where + "refund check " + std::to_string(k) + ": got " +
                 (k < got[i].per_check.size() ? show(got[i].per_check[k]) : std::string("none")) + ", want " +
                 show(want[i].per_check[k]);
        if (k >= got[i].given.size() || got[i].given[k] != want[i].given[k])
          return where + "refund check " + std::to_string(k) + ": given back " +
                 (k < got[i].given.size() ? std::to_string(got[i].given[k]) : std::string("none")) + ", want " +
                 std::to_string(want[i].given[k]);
      }
      continue;
    }
    if (want[i].d.from == source::error) {
      if (got[i].d.from != source::error || got[i].d.d.allowed)
        return where + "a bad request, answered " + show(got[i].d.d) + " from " + std::string(name_of(got[i].d.from));
      continue;
    }
    if (got[i].d.from != source::store) return where + "from " + std::string(name_of(got[i].d.from));
    if (!(got[i].d.d == want[i].d.d)) return where + "got " + show(got[i].d.d) + ", want " + show(want[i].d.d);
    if (!per_check) continue;
    for (std::size_t k = 0; k < want[i].per_check.size(); ++k) {
      if (k >= got[i].per_check.size()) return where + "no decision for check " + std::to_string(k);
      if (!(got[i].per_check[k] == want[i].per_check[k]))
        return where + "check " + std::to_string(k) + ": got " + show(got[i].per_check[k]) + ", want " +
               show(want[i].per_check[k]);
      if (got[i].grows.empty()) continue;  // not asked
      if (k >= got[i].grows.size() || !got[i].grows[k] || *got[i].grows[k] != *want[i].grows[k])
        return where + "check " + std::to_string(k) + ": grows_after " +
               (k < got[i].grows.size() && got[i].grows[k] ? show(*got[i].grows[k]) : std::string("none")) + ", want " +
               show(*want[i].grows[k]);
    }
  }
  return "";
}

/// Defines `t`'s policies in `s` under `prefix` + name (each a fresh name)
/// and returns their ids, or the first error as text (e.g. a Redis store
/// refusing a quantity past its exact range).
inline std::pair<std::vector<policy_id>, std::string> define_all(store& s, const trace& t, std::string_view prefix) {
  std::vector<policy_id> ids;
  for (const trace_policy& p : t.policies) {
    auto id = s.define(std::string(prefix) + p.name, p.policy);
    if (!id) return {{}, p.name + ": " + id.err().what()};
    ids.push_back(id.value());
  }
  return {ids, ""};
}

/// The store's answers to every step of `t`, one `decide_at` each; keys
/// are `prefix` + key, so one store can hold many traces.
inline std::vector<answer> run_on_store(store& s, const trace& t, std::span<const policy_id> ids,
                                        std::string_view prefix) {
  std::vector<answer> out;
  out.reserve(t.steps.size());
  std::vector<std::string> keys;
  std::vector<check> checks;
  for (std::size_t at = 0; at < t.steps.size(); ++at) {
    const trace_step& st = t.steps[at];
    if (st.refund_of) {
      answer a;
      std::vector<decision> pc(max_checks);
      std::vector<std::int64_t> given(max_checks, -1);
      const refund_answer ra = s.refund_at(id_of(prefix, *st.refund_of), st.now, pc, given);
      a.refund = ra.status;
      if (ra.status == refund_status::refunded) {
        a.d.d = ra.d;
        a.per_check.assign(pc.begin(), pc.begin() + static_cast<std::ptrdiff_t>(ra.checks));
        a.given.assign(given.begin(), given.begin() + static_cast<std::ptrdiff_t>(ra.checks));
      }
      out.push_back(std::move(a));
      continue;
    }
    keys.clear();
    checks.clear();
    for (const auto& c : st.checks) keys.push_back(std::string(prefix) + c.key);
    for (std::size_t i = 0; i < st.checks.size(); ++i)
      checks.push_back({ids[st.checks[i].policy], keys[i], st.checks[i].cost});
    answer a;
    a.per_check.resize(checks.size());
    const std::string id = st.with_id ? id_of(prefix, at) : std::string();
    const store_request r{.checks = checks, .now = st.now, .cost = st.cost, .id = id};
    if (st.report) {
      a.d = s.report_at(r, a.per_check);
    } else {
      a.grows.resize(checks.size());
      a.d = s.decide_at(r, a.per_check, a.grows);
    }
    out.push_back(std::move(a));
  }
  return out;
}

/// Runs `t` through `s` (policies under `policy_prefix`, keys under
/// `key_prefix`) and compares: "" when every decision, and every check's, is
/// the contract's.
inline std::string run_conformance(store& s, const trace& t, std::string_view policy_prefix,
                                   std::string_view key_prefix) {
  auto [ids, err] = define_all(s, t, policy_prefix);
  if (!err.empty()) return t.describe() + ": define: " + err;
  const auto got = run_on_store(s, t, ids, key_prefix);
  const auto want = expected_answers(t);
  return compare(t, got, want, true);
}

/// run_conformance with one prefix for policies and keys.
inline std::string run_conformance(store& s, const trace& t, std::string_view prefix = "") {
  return run_conformance(s, t, prefix, prefix);
}

/// Runs many traces at once through `decide_many_at`: step i of every trace
/// in one batch (traces are independent; trace j's policies under
/// `policy_prefix(j)`, its keys under `key_prefix(j)`), then compares each
/// trace's request decisions. Returns the first difference, or "".
template <typename PolicyPrefix, typename KeyPrefix>
std::string run_conformance_batched(store& s, std::span<const trace> traces, PolicyPrefix policy_prefix,
                                    KeyPrefix key_prefix) {
  std::vector<std::vector<policy_id>> ids(traces.size());
  std::vector<std::string> prefixes(traces.size());
  std::size_t longest = 0;
  for (std::size_t j = 0; j < traces.size(); ++j) {
    prefixes[j] = key_prefix(j);
    auto [v, err] = define_all(s, traces[j], policy_prefix(j));
    if (!err.empty()) return traces[j].describe() + ": define: " + err;
    ids[j] = std::move(v);
    longest = std::max(longest, traces[j].steps.size());
  }
  std::vector<std::vector<answer>> got(traces.size());
  std::vector<std::vector<std::string>> keys(traces.size());
  std::vector<std::vector<check>> checks(traces.size());
  std::vector<store_request> batch;
  std::vector<std::size_t> owner;
  std::vector<store_decision> out;
  for (std::size_t i = 0; i < longest; ++i) {
    batch.clear();
    owner.clear();
    for (std::size_t j = 0; j < traces.size(); ++j) {
      if (i >= traces[j].steps.size()) continue;
      const trace_step& st = traces[j].steps[i];
      keys[j].clear();
      checks[j].clear();
      for (const auto& c : st.checks) keys[j].push_back(prefixes[j] + c.key);
      for (std::size_t k = 0; k < st.checks.size(); ++k)
        checks[j].push_back({ids[j][st.checks[k].policy], keys[j][k], st.checks[k].cost});
      if (st.report) {  // traces are independent: a report goes on its own, before the batch
        got[j].push_back(
            {s.report_at({.checks = checks[j], .now = st.now, .cost = st.cost, .id = {}}), {}, {}, {}, {}});
        continue;
      }
      batch.push_back({.checks = checks[j], .now = st.now, .cost = st.cost, .id = {}});
      owner.push_back(j);
    }
    out.assign(batch.size(), {});
    s.decide_many_at(batch, out);
    for (std::size_t b = 0; b < batch.size(); ++b) got[owner[b]].push_back({out[b], {}, {}, {}, {}});
  }
  for (std::size_t j = 0; j < traces.size(); ++j) {
    const auto want = expected_answers(traces[j]);
    if (auto diff = compare(traces[j], got[j], want, false); !diff.empty()) return diff;
  }
  return "";
}

/// run_conformance_batched with one prefix for trace j's policies and keys.
template <typename Prefix>
std::string run_conformance_batched(store& s, std::span<const trace> traces, Prefix prefix) {
  return run_conformance_batched(s, traces, prefix, prefix);
}

/// Runs `t` through `s` as one `decide_many_at` of all its steps (in order,
/// so each sees the earlier ones' admits; a report splits the batch, sent
/// alone between its parts) and compares the requests' decisions.
inline std::string run_conformance_one_batch(store& s, const trace& t, std::string_view prefix = "") {
  auto [ids, err] = define_all(s, t, prefix);
  if (!err.empty()) return t.describe() + ": define: " + err;
  std::vector<std::vector<std::string>> keys(t.steps.size());
  std::vector<std::vector<check>> checks(t.steps.size());
  std::vector<store_request> batch;
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const trace_step& st = t.steps[i];
    for (const auto& c : st.checks) keys[i].push_back(std::string(prefix) + c.key);
    for (std::size_t k = 0; k < st.checks.size(); ++k)
      checks[i].push_back({ids[st.checks[k].policy], keys[i][k], st.checks[k].cost});
    batch.push_back({.checks = checks[i], .now = st.now, .cost = st.cost, .id = {}});
  }
  std::vector<answer> got;
  std::size_t from = 0;
  const auto flush = [&](std::size_t to) {
    std::vector<store_decision> out(to - from);
    s.decide_many_at(std::span<const store_request>(batch).subspan(from, to - from), out);
    for (const auto& d : out) got.push_back({d, {}, {}, {}, {}});
    from = to;
  };
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    if (!t.steps[i].report) continue;
    flush(i);
    got.push_back({s.report_at(batch[i]), {}, {}, {}, {}});
    from = i + 1;
  }
  flush(t.steps.size());
  return compare(t, got, expected_answers(t), false);
}

/// Every algorithm a trace can start from (each plain one, and composites).
inline const algorithm all_algorithms[] = {
    algorithm::fixed_window, algorithm::sliding_log, algorithm::sliding_counter, algorithm::sliding_buckets,
    algorithm::token_bucket, algorithm::gcra,        algorithm::leaky_queue,     algorithm::quota,
    algorithm::all_of,       algorithm::any_of};

}  // namespace sluice::conformance
