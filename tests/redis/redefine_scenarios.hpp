// Scenarios for the Redis store's redefinition tests: the shared
// conformance traces (tests/conformance/traces.hpp) with one or two
// redefinitions of their policies (same algorithm or composite shape, new
// parameters) at drawn steps and instants, and a runner that decides one
// through any store one call at a time. Used against one server
// (store_redefine_test.cpp) and a cluster (cluster/redefine_test.cpp).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "conformance/traces.hpp"
#include "redis/store/protocol.hpp"
#include "redis/store_support.hpp"
#include "sluice/keyed/memory.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice::redis_test::redefine {

using conformance::answer;
using conformance::trace;

/// What a change does.
enum class op : std::uint8_t {
  redefine,         ///< the policy becomes `to` (define_at)
  set_override,     ///< `key` of the policy gets the override `to` (set_override_at)
  delete_override,  ///< `key` of the policy loses its override (delete_override_at)
};

/// One redefinition (or override change): before step `step`, policy
/// `policy` becomes `to`, carried over at `at`.
struct change {
  std::size_t step = 0;
  std::size_t policy = 0;
  any_policy to = any_policy{always_allow{}};
  tick at = 0;
  op what = op::redefine;
  std::string key;  ///< an override's key (the trace's, before the key prefix)
};

/// A trace and the redefinitions made during it.
struct scenario {
  trace t;
  std::vector<change> changes;
};

inline conformance::trace_options options() {
  conformance::trace_options o;
  o.max_quantity = std::int64_t{1} << 52;
  o.length = 12;
  return o;
}

/// A policy of `p`'s shape (the same algorithm in every place) with fresh
/// parameters.
inline any_policy like(const any_policy& p, model::rng_t& g) {
  if (const auto* a = std::get_if<all_of>(&p)) {
    std::vector<any_policy> parts;
    for (const auto& part : a->parts()) parts.push_back(like(part, g));
    return any_policy{all_of::make(std::move(parts)).value()};
  }
  if (const auto* o = std::get_if<any_of>(&p)) {
    std::vector<any_policy> parts;
    for (const auto& part : o->parts()) parts.push_back(like(part, g));
    return any_policy{any_of::make(std::move(parts)).value()};
  }
  if (std::holds_alternative<always_allow>(p) || std::holds_alternative<always_deny>(p)) return p;
  return conformance::detail_::make_policy_of(algorithm_of(p), g, options()).first.policy;
}

inline bool in_range(const any_policy& p, bool pipelined) {
  return redis::plan::make(p).ok() && buckets_at_most(p, pipelined ? 64 : 4096);
}

/// A scenario for `a` from `seed`, within the Redis store's range; nullopt
/// when the draw leaves it (the caller draws again).
inline std::optional<scenario> make_scenario(algorithm a, std::uint64_t seed, bool pipelined) {
  scenario s;
  s.t = conformance::make_trace(a, seed, options());
  for (const auto& p : s.t.policies)
    if (!in_range(p.policy, pipelined)) return std::nullopt;
  if (s.t.steps.size() < 2) return std::nullopt;
  model::rng_t g(model::mix(seed, a) ^ 0x7edef1e5ULL);
  std::vector<any_policy> current;
  std::vector<std::vector<std::string>> seen;  // every configuration each policy has had
  for (const auto& p : s.t.policies) {
    current.push_back(p.policy);
    seen.push_back({encode_policy(p.policy)});
  }
  const std::size_t n = 1 + g() % 2;  // one or two redefinitions
  for (std::size_t k = 0; k < n; ++k) {
    change c;
    c.step = 1 + g() % (s.t.steps.size() - 1);
    c.policy = model::chance(g, 70) ? 0 : g() % s.t.policies.size();
    c.to = like(current[c.policy], g);
    // A configuration the policy had before is not drawn: a value written
    // then is read as that configuration's again (docs/redis.md,
    // "Redefining a policy"), where the memory store carries it through the
    // configurations between.
    const std::string bytes = encode_policy(c.to);
    auto& had = seen[c.policy];
    if (!in_range(c.to, pipelined) || std::find(had.begin(), had.end(), bytes) != had.end()) return std::nullopt;
    had.push_back(bytes);
    // At the step's instant, or a little before or after it (a clock that
    // stepped, a definition that raced a request).
    const tick t = s.t.steps[c.step].now;
    const int roll = static_cast<int>(g() % 10);
    const tick delta = static_cast<tick>(g() % 1000);
    c.at = roll < 6 ? t
                    : (roll < 8 ? (t > detail::i64_min + delta ? t - delta : t)
                                : (t < detail::i64_max - delta ? t + delta : t));
    current[c.policy] = c.to;
    s.changes.push_back(std::move(c));
  }
  std::stable_sort(s.changes.begin(), s.changes.end(),
                   [](const change& x, const change& y) { return x.step < y.step; });
  // Two changes of one policy at one step: keep the order drawn (the later
  // carries the earlier over), which stable_sort kept.
  return s;
}

