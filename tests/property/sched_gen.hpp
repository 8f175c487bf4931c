// Random small policies and helpers shared by the scheduling property tests
// (next_allowed_at, reservations and refunds, reconfiguration, the shaper).
// Parameters are kept small so that brute force over time stays cheap.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "sluice/sluice.hpp"

namespace sluice::sched_test {

using rng_t = std::mt19937_64;

inline std::int64_t pick(rng_t& g, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(hi - lo + 1));
}

/// The single algorithms (composites are built from them).
inline constexpr algorithm leaves[] = {
    algorithm::fixed_window, algorithm::sliding_log, algorithm::sliding_counter, algorithm::sliding_buckets,
    algorithm::token_bucket, algorithm::gcra,        algorithm::leaky_queue,     algorithm::quota,
};

/// A random policy of algorithm `a` with small parameters; `zero_ok` lets
/// the limit be 0 now and then.
inline any_policy random_leaf(algorithm a, rng_t& g, bool zero_ok = true) {
  const std::int64_t low = zero_ok && pick(g, 0, 15) == 0 ? 0 : 1;
  const auto ok = [](auto r) { return any_policy{std::move(r).value()}; };
  switch (a) {
    case algorithm::fixed_window: {
      const tick w = pick(g, 1, 20);
      return ok(fixed_window::make(rate{pick(g, low, 5), w}, pick(g, 0, w)));
    }
    case algorithm::sliding_log:
      return ok(sliding_log::make(rate{pick(g, low, 5), pick(g, 1, 20)}));
    case algorithm::sliding_counter:
      return ok(sliding_counter::make(rate{pick(g, low, 5), pick(g, 1, 20)}));
    case algorithm::sliding_buckets: {
      const std::int64_t n = pick(g, 1, 5);
      return ok(sliding_buckets::make(rate{pick(g, low, 6), n * pick(g, 1, 5)}, n));
    }
    case algorithm::token_bucket:
      return ok(token_bucket::make(rate{pick(g, low, 4), pick(g, 1, 20)}, pick(g, 1, 5)));
    case algorithm::gcra:
      return ok(gcra::make(rate{pick(g, low, 4), pick(g, 1, 20)}, pick(g, 1, 5)));
    case algorithm::leaky_queue:
      return ok(leaky_queue::make(rate{pick(g, low, 3), pick(g, 1, 20)}, pick(g, 1, 5)));
    case algorithm::quota:
      return ok(quota::make(pick(g, 0, 12)));
    case algorithm::always_allow:
      return any_policy{always_allow{}};
    default:
      return any_policy{always_deny{}};
  }
}

/// A random composite of `parts` random leaves (now and then a nested one).
inline any_policy random_composite(bool all, rng_t& g, int depth = 0) {
  std::vector<any_policy> parts;
  const auto n = pick(g, 1, 3);
  for (std::int64_t i = 0; i < n; ++i) {
    if (depth == 0 && pick(g, 0, 5) == 0) {
      parts.push_back(random_composite(pick(g, 0, 1) == 0, g, depth + 1));
    } else if (pick(g, 0, 12) == 0) {
      parts.push_back(pick(g, 0, 1) == 0 ? any_policy{always_allow{}} : any_policy{always_deny{}});
    } else {
      parts.push_back(random_leaf(leaves[g() % std::size(leaves)], g));
    }
  }
  if (all) return any_policy{all_of::make(std::move(parts)).value()};
  return any_policy{any_of::make(std::move(parts)).value()};
}

/// A leaf or a composite, by index: 0–7 the leaves, 8 all_of, 9 any_of.
inline constexpr int kinds = 10;
inline any_policy random_policy(int kind, rng_t& g) {
  if (kind < 8) return random_leaf(leaves[kind], g);
  return random_composite(kind == 8, g);
}

inline std::string kind_name(int kind) {
  if (kind < 8) return std::string(name_of(leaves[kind]));
  return kind == 8 ? "all" : "any";
}

/// `s` seeded per (test, kind, seed) so every test draws its own stream.
inline rng_t seeded(std::uint64_t test, int kind, std::uint64_t seed) {
  std::seed_seq seq{test, static_cast<std::uint64_t>(kind), seed};
  return rng_t(seq);
}

}  // namespace sluice::sched_test
