// Nanoseconds per decision of every algorithm, single key, single thread.
//
// Benchmark names are the scenario names of the peers' RESULT lines
// (../shared/peers/README.md beside the checkout): GCRA takes the shared
// `1key-*` names, every other algorithm its own prefix. bench/run.sh turns
// the repetitions into RESULT lines. Scenario parameters: bench/scenarios.hpp.
#include <benchmark/benchmark.h>

#include "loops.hpp"
#include "scenarios.hpp"
#include "sluice/sluice.hpp"

namespace {

using namespace sluice_bench;

/// The cost of reading the clock alone, to read the realtime rows against.
void clock_now(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(sluice::steady_clock::now());
}

}  // namespace

// GCRA: the peers' shared scenario names.
BENCHMARK(virtual_time<&gcra_allow>)->Name("1key-allow-virtualtime");
BENCHMARK(virtual_time<&gcra_deny>)->Name("1key-deny-virtualtime");
BENCHMARK(real_time<&gcra_allow_realtime>)->Name("1key-allow-realtime");
BENCHMARK(real_time<&gcra_deny_realtime>)->Name("1key-deny-realtime");

BENCHMARK(virtual_time<&token_bucket_allow>)->Name("token-bucket-allow-virtualtime");
BENCHMARK(virtual_time<&token_bucket_deny>)->Name("token-bucket-deny-virtualtime");
BENCHMARK(real_time<&token_bucket_allow_realtime>)->Name("token-bucket-allow-realtime");
BENCHMARK(real_time<&token_bucket_deny_realtime>)->Name("token-bucket-deny-realtime");

BENCHMARK(virtual_time<&fixed_window_allow>)->Name("fixed-window-allow-virtualtime");
BENCHMARK(virtual_time<&fixed_window_deny>)->Name("fixed-window-deny-virtualtime");
BENCHMARK(virtual_time<&sliding_log_allow>)->Name("sliding-log-allow-virtualtime");
BENCHMARK(virtual_time<&sliding_log_deny>)->Name("sliding-log-deny-virtualtime");
BENCHMARK(virtual_time<&sliding_counter_allow>)->Name("sliding-counter-allow-virtualtime");
BENCHMARK(virtual_time<&sliding_counter_deny>)->Name("sliding-counter-deny-virtualtime");
BENCHMARK(virtual_time<&sliding_buckets_allow>)->Name("sliding-buckets-allow-virtualtime");
BENCHMARK(virtual_time<&sliding_buckets_deny>)->Name("sliding-buckets-deny-virtualtime");
BENCHMARK(virtual_time<&leaky_queue_allow>)->Name("leaky-queue-allow-virtualtime");
BENCHMARK(virtual_time<&leaky_queue_deny>)->Name("leaky-queue-deny-virtualtime");
BENCHMARK(virtual_time<&quota_allow>)->Name("quota-allow-virtualtime");
BENCHMARK(virtual_time<&quota_deny>)->Name("quota-deny-virtualtime");

// Run-time choice of algorithm: std::visit over any_policy.
BENCHMARK(virtual_time<&any_token_bucket_allow>)->Name("any-token-bucket-allow-virtualtime");
BENCHMARK(virtual_time<&any_token_bucket_deny>)->Name("any-token-bucket-deny-virtualtime");
BENCHMARK(virtual_time<&any_gcra_allow>)->Name("any-gcra-allow-virtualtime");
BENCHMARK(virtual_time<&any_gcra_deny>)->Name("any-gcra-deny-virtualtime");

// Composites: three parts, and 32 levels of all(...) around one GCRA.
BENCHMARK(virtual_time<&all3_allow>)->Name("all3-allow-virtualtime");
BENCHMARK(virtual_time<&all3_deny>)->Name("all3-deny-virtualtime");
BENCHMARK(virtual_time<&nest32_allow>)->Name("nest32-allow-virtualtime");
BENCHMARK(virtual_time<&nest32_deny>)->Name("nest32-deny-virtualtime");

// Calibration: the clock alone, and the loop with the cheapest decision.
BENCHMARK(clock_now)->Name("calib-steady-clock-now");
BENCHMARK(virtual_time<&always_allow_calib>)->Name("calib-always-allow-virtualtime");

BENCHMARK_MAIN();