/// An instant at step `step` of `t`, or a little before it (a change that
/// raced a request). Not after it: a change at an instant later than the
/// decisions after it (a clock that steps back across the change) is the
/// one case the stores may answer differently (docs/redis.md, "Overrides").
inline tick near_step(const trace& t, std::size_t step, model::rng_t& g) {
  const tick at = t.steps[step].now;
  const tick delta = static_cast<tick>(g() % 1000);
  return g() % 10 < 6 || at <= detail::i64_min + delta ? at : at - delta;
}

/// Whether `p` keeps a state (an override needs one in the Redis store).
inline bool keeps_state(const any_policy& p) {
  auto made = redis::plan::make(p);
  return made && !made.value().leaves().empty();
}

/// A scenario of overrides for `a` from `seed`: the trace's keys get
/// overrides (of the configured shape, fresh parameters), replaced and
/// deleted at drawn steps and instants, sometimes beside a redefinition of
/// their policy; nullopt when the draw leaves the Redis store's range.
inline std::optional<scenario> make_override_scenario(algorithm a, std::uint64_t seed, bool pipelined) {
  scenario s;
  s.t = conformance::make_trace(a, seed, options());
  for (const auto& p : s.t.policies)
    if (!in_range(p.policy, pipelined)) return std::nullopt;
  if (s.t.steps.size() < 3) return std::nullopt;
  model::rng_t g(model::mix(seed, a) ^ 0x0e11a1deULL);
  std::vector<any_policy> current;
  std::vector<std::vector<std::string>> seen;
  for (const auto& p : s.t.policies) {
    current.push_back(p.policy);
    seen.push_back({encode_policy(p.policy)});
  }
  const std::size_t n = 2 + g() % 3;
  for (std::size_t k = 0; k < n; ++k) {
    change c;
    c.step = 1 + g() % (s.t.steps.size() - 1);
    // A key some step checks (with its policy), most often the first one.
    const auto& pick = s.t.steps[model::chance(g, 60) ? 0 : g() % s.t.steps.size()];
    const auto& ch = pick.checks[g() % pick.checks.size()];
    c.policy = ch.policy;
    c.key = ch.key;
    c.at = near_step(s.t, c.step, g);
    // A policy without a state has no override in the Redis store: a
    // delete there changes nothing in either store.
    const int roll = keeps_state(current[c.policy]) ? static_cast<int>(g() % 10) : 6;
    if (roll < 6) {
      c.what = op::set_override;
      c.to = like(current[c.policy], g);
      if (!in_range(c.to, pipelined) || !keeps_state(c.to)) return std::nullopt;
    } else if (roll < 9) {
      c.what = op::delete_override;
    } else {
      c.what = op::redefine;
      c.to = like(current[c.policy], g);
      const std::string bytes = encode_policy(c.to);
      auto& had = seen[c.policy];
      if (!in_range(c.to, pipelined) || std::find(had.begin(), had.end(), bytes) != had.end()) return std::nullopt;
      had.push_back(bytes);
      current[c.policy] = c.to;
    }
    s.changes.push_back(std::move(c));
  }
  std::stable_sort(s.changes.begin(), s.changes.end(),
                   [](const change& x, const change& y) { return x.step < y.step; });
  // Every change of one policy in the order of its steps: instants never
  // go back between them (a carry-over at an instant before the last one
  // is not a rule either store promises to take the same way).
  for (std::size_t k = 1; k < s.changes.size(); ++k) s.changes[k].at = std::max(s.changes[k].at, s.changes[k - 1].at);
  // A later step on an overridden key at an instant before its change (a
  // clock stepping back across it) is the case docs/redis.md ("Overrides")
  // leaves open: not drawn.
  for (const change& c : s.changes) {
    if (c.what == op::redefine) continue;
    for (std::size_t i = c.step; i < s.t.steps.size(); ++i)
      for (const auto& ch : s.t.steps[i].checks)
        if (ch.policy == c.policy && ch.key == c.key && s.t.steps[i].now < c.at) return std::nullopt;
  }
  return s;
}

