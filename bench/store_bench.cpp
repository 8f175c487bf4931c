// What the store interface costs the in-process keyed store (issue 10: "its
// 1M-key rows through the interface within 5% of the direct calls in the
// same run"). One memory_store holds 1M keys under one GCRA policy
// (100/s burst 10, the keyed bench's); the same table is revisited in
// shuffled order through `store&` (decide_at, decide, decide_many_at) and
// directly through its keyed_limiter (try_acquire_at, try_acquire,
// try_acquire_many_at), the two interleaved in slices of 4096 keys so both
// see the same machine; times are thread CPU time. Prints the peers' RESULT
// lines after Google Benchmark's report, and the ratios.
//
//   store_bench                 RUNS=5 repetitions
// Env: RUNS, KEYS (default 1000000), BATCH (requests per batch, default 64),
// OVERRIDES (held in the overrides-1M rows' second store, default 100).
#include <benchmark/benchmark.h>
#include <time.h>

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

#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"
#include "summary.hpp"

namespace {

using sluice_bench::field;
using sluice_bench::stats3;
using sluice_bench::summarize;

using sluice::decision;
using clk = std::chrono::steady_clock;

std::size_t env_size(const char* name, std::size_t dflt) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : dflt;
}

const std::size_t n_keys = env_size("KEYS", 1'000'000);
const std::size_t batch = std::max<std::size_t>(env_size("BATCH", 64), 1);

/// This thread's CPU time in seconds: on a shared, busy machine the time a
/// pass waits for the CPU is not its cost (the wall time is reported too).
double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// 1M keys ("user:0", ...) in one memory store, and a shuffled revisit order.
struct fixture {
  std::vector<std::string> keys;
  std::vector<std::uint32_t> order;
  std::vector<std::uint32_t> order2;  // another shuffle, for the other side of a pair
  std::unique_ptr<sluice::memory_store> store;
  sluice::policy_id id = 0;

