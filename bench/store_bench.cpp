// What the store interface costs the in-process keyed store (issue 10: "its
// 1M-key rows through the interface within 5% of the direct calls in the
// same run"). One memory_store holds 1M keys under one GCRA policy
// (100/s burst 10, the keyed bench's); the same table is revisited in
// shuffled order through `store&` (decide_at, decide, decide_many_at) and
// directly through its keyed_limiter (try_acquire_at, try_acquire,
// try_acquire_many_at), the two alternating within each repetition so both
// see the same machine. Prints the peers' RESULT lines after Google
// Benchmark's report, and the ratios.
//
//   store_bench                 RUNS=5 repetitions
// Env: RUNS, KEYS (default 1000000), BATCH (requests per batch, default 64).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "sluice/keyed.hpp"
#include "sluice/store/memory.hpp"

namespace {

using sluice::decision;
using clk = std::chrono::steady_clock;

std::size_t env_size(const char* name, std::size_t dflt) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : dflt;
}

const std::size_t n_keys = env_size("KEYS", 1'000'000);
const std::size_t batch = std::max<std::size_t>(env_size("BATCH", 64), 1);

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

/// 1M keys ("user:0", ...) in one memory store, and a shuffled revisit order.
struct fixture {
  std::vector<std::string> keys;
  std::vector<std::uint32_t> order;
  std::unique_ptr<sluice::memory_store> store;
  sluice::policy_id id = 0;

