// The measured loops, shared by decide_bench (Google Benchmark) and
// decide_ir (callgrind), so that both measure the same code.
//
// The shape is the real one: a policy built once with make(), a state, and
// decide(policy, state, now, 1) in the loop. `now` changes on every call and
// goes through DoNotOptimize, so no part of a decision can be hoisted out of
// the loop or strength-reduced across iterations; the state lives in memory
// (its address escapes), as it would in a limiter object or a keyed store.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "scenarios.hpp"
#include "sluice/sluice.hpp"

namespace sluice_bench {

// A label, not a counter: the CSV reporter wants every counter in every row.
inline void label(benchmark::State& st, std::int64_t allowed) {
  st.SetLabel("allowed=" + std::to_string(allowed) + "/" + std::to_string(st.iterations()));
}

/// Explicit time: now = first, first + step, first + 2·step, ...
template <auto Make>
void virtual_time(benchmark::State& st) {
  auto sc = Make();
  benchmark::DoNotOptimize(&sc.state);  // the state's address escapes: it stays in memory
  tick now = sc.now;
  const tick step = sc.step;
  std::int64_t allowed = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(now);  // opaque: the compiler cannot precompute now·L
    const sluice::decision d = decide(sc.policy, sc.state, now, 1);
    benchmark::DoNotOptimize(d);
    allowed += d.allowed;
    now += step;
  }
  label(st, allowed);
}

/// Real time: every decision reads sluice::steady_clock.
template <auto Make>
void real_time(benchmark::State& st) {
  auto sc = Make();
  benchmark::DoNotOptimize(&sc.state);
  std::int64_t allowed = 0;
  for (auto _ : st) {
    const sluice::decision d = decide(sc.policy, sc.state, sluice::steady_clock::now(), 1);
    benchmark::DoNotOptimize(d);
    allowed += d.allowed;
  }
  label(st, allowed);
}

/// virtual_time's loop without Google Benchmark, `n` times (for callgrind:
/// toggle collection on `*run_loop*`); returns the number of admits.
template <typename Scenario>
[[gnu::noinline]] std::int64_t run_loop(Scenario& sc, std::int64_t n) {
  tick now = sc.now;
  const tick step = sc.step;
  std::int64_t allowed = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    benchmark::DoNotOptimize(now);
    const sluice::decision d = decide(sc.policy, sc.state, now, 1);
    benchmark::DoNotOptimize(d);
    allowed += d.allowed;
    now += step;
  }
  return allowed;
}

template <auto Make>
std::int64_t run_n(std::int64_t n) {
  auto sc = Make();
  benchmark::DoNotOptimize(&sc.state);
  return run_loop(sc, n);
}

inline auto any_token_bucket_allow() { return any_allow(sluice::algorithm::token_bucket); }
inline auto any_token_bucket_deny() { return any_deny(sluice::algorithm::token_bucket); }
inline auto any_gcra_allow() { return any_allow(sluice::algorithm::gcra); }
inline auto any_gcra_deny() { return any_deny(sluice::algorithm::gcra); }

}  // namespace sluice_bench