/// Applies change `c` to `st` (ids: the trace's policies in `st`; `kp`:
/// the key prefix); the error, empty when none.
template <typename Store>
std::string apply(Store& st, const change& c, const trace& t, const std::vector<policy_id>& ids,
                  const std::string& prefix, const std::string& kp) {
  switch (c.what) {
    case op::redefine:
      if (const auto r = st.define_at(prefix + t.policies[c.policy].name, c.to, c.at); !r)
        return "define_at: " + r.err().what();
      return {};
    case op::set_override:
      if (const auto r = st.set_override_at(ids[c.policy], kp + c.key, c.to, c.at); !r)
        return "set_override_at: " + r.err().what();
      return {};
    case op::delete_override:
      if (const auto r = st.delete_override_at(ids[c.policy], kp + c.key, c.at); !r)
        return "delete_override_at: " + r.err().what();
      return {};
  }
  return {};
}

/// The scenario's redefinitions and both stores' answers, for a failure.
inline std::string explain(const scenario& sc, const std::vector<answer>& got, const std::vector<answer>& want) {
  std::string out;
  for (const auto& c : sc.changes)
    out += "\n  before step " + std::to_string(c.step) + ": p" + std::to_string(c.policy) +
           (c.what == op::redefine       ? " := "
            : c.what == op::set_override ? " key " + c.key + " overridden by "
                                         : " key " + c.key + " override deleted") +
           (c.what == op::delete_override ? std::string() : describe_policy(c.to)) + " at " + std::to_string(c.at);
  for (std::size_t i = 0; i < sc.t.steps.size() && i < got.size() && i < want.size(); ++i)
    out += "\n  step " + std::to_string(i) + " " + conformance::show(sc.t.steps[i]) + ": redis " +
           conformance::show(got[i].d.d) + " " + std::string(name_of(got[i].d.from)) + ", memory " +
           conformance::show(want[i].d.d) + " " + std::string(name_of(want[i].d.from));
  return out;
}

/// The memory store that decides exactly as one limiter per key (no purge).
inline std::unique_ptr<memory_store> exact_memory_store() {
  memory_store_options o;
  o.keyed.auto_purge = false;
  o.keyed.shards = 1;
  o.keyed.hash_seed = 7;
  o.max_policies = 1 << 16;
  return std::make_unique<memory_store>(o);
}

/// Whether `e` is the Redis store's refusal of an override change whose
/// carried state is outside its library's exact ranges (docs/redis.md,
/// "Overrides"): nothing changed there, so the memory store is not asked
/// either.
inline bool cannot_hold(const std::string& e) {
  return e.find("outside the Redis library's exact ranges") != std::string::npos;
}

