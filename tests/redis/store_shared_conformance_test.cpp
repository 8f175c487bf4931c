// The shared store conformance suite (tests/conformance/traces.hpp)
// instantiated for the Redis store: 10,000 traces per algorithm and per
// composite (several keys, requests of one and of several checks, checks
// with costs of their own mixed in one request, clock steps back),
// pipelined through decide_many_at, compared with the
// contract's decisions; and a few hundred per algorithm one decide_at at a
// time with every check's own decision. Quantities are drawn within the
// Redis store's exact range (a trace the store refuses at define is drawn
// again, and counted).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "conformance/traces.hpp"
#include "redis/protocol.hpp"
#include "redis/store_support.hpp"

namespace sluice::redis_test {
namespace {

/// The most sub-windows a sliding-buckets policy of the pipelined run may
/// have: its state is N numbers, read and written whole on every decision,
/// so the suite's draws up to 65,536 would take minutes (the one-call-at-a-
/// time test keeps them).
constexpr std::int64_t pipelined_buckets = 64;

bool few_buckets(const any_policy& p) {
  if (const auto* b = std::get_if<sliding_buckets>(&p)) return b->buckets() <= pipelined_buckets;
  if (const auto* a = std::get_if<all_of>(&p)) return std::all_of(a->parts().begin(), a->parts().end(), few_buckets);
  if (const auto* o = std::get_if<any_of>(&p)) return std::all_of(o->parts().begin(), o->parts().end(), few_buckets);
  return true;
}

/// Whether the Redis store takes every policy of `t` (and, for the
/// pipelined run, whether its buckets are few).
bool in_range(const conformance::trace& t, bool pipelined) {
  for (const auto& p : t.policies) {
    if (!redis::plan::make(p.policy).ok()) return false;
    if (pipelined && !few_buckets(p.policy)) return false;
  }
  return true;
}

conformance::trace_options options() {
  conformance::trace_options o;
  o.max_quantity = std::int64_t{1} << 52;
  o.length = 10;
  return o;
}

/// 10,000 in-range traces of `a` (seeds from `seed0`), and how many were refused.
std::vector<conformance::trace> draw_traces(algorithm a, std::size_t n, std::uint64_t seed0, std::size_t& refused,
                                            bool pipelined) {
  std::vector<conformance::trace> out;
  refused = 0;
  for (std::uint64_t seed = seed0; out.size() < n && seed < seed0 + 4 * n; ++seed) {
    auto t = conformance::make_trace(a, seed, options());
    if (in_range(t, pipelined))
      out.push_back(std::move(t));
    else
      ++refused;
  }
  return out;
}

/// How many valid steps of `ts` are requests of several checks at
/// different costs.
std::size_t mixed_cost_steps(std::span<const conformance::trace> ts) {
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

class RedisSharedConformance : public ::testing::TestWithParam<algorithm> {};

TEST_P(RedisSharedConformance, TenThousandTracesPipelined) {
  redis_store_options o;
  o.command_timeout = std::chrono::seconds(10);
  auto st = open_store(o);
  ASSERT_TRUE(st);
  constexpr std::size_t n = 10'000;
  std::size_t refused = 0;
  const auto traces = draw_traces(GetParam(), n, 1, refused, true);
  ASSERT_EQ(traces.size(), n);
  std::size_t decisions = 0;
  for (const auto& t : traces) decisions += t.steps.size();
  const std::size_t mixed = mixed_cost_steps(traces);
  EXPECT_GT(mixed, 1000U);
  const auto t0 = std::chrono::steady_clock::now();
  constexpr std::size_t group = 500;
  std::size_t agree = 0;
  for (std::size_t first = 0; first < n; first += group) {
    const std::span<const conformance::trace> part(traces.data() + first, std::min(group, n - first));
    const std::string diff = conformance::run_conformance_batched(
        *st, part, [&](std::size_t j) { return "c" + std::to_string(first + j) + ":"; });
    EXPECT_EQ(diff, "");
    if (diff.empty()) agree += part.size();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "shared conformance %-16s traces %zu/%zu agree (%zu decisions, %zu of several checks at mixed costs; %zu "
      "redrawn: past the exact range, or more than 64 buckets), %.1f s\n",
      std::string(name_of(GetParam())).c_str(), agree, n, decisions, mixed, refused, secs);
  EXPECT_EQ(st->redis_stats().mismatches, 0U);
  EXPECT_EQ(st->stats().store_failures, 0U);
}

TEST_P(RedisSharedConformance, PerCheckDecisionsOneCallAtATime) {
  redis_store_options o;
  o.command_timeout = std::chrono::seconds(10);  // 65,536-bucket states on a loaded machine
  auto st = open_store(o);
  ASSERT_TRUE(st);
  std::size_t refused = 0;
  const auto traces = draw_traces(GetParam(), 150, 1'000'000, refused, false);
  EXPECT_GT(mixed_cost_steps(traces), 15U);
  for (std::size_t j = 0; j < traces.size(); ++j)
    ASSERT_EQ(conformance::run_conformance(*st, traces[j], "q" + std::to_string(j) + ":"), "");
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, RedisSharedConformance, ::testing::ValuesIn(conformance::all_algorithms),
                         [](const ::testing::TestParamInfo<algorithm>& i) {
                           std::string n(name_of(i.param));
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace sluice::redis_test
