// The shared conformance suite's traces as the Redis store takes them
// (tests/conformance/traces.hpp): quantities within its exact range, and for
// pipelined runs few sliding buckets. Used by the single-server and the
// cluster runs, so both decide the same traces.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "conformance/traces.hpp"
#include "redis/store/protocol.hpp"
#include "redis/store_support.hpp"

namespace sluice::redis_test {

/// The most sub-windows a sliding-buckets policy of a pipelined run may
/// have: its state is N numbers, read and written whole on every decision,
/// so the suite's draws up to 65,536 would take minutes (the one-call-at-a-
/// time tests keep them).
inline constexpr std::int64_t pipelined_buckets = 64;

/// Whether the Redis store takes every policy of `t` (and, for a pipelined
/// run, whether its buckets are few).
inline bool in_range(const conformance::trace& t, bool pipelined) {
  for (const auto& p : t.policies) {
    if (!redis::plan::make(p.policy).ok()) return false;
    if (pipelined && !buckets_at_most(p.policy, pipelined_buckets)) return false;
  }
  return true;
}

inline conformance::trace_options redis_trace_options() {
  conformance::trace_options o;
  o.max_quantity = std::int64_t{1} << 52;
  o.length = 10;
  return o;
}

/// `n` in-range traces of `a` (seeds from `seed0`), and how many were refused.
inline std::vector<conformance::trace> draw_traces(algorithm a, std::size_t n, std::uint64_t seed0,
                                                   std::size_t& refused, bool pipelined) {
  std::vector<conformance::trace> out;
  refused = 0;
  for (std::uint64_t seed = seed0; out.size() < n && seed < seed0 + 4 * n; ++seed) {
    auto t = conformance::make_trace(a, seed, redis_trace_options());
    if (in_range(t, pipelined))
      out.push_back(std::move(t));
    else
      ++refused;
  }
  return out;
}

/// How many valid steps of `ts` are requests of several checks at
/// different costs.
inline std::size_t mixed_cost_steps(std::span<const conformance::trace> ts) {
  std::size_t n = 0;
  for (const auto& t : ts)
    for (const auto& s : t.steps) {
      if (conformance::bad_request(s) || s.checks.size() < 2) continue;
      for (const auto& c : s.checks)
        if (conformance::cost_of(s, c) != conformance::cost_of(s, s.checks[0])) {
          ++n;
          break;
        }
    }
  return n;
}

/// Runs `traces` through `s` in groups of 500 (run_conformance_batched),
/// trace j's policies under `policy_prefix(j)` and keys under
/// `key_prefix(j)`; fails the test on each group's first difference and
/// returns how many traces agree.
template <typename PolicyPrefix, typename KeyPrefix>
std::size_t run_in_groups(store& s, const std::vector<conformance::trace>& traces, PolicyPrefix policy_prefix,
                          KeyPrefix key_prefix) {
  constexpr std::size_t group = 500;
  std::size_t agree = 0;
  for (std::size_t first = 0; first < traces.size(); first += group) {
    const std::span<const conformance::trace> part(traces.data() + first, std::min(group, traces.size() - first));
    const std::string diff = conformance::run_conformance_batched(
        s, part, [&](std::size_t j) { return policy_prefix(first + j); },
        [&](std::size_t j) { return key_prefix(first + j); });
    EXPECT_EQ(diff, "");
    if (diff.empty()) agree += part.size();
  }
  return agree;
}

}  // namespace sluice::redis_test