/// Runs `sc` one call at a time; `define_at` redefines in the store under
/// test. `refused` (when given): per change, whether the store refused it
/// as `cannot_hold`; a store given one that is already filled skips those
/// changes, one that is empty fills it. `fell_back` (a Redis store): per
/// change, whether it wrote a conservative fallback state
/// (`redis_stats().override_fallbacks` grew).
template <typename Store>
std::vector<answer> run_one_by_one(Store& st, const scenario& sc, const std::string& prefix, std::string& err,
                                   const std::string& key_prefix = {}, bool with_ids = false,
                                   std::vector<bool>* refused = nullptr, std::vector<bool>* fell_back = nullptr) {
  const bool record = refused != nullptr && refused->empty();
  if (record) refused->assign(sc.changes.size(), false);
  if (fell_back != nullptr) fell_back->assign(sc.changes.size(), false);
  const std::string& kp = key_prefix.empty() ? prefix : key_prefix;
  const auto [ids, e] = conformance::define_all(st, sc.t, prefix);
  if (!e.empty()) {
    err = e;
    return {};
  }
  std::vector<answer> out;
  std::size_t next = 0;
  for (std::size_t i = 0; i < sc.t.steps.size(); ++i) {
    for (; next < sc.changes.size() && sc.changes[next].step == i; ++next) {
      if (refused != nullptr && !record && (*refused)[next]) continue;
      std::uint64_t fallbacks = 0;
      if constexpr (requires { st.redis_stats(); }) fallbacks = st.redis_stats().override_fallbacks;
      err = apply(st, sc.changes[next], sc.t, ids, prefix, kp);
      if constexpr (requires { st.redis_stats(); })
        if (fell_back != nullptr) (*fell_back)[next] = st.redis_stats().override_fallbacks > fallbacks;
      if (record && cannot_hold(err)) {
        (*refused)[next] = true;
        err.clear();
      }
      if (!err.empty()) return {};
    }
    const auto& step = sc.t.steps[i];
    std::vector<std::string> keys;
    std::vector<check> checks;
    for (const auto& c : step.checks) keys.push_back(kp + c.key);
    for (std::size_t k = 0; k < step.checks.size(); ++k)
      checks.push_back({ids[step.checks[k].policy], keys[k], step.checks[k].cost});
    // With ids: every third step carries one (unique: a first decision, its
    // record written in the same call or compare-and-set).
    const std::string id = with_ids && i % 3 == 0 ? kp + "id" + std::to_string(i) : std::string();
    answer a;
    a.per_check.resize(checks.size());
    a.d = st.decide_at({.checks = checks, .now = step.now, .cost = step.cost, .id = id}, a.per_check);
    out.push_back(std::move(a));
  }
  return out;
}

/// The step of the first change that carried the conservative fallback
/// (`fell_back`, from run_one_by_one), or the trace's length: a Redis store
/// decides as the memory store up to there, and is stricter from there
/// (docs/redis.md, "Overrides").
inline std::size_t first_fallback_step(const scenario& sc, const std::vector<bool>& fell_back, std::size_t steps) {
  const auto first = std::find(fell_back.begin(), fell_back.end(), true);
  return first == fell_back.end() ? steps : sc.changes[static_cast<std::size_t>(first - fell_back.begin())].step;
}

/// conformance::compare over the first `upto` steps only.
inline std::string compare_head(const scenario& sc, const std::vector<answer>& got, const std::vector<answer>& want,
                                std::size_t upto) {
  trace head = sc.t;
  head.steps.resize(upto);
  const std::vector<answer> g(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(upto));
  const std::vector<answer> w(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(upto));
  return conformance::compare(head, g, w, true);
}

inline std::vector<scenario> draw(algorithm a, std::size_t n, std::uint64_t seed0, bool pipelined) {
  std::vector<scenario> out;
  for (std::uint64_t seed = seed0; out.size() < n && seed < seed0 + 20 * n; ++seed)
    if (auto s = make_scenario(a, seed, pipelined)) out.push_back(std::move(*s));
  return out;
}

/// `n` override scenarios (make_override_scenario).
inline std::vector<scenario> draw_overrides(algorithm a, std::size_t n, std::uint64_t seed0, bool pipelined) {
  std::vector<scenario> out;
  for (std::uint64_t seed = seed0; out.size() < n && seed < seed0 + 20 * n; ++seed)
    if (auto s = make_override_scenario(a, seed, pipelined)) out.push_back(std::move(*s));
  return out;
}

}  // namespace sluice::redis_test::redefine
