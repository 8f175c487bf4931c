// The cost of refunds by request id in the memory store (semantics.md,
// "Refunds"): a decision with an id keeps each check's receipt, so it now
// decides through the keyed store's multi-key path (admit_all_at) rather
// than the lock-free one-check path. This bench puts the decision with an
// id beside the one without, one check (GCRA: compact cells) and two
// checks, and times the refund itself.
//   build/dev/bench/refund_bench --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "sluice/core/gcra.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/keyed/memory.hpp"

namespace {

constexpr std::size_t n_keys = 1 << 16;

struct fixture {
  std::vector<std::string> keys;
  std::vector<std::string> ids;
  sluice::memory_store store;
  sluice::policy_id g = 0;
  sluice::policy_id f = 0;
  fixture() : keys(n_keys), ids(n_keys), store(options()) {
    for (std::size_t i = 0; i < n_keys; ++i) keys[i] = "user:" + std::to_string(i);
    g = store.define("g", sluice::parse_policy("gcra 1000000/1s burst=1000000").value()).value();
    f = store.define("f", sluice::parse_policy("fixed-window 1000000000/1d").value()).value();
  }
  static sluice::memory_store_options options() {
    sluice::memory_store_options o;
    o.keyed.auto_purge = false;
    o.max_id_bytes = std::size_t{4} << 30;
    return o;
  }
};

fixture& fix() {
  static fixture f;
  return f;
}

void run(benchmark::State& st, int checks, bool with_id, bool refund) {
  fixture& f = fix();
  std::size_t i = 0;
  std::uint64_t serial = 0;
  std::string id;
  for (auto _ : st) {
    const std::string& k = f.keys[i++ % n_keys];
    const sluice::check cs[2] = {{f.g, k}, {f.f, k}};
    if (with_id) id = "r" + std::to_string(serial++);
    const auto d = f.store.decide_at({.checks = {cs, static_cast<std::size_t>(checks)},
                                      .now = static_cast<sluice::tick>(serial),
                                      .cost = 1,
                                      .id = with_id ? std::string_view(id) : std::string_view()});
    benchmark::DoNotOptimize(d);
    if (refund) benchmark::DoNotOptimize(f.store.refund_at(id, static_cast<sluice::tick>(serial)));
  }
}

void OneCheckNoId(benchmark::State& st) { run(st, 1, false, false); }
void OneCheckId(benchmark::State& st) { run(st, 1, true, false); }
void OneCheckIdRefund(benchmark::State& st) { run(st, 1, true, true); }
void TwoChecksNoId(benchmark::State& st) { run(st, 2, false, false); }
void TwoChecksId(benchmark::State& st) { run(st, 2, true, false); }
void TwoChecksIdRefund(benchmark::State& st) { run(st, 2, true, true); }

}  // namespace

BENCHMARK(OneCheckNoId)->Iterations(400000);
BENCHMARK(OneCheckId)->Iterations(400000);
BENCHMARK(OneCheckIdRefund)->Iterations(400000);
BENCHMARK(TwoChecksNoId)->Iterations(400000);
BENCHMARK(TwoChecksId)->Iterations(400000);
BENCHMARK(TwoChecksIdRefund)->Iterations(400000);
BENCHMARK_MAIN();