  fixture() : keys(n_keys), order(n_keys), order2(n_keys) {
    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = "user:" + std::to_string(i);
    std::iota(order.begin(), order.end(), 0U);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
    std::iota(order2.begin(), order2.end(), 0U);
    std::shuffle(order2.begin(), order2.end(), std::mt19937_64(43));
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

/// Overrides (semantics.md, "Overrides"): a second memory store with the
/// same 1M keys and states, whose policy also holds OVERRIDES overrides
/// (default 100) on keys of their own ("vip:N"), none of the 1M. What the
/// 1M keys pay for them is this store against the fixture's, which holds
/// none, both in one run.
struct override_fixture {
  std::unique_ptr<sluice::memory_store> store;
  sluice::policy_id id = 0;
  std::size_t overrides = env_size("OVERRIDES", 100);

  override_fixture() {
    const fixture& f = fix();
    sluice::memory_store_options o;
    o.keyed = {.auto_purge = false, .hash_seed = 7};
    store = std::make_unique<sluice::memory_store>(o);
    id = store->define("bench", sluice::gcra::make({100, 1'000'000'000}, 10).value()).value();
    const sluice::tick t = sluice::steady_clock::now();
    for (const auto& k : f.keys) {
      const sluice::check c{id, k};
      benchmark::DoNotOptimize(store->decide_at({.checks = {&c, 1}, .now = t, .cost = 1, .id = {}}));
    }
    const sluice::any_policy vip = sluice::gcra::make({1000, 1'000'000'000}, 100).value();
    for (std::size_t i = 0; i < overrides; ++i)
      if (!store->set_override_at(id, "vip:" + std::to_string(i), vip, t)) std::abort();
  }
};

override_fixture& fix_ov() {
  static override_fixture f;
  return f;
}

/// CPU ns per decision of two sides, A and B, measured together: the
/// revisit goes in slices of 4096 keys, each slice once through A (keys in
/// one shuffle) and once through B (the same slice of another shuffle, so
/// neither finds the other's keys in cache), the side that goes first
/// alternating. A busy machine's noise then falls on both sides alike.
/// `run(side, keys, n)` decides the n keys.
template <typename Run>
std::pair<double, double> paired(Run&& run) {
  const auto& f = fix();
  constexpr std::size_t slice = 4096;
  double t[2] = {0, 0};
  std::vector<const std::string*> ks(slice);
  for (std::size_t b = 0, round = 0; b < f.order.size(); b += slice, ++round) {
    const std::size_t m = std::min(slice, f.order.size() - b);
    for (int k = 0; k < 2; ++k) {
      const int side = (k + static_cast<int>(round)) % 2;
      const auto& perm = side == 0 ? f.order : f.order2;
      for (std::size_t j = 0; j < m; ++j) ks[j] = &f.keys[perm[b + j]];
      const double c0 = thread_cpu();
      run(side, ks.data(), m);
      t[side] += thread_cpu() - c0;
    }
  }
  const double n = static_cast<double>(f.order.size());
  return {t[0] * 1e9 / n, t[1] * 1e9 / n};
}

void Store1M(benchmark::State& st) {
  fixture& f = fix();
  sluice::store& s = *f.store;  // through the interface (a virtual call)
  double total = 0;
  for (auto _ : st) {
    const auto w0 = clk::now();
    f.store->with_keyed(f.id, [&](sluice::keyed_limiter& k) {
      sluice::tick at = sluice::steady_clock::now();
      std::int64_t allowed = 0;
      const auto [da, sa] = paired([&](int side, const std::string* const* ks, std::size_t m) {
        if (side == 0) {
          for (std::size_t j = 0; j < m; ++j) allowed += k.try_acquire_at(*ks[j], at += 10).allowed ? 1 : 0;
        } else {
          for (std::size_t j = 0; j < m; ++j) {
            const sluice::check c{f.id, *ks[j]};
            allowed += s.decide_at({.checks = {&c, 1}, .now = at += 10, .cost = 1, .id = {}}).d.allowed ? 1 : 0;
          }
        }
      });
      const auto [dc, sc] = paired([&](int side, const std::string* const* ks, std::size_t m) {
        if (side == 0) {
          for (std::size_t j = 0; j < m; ++j) allowed += k.try_acquire(*ks[j]).allowed ? 1 : 0;
        } else {
          for (std::size_t j = 0; j < m; ++j) {
            const sluice::check c{f.id, *ks[j]};
            allowed += s.decide({.checks = {&c, 1}, .now = 0, .cost = 1, .id = {}}).d.allowed ? 1 : 0;
          }
        }
      });
      std::vector<sluice::keyed_request> kr(batch);
      std::vector<decision> kd(batch);
      std::vector<sluice::check> cs(batch);
      std::vector<sluice::store_request> sr(batch);
      std::vector<sluice::store_decision> sd(batch);
      const auto [dm, sm] = paired([&](int side, const std::string* const* ks, std::size_t m) {
        for (std::size_t b = 0; b < m; b += batch) {
          const std::size_t n = std::min(batch, m - b);
          if (side == 0) {
            for (std::size_t j = 0; j < n; ++j) kr[j] = {*ks[b + j], at += 10, 1};
            k.try_acquire_many_at(std::span(kr.data(), n), kd);
            for (std::size_t j = 0; j < n; ++j) allowed += kd[j].allowed ? 1 : 0;
          } else {
            for (std::size_t j = 0; j < n; ++j) {
              cs[j] = {f.id, *ks[b + j]};
              sr[j] = {.checks = {&cs[j], 1}, .now = at += 10, .cost = 1, .id = {}};
            }
            s.decide_many_at(std::span(sr.data(), n), sd);
            for (std::size_t j = 0; j < n; ++j) allowed += sd[j].d.allowed ? 1 : 0;
          }
        }
      });
      benchmark::DoNotOptimize(allowed);
      st.counters["direct_at_ns"] = da;
      st.counters["store_at_ns"] = sa;
      st.counters["direct_clock_ns"] = dc;
      st.counters["store_clock_ns"] = sc;
      st.counters["direct_many_ns"] = dm;
      st.counters["store_many_ns"] = sm;
    });
    total = std::chrono::duration<double>(clk::now() - w0).count();
    st.counters["wall_s"] = total;
    st.SetIterationTime(total);
  }
}

/// Keys without an override, in a store whose policy holds none and in one
/// whose policy holds `OVERRIDES` (on other keys): one check (decide_at)
/// and batches (decide_many_at), paired as above.
void Overrides1M(benchmark::State& st) {
  fixture& f = fix();
  override_fixture& g = fix_ov();
  sluice::store* stores[2] = {f.store.get(), g.store.get()};
  const sluice::policy_id ids[2] = {f.id, g.id};
  for (auto _ : st) {
    const auto w0 = clk::now();
    sluice::tick at = sluice::steady_clock::now();
    std::int64_t allowed = 0;
    const auto [na, oa] = paired([&](int side, const std::string* const* ks, std::size_t m) {
      sluice::store& s = *stores[side];
      for (std::size_t j = 0; j < m; ++j) {
        const sluice::check c{ids[side], *ks[j]};
        allowed += s.decide_at({.checks = {&c, 1}, .now = at += 10, .cost = 1, .id = {}}).d.allowed ? 1 : 0;
      }
    });
    std::vector<sluice::check> cs(batch);
    std::vector<sluice::store_request> sr(batch);
    std::vector<sluice::store_decision> sd(batch);
    const auto [nm, om] = paired([&](int side, const std::string* const* ks, std::size_t m) {
      sluice::store& s = *stores[side];
      for (std::size_t b = 0; b < m; b += batch) {
        const std::size_t n = std::min(batch, m - b);
        for (std::size_t j = 0; j < n; ++j) {
          cs[j] = {ids[side], *ks[b + j]};
          sr[j] = {.checks = {&cs[j], 1}, .now = at += 10, .cost = 1, .id = {}};
        }
        s.decide_many_at(std::span(sr.data(), n), sd);
        for (std::size_t j = 0; j < n; ++j) allowed += sd[j].d.allowed ? 1 : 0;
      }
    });
    benchmark::DoNotOptimize(allowed);
    st.counters["none_at_ns"] = na;
    st.counters["held_at_ns"] = oa;
    st.counters["none_many_ns"] = nm;
    st.counters["held_many_ns"] = om;
    const double total = std::chrono::duration<double>(clk::now() - w0).count();
    st.counters["wall_s"] = total;
    st.SetIterationTime(total);
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

void emit(const std::string& scenario, const stats3& s, const std::string& note) {
  std::printf("RESULT\tsluice\t%s\t%.2f\t%.0f\t-\t%zu\t%.2f\t%.2f\t%s\n", scenario.c_str(), s.median, 1e9 / s.median,
              s.n, s.lo, s.hi, note.c_str());
}

}  // namespace

BENCHMARK(Store1M)->Name("store-1M")->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(Overrides1M)->Name("overrides-1M")->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  std::string reps = "--benchmark_repetitions=" + std::to_string(env_size("RUNS", 5));
  std::vector<char*> args(argv, argv + argc);
  args.push_back(reps.data());
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  collector rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();
  if (const auto ov = rep.runs.find("overrides-1M"); ov != rep.runs.end()) {
    const auto& r = ov->second;
    std::printf(
        "# keys without an override: a store whose policy holds none vs one holding %zu (on other keys), keys=%zu, "
        "same run; ns = thread CPU time per decision\n",
        fix_ov().overrides, n_keys);
    emit("store-1M-no-overrides", summarize(field(r, "none_at_ns")), "memory_store::decide_at, no override held");
    emit("store-1M-overrides-held", summarize(field(r, "held_at_ns")), "the same, overrides held on other keys");
    emit("store-1M-no-overrides-batch", summarize(field(r, "none_many_ns")), "decide_many_at, no override held");
    emit("store-1M-overrides-held-batch", summarize(field(r, "held_many_ns")),
         "the same, overrides held on other keys");
    const auto ratio = [&](const char* a, const char* b) {
      return summarize(field(r, a)).median / summarize(field(r, b)).median;
    };
    std::printf("# overrides held / none: one check %.3f, batch %.3f (target: <= 1.03)\n",
                ratio("held_at_ns", "none_at_ns"), ratio("held_many_ns", "none_many_ns"));
  }
  const auto it = rep.runs.find("store-1M");
  if (it == rep.runs.end()) return 0;
  const auto& r = it->second;
  std::printf(
      "# sluice memory_store vs its keyed_limiter, gcra 100/s burst 10, keys=%zu, same table, same run; ns = thread "
      "CPU time per decision\n",
      n_keys);
  struct row {
    const char* scenario;
    const char* counter;
    const char* note;
  };
  const row rows[] = {
      {"store-direct-1M-steady-virtualtime", "direct_at_ns",
       "keyed_limiter::try_acquire_at, 1M keys revisited shuffled"},
      {"store-1M-steady-virtualtime", "store_at_ns", "the same through store& (memory_store::decide_at, one check)"},
      {"store-direct-1M-steady", "direct_clock_ns", "keyed_limiter::try_acquire (steady clock)"},
      {"store-1M-steady", "store_clock_ns", "the same through store& (store::decide: reads the clock)"},
      {"store-direct-1M-steady-batch", "direct_many_ns", "keyed_limiter::try_acquire_many_at, batches"},
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