  fixture() : keys(n_keys), order(n_keys) {
    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = "user:" + std::to_string(i);
    std::iota(order.begin(), order.end(), 0U);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
    sluice::memory_store_options o;
    o.keyed = {.auto_purge = false, .hash_seed = 7};
    store = std::make_unique<sluice::memory_store>(o);
    id = store->define("bench", sluice::gcra::make({100, 1'000'000'000}, 10).value()).value();
    const sluice::tick t = sluice::steady_clock::now();
    for (const auto& k : keys) {
      const sluice::check c{id, k};
      benchmark::DoNotOptimize(store->decide_at({.checks = {&c, 1}, .now = t, .cost = 1, .id = {}}));
    }
  }
};

fixture& fix() {
  static fixture f;
  return f;
}

/// ns per decision of one shuffled pass.
template <typename F>
double pass(F&& decide_one) {
  const auto& f = fix();
  std::int64_t allowed = 0;
  const auto t0 = clk::now();
  for (const std::uint32_t i : f.order) allowed += decide_one(f.keys[i]) ? 1 : 0;
  const double s = seconds_since(t0);
  benchmark::DoNotOptimize(allowed);
  return s * 1e9 / static_cast<double>(f.order.size());
}

void Store1M(benchmark::State& st) {
  fixture& f = fix();
  sluice::store& s = *f.store;  // through the interface (a virtual call)
  double total = 0;
  for (auto _ : st) {
    f.store->with_keyed(f.id, [&](sluice::keyed_limiter& k) {
      sluice::tick at = sluice::steady_clock::now();
      // Each pair in both orders, so neither side always runs second.
      const double direct_at_1 = pass([&](const std::string& key) { return k.try_acquire_at(key, at += 10).allowed; });
      const double store_at_1 = pass([&](const std::string& key) {
        const sluice::check c{f.id, key};
        return s.decide_at({.checks = {&c, 1}, .now = at += 10, .cost = 1, .id = {}}).d.allowed;
      });
      const double store_at_2 = pass([&](const std::string& key) {
        const sluice::check c{f.id, key};
        return s.decide_at({.checks = {&c, 1}, .now = at += 10, .cost = 1, .id = {}}).d.allowed;
      });
      const double direct_at_2 = pass([&](const std::string& key) { return k.try_acquire_at(key, at += 10).allowed; });
      const double direct_clock = pass([&](const std::string& key) { return k.try_acquire(key).allowed; });
      const double store_clock = pass([&](const std::string& key) {
        const sluice::check c{f.id, key};
        return s.decide({.checks = {&c, 1}, .now = 0, .cost = 1, .id = {}}).d.allowed;
      });
      // Batches: try_acquire_many_at vs decide_many_at.
      std::vector<sluice::keyed_request> kr(batch);
      std::vector<decision> kd(batch);
      std::vector<sluice::check> cs(batch);
      std::vector<sluice::store_request> sr(batch);
      std::vector<sluice::store_decision> sd(batch);
      std::int64_t allowed = 0;
      auto t0 = clk::now();
      for (std::size_t b = 0; b < f.order.size(); b += batch) {
        const std::size_t m = std::min(batch, f.order.size() - b);
        for (std::size_t j = 0; j < m; ++j) kr[j] = {f.keys[f.order[b + j]], at += 10, 1};
        k.try_acquire_many_at(std::span(kr.data(), m), kd);
        for (std::size_t j = 0; j < m; ++j) allowed += kd[j].allowed ? 1 : 0;
      }
      const double direct_many = seconds_since(t0) * 1e9 / static_cast<double>(f.order.size());
      t0 = clk::now();
      for (std::size_t b = 0; b < f.order.size(); b += batch) {
        const std::size_t m = std::min(batch, f.order.size() - b);
        for (std::size_t j = 0; j < m; ++j) {
          cs[j] = {f.id, f.keys[f.order[b + j]]};
          sr[j] = {.checks = {&cs[j], 1}, .now = at += 10, .cost = 1, .id = {}};
        }
        s.decide_many_at(std::span(sr.data(), m), sd);
        for (std::size_t j = 0; j < m; ++j) allowed += sd[j].d.allowed ? 1 : 0;
      }
      const double store_many = seconds_since(t0) * 1e9 / static_cast<double>(f.order.size());
      benchmark::DoNotOptimize(allowed);
      st.counters["direct_at_ns"] = (direct_at_1 + direct_at_2) / 2;
      st.counters["store_at_ns"] = (store_at_1 + store_at_2) / 2;
      st.counters["direct_clock_ns"] = direct_clock;
      st.counters["store_clock_ns"] = store_clock;
      st.counters["direct_many_ns"] = direct_many;
      st.counters["store_many_ns"] = store_many;
      total =
          direct_at_1 + direct_at_2 + store_at_1 + store_at_2 + direct_clock + store_clock + direct_many + store_many;
    });
    st.SetIterationTime(total * static_cast<double>(f.order.size()) * 1e-9);
  }
}

/// Collects each repetition's counters by benchmark name.
class collector : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, std::vector<std::map<std::string, double>>> runs;
  void ReportRuns(const std::vector<Run>& report) override {
    for (const auto& r : report) {
      if (r.run_type != Run::RT_Iteration) continue;
      std::map<std::string, double> m;
      for (const auto& [k, v] : r.counters) m[k] = v.value;
      runs[r.run_name.function_name].push_back(std::move(m));
    }
    ConsoleReporter::ReportRuns(report);
  }
};

struct stats3 {
  double median = 0, lo = 0, hi = 0;
  std::size_t n = 0;
};

stats3 summarize(std::vector<double> v) {
  stats3 s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = v.size();
  s.lo = v.front();
  s.hi = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

std::vector<double> field(const std::vector<std::map<std::string, double>>& runs, const std::string& name) {
  std::vector<double> v;
  for (const auto& r : runs)
    if (auto it = r.find(name); it != r.end()) v.push_back(it->second);
  return v;
}

void emit(const std::string& scenario, const stats3& s, const std::string& note) {
  std::printf("RESULT\tsluice\t%s\t%.2f\t%.0f\t-\t%zu\t%.2f\t%.2f\t%s\n", scenario.c_str(), s.median, 1e9 / s.median,
              s.n, s.lo, s.hi, note.c_str());
}

}  // namespace

BENCHMARK(Store1M)->Name("store-1M")->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  std::string reps = "--benchmark_repetitions=" + std::to_string(env_size("RUNS", 5));
  std::vector<char*> args(argv, argv + argc);
  args.push_back(reps.data());
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  collector rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();
  const auto it = rep.runs.find("store-1M");
  if (it == rep.runs.end()) return 0;
  const auto& r = it->second;
  std::printf("# sluice memory_store vs its keyed_limiter, gcra 100/s burst 10, keys=%zu, same table, same run\n",
              n_keys);
  struct row {
    const char* scenario;
    const char* counter;
    const char* note;
  };
  const row rows[] = {
      {"keyed-1M-steady-virtualtime", "direct_at_ns", "keyed_limiter::try_acquire_at, 1M keys revisited shuffled"},
      {"store-1M-steady-virtualtime", "store_at_ns", "the same through store& (memory_store::decide_at, one check)"},
      {"keyed-1M-steady", "direct_clock_ns", "keyed_limiter::try_acquire (steady clock)"},
      {"store-1M-steady", "store_clock_ns", "the same through store& (store::decide: reads the clock)"},
      {"keyed-1M-steady-batch", "direct_many_ns", "keyed_limiter::try_acquire_many_at, batches"},
      {"store-1M-steady-batch", "store_many_ns", "the same through store& (decide_many_at)"},
  };
  for (const row& w : rows) emit(w.scenario, summarize(field(r, w.counter)), w.note);
  const auto ratio = [&](const char* a, const char* b) {
    return summarize(field(r, a)).median / summarize(field(r, b)).median;
  };
  std::printf("# store/direct: explicit time %.3f, clock %.3f, batch %.3f (target: <= 1.05)\n",
              ratio("store_at_ns", "direct_at_ns"), ratio("store_clock_ns", "direct_clock_ns"),
              ratio("store_many_ns", "direct_many_ns"));
  return 0;
}
