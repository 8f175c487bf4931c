// Shared by the keyed store's tests: random policies (every algorithm and
// composites of them, from the core's property-test generators), keyed
// traces, and the reference the store must equal: one core state per key,
// decided at its own now while the store holds the key's state, and at
// max(now, the shard's drop bound) while it holds none (durations counted
// from the caller's now).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "property/models.hpp"
#include "sluice/core/fresh.hpp"
#include "sluice/keyed/keyed.hpp"

namespace sluice::keyed_test {

using model::config;
using model::rng_t;
using model::spec_of;

inline std::string show(tick t) { return t == never ? std::string("never") : std::to_string(t); }

inline std::string show(const decision& d) {
  return std::string("{allowed=") + (d.allowed ? "yes" : "no") + " remaining=" + std::to_string(d.remaining) +
         " retry_after=" + show(d.retry_after) + " reset_after=" + show(d.reset_after) +
         " release_after=" + show(d.release_after) + " part=" + std::to_string(d.part) + "}";
}

/// A policy and the config its trace is drawn from (a composite's first part).
struct drawn_policy {
  any_policy policy;
  config c;
  std::string describe;
};

/// One of the ten algorithms, GCRA and the token bucket twice as often (the
/// compact, lock-free path), or (with `composites`) an all_of / any_of of
/// two or three of them.
inline drawn_policy random_policy(rng_t& g, bool composites = true, int depth = 0) {
  const int roll = static_cast<int>(g() % 100);
  if (composites && depth < 2 && roll < 20) {
    std::vector<any_policy> parts;
    config first_config;
    std::string text = roll < 10 ? "all(" : "any(";
    const std::size_t n = 2 + g() % 2;
    for (std::size_t i = 0; i < n; ++i) {
      drawn_policy part = random_policy(g, true, depth + 1);
      text += (i ? ", " : "") + part.describe;
      if (i == 0) first_config = part.c;
      parts.push_back(std::move(part.policy));
    }
    any_policy p = roll < 10 ? any_policy{all_of::make(std::move(parts)).value()}
                             : any_policy{any_of::make(std::move(parts)).value()};
    return {std::move(p), first_config, text + ")"};
  }
  const algorithm algos[] = {algorithm::fixed_window,
                             algorithm::sliding_log,
                             algorithm::sliding_counter,
                             algorithm::sliding_buckets,
                             algorithm::token_bucket,
                             algorithm::gcra,
                             algorithm::leaky_queue,
                             algorithm::quota,
                             algorithm::always_allow,
                             algorithm::always_deny,
                             algorithm::gcra,
                             algorithm::token_bucket,
                             algorithm::gcra,
                             algorithm::token_bucket};
  const algorithm a = algos[g() % std::size(algos)];
  const config c = model::random_config(a, g);
  return {make_policy(spec_of(c)).value(), c, c.describe()};
}

/// One request of a keyed trace.
struct trace_request {
  std::string key;
  tick now;
  std::int64_t cost;
};

/// A trace over `keys` keys ("k0", "k1", ...) with the core generators'
/// times and costs (clock steps back when `back`).
inline std::vector<trace_request> keyed_trace(const config& c, rng_t& g, std::size_t length, std::size_t keys,
                                              bool back) {
  const auto plain = model::random_trace(c, g, length, back);
  std::vector<trace_request> out;
  out.reserve(plain.size());
  for (const auto& q : plain) out.push_back({"k" + std::to_string(g() % keys), q.now, q.cost});
  return out;
}

/// A decision taken at `eff` with its durations counted from `now` again:
/// what the store answers for a request at `now` when its floor is ahead.
inline decision rebased(decision d, tick now, tick eff) {
  if (eff == now) return d;
  const detail::i128 delta = static_cast<detail::i128>(eff) - now;
  for (tick* v : {&d.retry_after, &d.reset_after, &d.release_after}) {
    if (*v == 0 || *v == never) continue;
    const detail::i128 x = *v + delta;
    *v = x >= detail::i64_max ? never : static_cast<tick>(x);
  }
  return d;
}

/// The instant below which the store reads a request on `key`: its shard's
/// drop bound while it holds no state for the key (semantics.md, "Keys"),
/// none (INT64_MIN) while it does. Read before the request is decided.
inline tick floor_for(const keyed_limiter& store, std::string_view key) {
  return store.state_of(key) ? std::numeric_limits<tick>::min() : store.drop_bound(key);
}

/// The reference: one core state per key, never dropped.
class reference {
 public:
  explicit reference(any_policy p) : p_(std::move(p)), fresh_(fresh_state(p_)) {}

  /// The decision the store must give for `key` at `now` when it reads the
  /// request as at least `floor` (floor_for).
  decision decide_at(const std::string& key, tick now, std::int64_t cost, tick floor) {
    const tick eff = std::max(now, floor);
    auto it = states_.try_emplace(key, fresh_).first;
    return rebased(decide(p_, it->second, eff, cost), now, eff);
  }
  /// The state held for `key` (fresh when never admitted).
  any_state& state(const std::string& key) { return states_.try_emplace(key, fresh_).first->second; }
  const any_policy& policy() const { return p_; }
  const any_state& fresh() const { return fresh_; }
  std::map<std::string, any_state>& all() { return states_; }

 private:
  any_policy p_;
  any_state fresh_;
  std::map<std::string, any_state> states_;
};

}  // namespace sluice::keyed_test
