// The keyed store at scale (issue 5), beside the peers: 1M keys first touch
// and steady state with bytes per key from the allocator (mallinfo2) and the
// kernel (RSS), 2 threads on distinct keys, 2 threads on one key, and a
// 10M-key purge (longest slice and total), and key churn (decisions on new
// keys with 1M states held, beside the same on an empty store, each timed:
// mean, median and 99th percentile). The steady state is measured
// three ways (try_acquire, try_acquire_at, try_acquire_many in batches) and
// beside its floor on this machine (keyed_floor.hpp: the same keys through
// the least a keyed store can do). Prints the peers' RESULT lines
// (../shared/peers/README.md beside the checkout, "Output contract") after
// Google Benchmark's own report.
//
//   keyed_bench                      all scenarios, RUNS=5 repetitions
//   keyed_bench --benchmark_filter=1key   one group
// Env: RUNS (repetitions), KEYS (default 1000000), PURGE_KEYS (default
// 10000000), N (decisions per single-key run, default 10000000), BATCH
// (requests per try_acquire_many, default 64), CHURN (new keys per churn
// run, default 200000).
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "keyed_floor.hpp"
#include "sluice/keyed/keyed.hpp"
#include "summary.hpp"

namespace {

using sluice_bench::field;
using sluice_bench::stats3;
using sluice_bench::summarize;

using sluice::decision;
using sluice::gcra;
using sluice::keyed_limiter;
using clk = std::chrono::steady_clock;

std::size_t env_size(const char* name, std::size_t dflt) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : dflt;
}

const std::size_t n_keys = env_size("KEYS", 1'000'000);
const std::size_t n_purge = env_size("PURGE_KEYS", 10'000'000);
const std::size_t n_single = env_size("N", 10'000'000);
const std::size_t batch = std::max<std::size_t>(env_size("BATCH", 64), 1);
const std::size_t n_churn = std::max<std::size_t>(env_size("CHURN", 200'000), 100);

/// "user:0" … as the Go and Java harnesses name them.
const std::vector<std::string>& keys() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> v(n_keys);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = "user:" + std::to_string(i);
    return v;
  }();
  return k;
}
const std::vector<std::uint32_t>& perm() {
  static const std::vector<std::uint32_t> p = [] {
    std::vector<std::uint32_t> v(n_keys);
    std::iota(v.begin(), v.end(), 0U);
    std::shuffle(v.begin(), v.end(), std::mt19937_64(42));
    return v;
  }();
  return p;
}

/// 100 per second, burst 10 per key (the peers' keyed scenario), ns ticks.
sluice::any_policy keyed_policy() { return gcra::make({100, 1'000'000'000}, 10).value(); }
/// 1e9 per second, burst 1000: every call admitted (the peers' allow scenarios).
sluice::any_policy allow_policy() { return gcra::make({1'000'000'000, 1'000'000'000}, 1000).value(); }

/// Bytes the allocator has handed out: small and heap blocks (uordblks)
/// plus blocks it mapped on their own (hblkhd: large tables).
std::size_t heap_in_use() {
  malloc_trim(0);
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}
std::size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::size_t size = 0;
  std::size_t resident = 0;
  f >> size >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

/// This thread's CPU time in seconds (to tell the cost from a busy machine's waiting).
double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// ---- 1M keys: first touch, steady state, 2 threads on distinct keys ----

void Keyed1M(benchmark::State& st) {
  const auto& k = keys();
  const auto& p = perm();
  std::size_t key_bytes = 0;
  for (const auto& s : k) key_bytes += s.size();
  for (auto _ : st) {
    const std::size_t heap0 = heap_in_use();
    const std::size_t rss0 = rss_bytes();
    // auto_purge off: every key stays held, as the peers hold theirs (with it
    // on, keys admitted 10 ms earlier are fresh and get dropped as it grows).
    auto store =
        std::make_unique<keyed_limiter>(keyed_policy(), sluice::keyed_options{.auto_purge = false, .hash_seed = 7});
    std::int64_t allowed = 0;
    auto t0 = clk::now();
    double c0 = thread_cpu();
    for (const auto& key : k) allowed += store->try_acquire(key).allowed ? 1 : 0;
    const double first = seconds_since(t0);
    const double first_cpu = thread_cpu() - c0;
    const std::size_t heap1 = heap_in_use();
    const std::size_t rss1 = rss_bytes();
    t0 = clk::now();
    c0 = thread_cpu();
    for (const std::uint32_t i : p) allowed += store->try_acquire(k[i]).allowed ? 1 : 0;
    const double steady = seconds_since(t0);
    const double steady_cpu = thread_cpu() - c0;
    // The same revisit with an explicit time (try_acquire_at): no clock read.
    sluice::tick at = sluice::steady_clock::now();
    t0 = clk::now();
    for (const std::uint32_t i : p) allowed += store->try_acquire_at(k[i], at += 10).allowed ? 1 : 0;
    const double steady_at = seconds_since(t0);
    // The same revisit in batches of 64 (try_acquire_many: one clock reading
    // per batch, lookups overlapped), the views built from the keys as we go.
    std::vector<std::string_view> views(batch);
    std::vector<decision> outs(batch);
    t0 = clk::now();
    for (std::size_t b = 0; b < p.size(); b += batch) {
      const std::size_t m = std::min(batch, p.size() - b);
      for (std::size_t j = 0; j < m; ++j) views[j] = k[p[b + j]];
      store->try_acquire_many(std::span(views.data(), m), outs);
      for (std::size_t j = 0; j < m; ++j) allowed += outs[j].allowed ? 1 : 0;
    }
    const double steady_many = seconds_since(t0);
    // Two threads, distinct keys: each revisits its half (even / odd positions of the shuffle).
    std::atomic<int> ready{0};
    std::atomic<std::int64_t> allowed2{0};
    auto worker = [&](std::size_t first_index) {
      std::int64_t a = 0;
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      for (std::size_t j = first_index; j < p.size(); j += 2) a += store->try_acquire(k[p[j]]).allowed ? 1 : 0;
      allowed2.fetch_add(a);
    };
    t0 = clk::now();
    std::thread a(worker, 0);
    std::thread b(worker, 1);
    a.join();
    b.join();
    const double two = seconds_since(t0);
    st.SetIterationTime(first + steady + steady_at + steady_many + two);
    const double n = static_cast<double>(k.size());
    st.counters["first_ns"] = first * 1e9 / n;
    st.counters["steady_ns"] = steady * 1e9 / n;
    st.counters["steady_at_ns"] = steady_at * 1e9 / n;
    st.counters["steady_many_ns"] = steady_many * 1e9 / n;
    st.counters["steady2_ns"] = two * 1e9 / n;
    // The floor (keyed_floor.hpp): the same keys in the same order through
    // the least a keyed store can do, one call at a time and in batches.
    {
      sluice_bench::floor_table floor(k.size());
      for (const auto& key : k) floor.insert(key);
      std::size_t found = 0;
      t0 = clk::now();
      for (const std::uint32_t i : p) found += floor.visit(k[i]) ? 1 : 0;
      st.counters["floor_ns"] = seconds_since(t0) * 1e9 / n;
      t0 = clk::now();
      for (std::size_t from = 0; from < p.size(); from += batch) {
        const std::size_t m = std::min(batch, p.size() - from);
        for (std::size_t j = 0; j < m; ++j) views[j] = k[p[from + j]];
        found += floor.visit_many(views.data(), m);
      }
      st.counters["floor_many_ns"] = seconds_since(t0) * 1e9 / n;
      benchmark::DoNotOptimize(found);
    }
    // The harness alone: fetch each key in the same shuffled order and read
    // its bytes (what any keyed store pays before its own lookup).
    t0 = clk::now();
    std::uint64_t sum = 0;
    for (const std::uint32_t i : p) sum += static_cast<unsigned char>(k[i].back()) + k[i].size();
    benchmark::DoNotOptimize(sum);
    st.counters["fetch_ns"] = seconds_since(t0) * 1e9 / n;
    st.counters["first_cpu_ns"] = first_cpu * 1e9 / n;
    st.counters["steady_cpu_ns"] = steady_cpu * 1e9 / n;
    st.counters["heap_B_per_key"] =
        (static_cast<double>(heap1) - static_cast<double>(heap0) - static_cast<double>(key_bytes)) / n;
    st.counters["rss_B_per_key"] =
        (static_cast<double>(rss1) - static_cast<double>(rss0) - static_cast<double>(key_bytes)) / n;
    st.counters["key_bytes"] = static_cast<double>(key_bytes) / n;
    st.counters["keys"] = static_cast<double>(store->size());
    benchmark::DoNotOptimize(allowed + allowed2.load());
  }
}

// ---- one key ----

void OneKeyAllowRealtime(benchmark::State& st) {
  keyed_limiter store(allow_policy());
  std::int64_t allowed = 0;
  for (auto _ : st) allowed += store.try_acquire("user:42").allowed ? 1 : 0;
  st.counters["allowed"] = static_cast<double>(allowed);
}

void OneKeyAllowVirtual(benchmark::State& st) {
  keyed_limiter store(allow_policy());
  std::int64_t allowed = 0;
  sluice::tick now = 0;
  for (auto _ : st) allowed += store.try_acquire_at("user:42", now += 1000).allowed ? 1 : 0;
  st.counters["allowed"] = static_cast<double>(allowed);
}

void OneKeyDenyRealtime(benchmark::State& st) {
  keyed_limiter store(gcra::make({1, 1'000'000'000}, 1).value());
  std::int64_t allowed = 0;
  for (auto _ : st) allowed += store.try_acquire("user:42").allowed ? 1 : 0;
  st.counters["allowed"] = static_cast<double>(allowed);
}

/// Two threads on one key, every call admitted: wall time / total decisions.
void OneKey2Threads(benchmark::State& st) {
  for (auto _ : st) {
    keyed_limiter store(allow_policy());
    const std::size_t per = n_single / 2;
    std::atomic<int> ready{0};
    std::atomic<std::int64_t> allowed{0};
    auto worker = [&] {
      std::int64_t a = 0;
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      for (std::size_t i = 0; i < per; ++i) a += store.try_acquire("user:42").allowed ? 1 : 0;
      allowed.fetch_add(a);
    };
    const auto t0 = clk::now();
    std::thread a(worker);
    std::thread b(worker);
    a.join();
    b.join();
    const double s = seconds_since(t0);
    st.SetIterationTime(s);
    st.counters["ns"] = s * 1e9 / static_cast<double>(2 * per);
    st.counters["allowed"] = static_cast<double>(allowed.load());
    st.counters["total"] = static_cast<double>(2 * per);
  }
}

// ---- purge of 10M keys: longest slice, total ----

void Purge10M(benchmark::State& st) {
  for (auto _ : st) {
    std::vector<std::string> k(n_purge);
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = "user:" + std::to_string(i);
    keyed_limiter store(keyed_policy(), sluice::keyed_options{.auto_purge = false, .hash_seed = 9});
    const auto t_insert = clk::now();
    double longest_insert = 0;  // the slowest insert: one that grows its shard's table
    for (std::size_t i = 0; i < k.size(); ++i) {
      const auto s0 = clk::now();
      (void)store.try_acquire_at(k[i], static_cast<sluice::tick>(i));
      longest_insert = std::max(longest_insert, seconds_since(s0));
    }
    const double insert = seconds_since(t_insert);
    // Every state is fresh a second after its admit (burst 10 at 100/s: 10 ms each).
    const sluice::tick later = static_cast<sluice::tick>(n_purge) + 2'000'000'000;
    const std::size_t slice = env_size("SLICE", 1024);
    double longest = 0;
    double longest_cpu = 0;
    std::vector<double> walls;
    std::size_t steps = 0;
    std::size_t dropped = 0;
    const auto t0 = clk::now();
    while (store.size() > 0 && steps < 100'000'000) {
      const auto s0 = clk::now();
      const double c0 = thread_cpu();
      dropped += store.purge_step(later, slice);
      const double wall = seconds_since(s0);
      longest_cpu = std::max(longest_cpu, thread_cpu() - c0);
      longest = std::max(longest, wall);
      walls.push_back(wall);
      ++steps;
    }
    std::sort(walls.begin(), walls.end());
    const double total = seconds_since(t0);
    st.SetIterationTime(total);
    st.counters["keys"] = static_cast<double>(k.size());
    st.counters["dropped"] = static_cast<double>(dropped);
    st.counters["insert_ns"] = insert * 1e9 / static_cast<double>(k.size());
    st.counters["total_ms"] = total * 1e3;
    st.counters["longest_slice_us"] = longest * 1e6;
    st.counters["longest_slice_cpu_us"] = longest_cpu * 1e6;
    st.counters["p999_slice_us"] = walls.empty() ? 0 : walls[walls.size() * 999 / 1000] * 1e6;
    st.counters["longest_insert_us"] = longest_insert * 1e6;
    st.counters["slices"] = static_cast<double>(steps);
  }
}

// ---- key churn: new keys on an empty store and with 1M states held ----

/// Decides `fresh_keys` (each new) at `at`, one call at a time, each timed;
/// writes mean, median, p99 (ns) and the phase's thread CPU ns per decision.
void time_new_keys(keyed_limiter& store, const std::vector<std::string>& fresh_keys, sluice::tick at,
                   benchmark::State& st, const std::string& name) {
  std::vector<double> ns(fresh_keys.size());
  std::int64_t allowed = 0;
  const double c0 = thread_cpu();
  const auto t0 = clk::now();
  for (std::size_t i = 0; i < fresh_keys.size(); ++i) {
    const auto s0 = clk::now();
    allowed += store.try_acquire_at(fresh_keys[i], at).allowed ? 1 : 0;
    ns[i] = std::chrono::duration<double, std::nano>(clk::now() - s0).count();
  }
  const double wall = seconds_since(t0);
  const double cpu = thread_cpu() - c0;
  benchmark::DoNotOptimize(allowed);
  std::sort(ns.begin(), ns.end());
  const double n = static_cast<double>(ns.size());
  st.counters[name + "_mean_ns"] = wall * 1e9 / n;
  st.counters[name + "_cpu_ns"] = cpu * 1e9 / n;
  st.counters[name + "_p50_ns"] = ns[ns.size() / 2];
  st.counters[name + "_p99_ns"] = ns[ns.size() * 99 / 100];
}

void Churn1M(benchmark::State& st) {
  const auto& k = keys();
  std::vector<std::string> fresh_keys(n_churn);
  for (std::size_t i = 0; i < fresh_keys.size(); ++i) fresh_keys[i] = "new:" + std::to_string(i);
  std::size_t key_bytes = 0;
  for (const auto& s : k) key_bytes += s.size();
  const sluice::tick t0 = 1'000'000'000;
  for (auto _ : st) {
    // An empty store, the new keys at one instant.
    {
      keyed_limiter empty(keyed_policy(), {.hash_seed = 7});
      time_new_keys(empty, fresh_keys, t0, st, "empty");
    }
    // 1M states held (not fresh at the new keys' instant).
    {
      const std::size_t heap0 = heap_in_use();
      keyed_limiter held(keyed_policy(), {.hash_seed = 7});
      for (const auto& key : k) (void)held.try_acquire_at(key, t0);
      const sluice::keyed_stats s = held.stats();
      st.counters["held_bytes_per_state"] = static_cast<double>(s.bytes) / static_cast<double>(s.keys);
      st.counters["held_heap_per_state"] =
          (static_cast<double>(heap_in_use()) - static_cast<double>(heap0) - static_cast<double>(key_bytes)) /
          static_cast<double>(s.keys);
      time_new_keys(held, fresh_keys, t0 + 1, st, "held");
    }
    // 1M states held, all fresh when the new keys come, in time order: the
    // growing shards' sweeps drop them as they go (the packed-table case).
    {
      keyed_limiter going(keyed_policy(), {.in_time_order = true, .hash_seed = 7});
      for (const auto& key : k) (void)going.try_acquire_at(key, t0);
      time_new_keys(going, fresh_keys, t0 + 10'000'000'000, st, "fresh");
      st.counters["fresh_purged"] = static_cast<double>(going.stats().purged);
    }
    st.SetIterationTime(1);
  }
}

/// Collects every repetition's counters by benchmark name.
class collector : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, std::vector<std::map<std::string, double>>> runs;
  void ReportRuns(const std::vector<Run>& report) override {
    ConsoleReporter::ReportRuns(report);
    for (const Run& r : report) {
      if (r.run_type != Run::RT_Iteration) continue;
      std::map<std::string, double> c;
      for (const auto& [name, counter] : r.counters) c[name] = counter.value;
      c["real_ns_per_iter"] = r.GetAdjustedRealTime();
      c["cpu_ns_per_iter"] = r.GetAdjustedCPUTime();
      runs[r.run_name.function_name].push_back(c);
    }
  }
};

void emit(const std::string& scenario, const stats3& s, const std::string& bytes, const std::string& note) {
  std::printf("RESULT\tsluice\t%s\t%.2f\t%.0f\t%s\t%zu\t%.2f\t%.2f\t%s\n", scenario.c_str(), s.median, 1e9 / s.median,
              bytes.c_str(), s.n, s.lo, s.hi, note.c_str());
}

std::string fmt1(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

}  // namespace

BENCHMARK(Keyed1M)->Name("keyed-1M")->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(OneKeyAllowVirtual)->Name("1key-allow-virtualtime");
BENCHMARK(OneKeyAllowRealtime)->Name("1key-allow-realtime");
BENCHMARK(OneKeyDenyRealtime)->Name("1key-deny-realtime");
BENCHMARK(OneKey2Threads)->Name("1key-2thr-allow")->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(Purge10M)->Name("purge-10M")->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(Churn1M)->Name("churn-1M")->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  const std::string reps = "--benchmark_repetitions=" + std::to_string(env_size("RUNS", 5));
  std::vector<char*> args(argv, argv + argc);
  std::string rep_arg = reps;
  args.push_back(rep_arg.data());
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  collector rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();

  std::printf("# sluice keyed_limiter (GCRA, lock-free path), keys=%zu purge_keys=%zu\n", n_keys, n_purge);
  if (auto it = rep.runs.find("keyed-1M"); it != rep.runs.end()) {
    const auto& r = it->second;
    const stats3 heap = summarize(field(r, "heap_B_per_key"));
    const stats3 rss = summarize(field(r, "rss_B_per_key"));
    const std::string bytes = fmt1(heap.median);
    const std::string mem = "bytes/key = mallinfo2 (uordblks + hblkhd) delta minus the key bytes (" +
                            fmt1(summarize(field(r, "key_bytes")).median) + " B/key); RSS delta minus key bytes " +
                            fmt1(rss.median) + " B/key";
    emit("keyed-1M-first-touch", summarize(field(r, "first_ns")), bytes,
         "keyed_limiter<gcra 100/s burst 10>, 1M keys inserted, try_acquire (steady clock); " + mem);
    const stats3 one = summarize(field(r, "steady_ns"));
    const stats3 two = summarize(field(r, "steady2_ns"));
    emit("keyed-1M-steady", one, bytes,
         "same store, 1M existing keys revisited in shuffled order, try_acquire; thread CPU time " +
             fmt1(summarize(field(r, "steady_cpu_ns")).median) + " ns (first touch " +
             fmt1(summarize(field(r, "first_cpu_ns")).median) +
             " ns); the harness alone (fetching each key's "
             "string in that order) " +
             fmt1(summarize(field(r, "fetch_ns")).median) + " ns");
    const stats3 fl = summarize(field(r, "floor_ns"));
    const stats3 fl_many = summarize(field(r, "floor_many_ns"));
    emit("keyed-1M-steady-virtualtime", summarize(field(r, "steady_at_ns")), bytes,
         "the same revisit with an explicit time (try_acquire_at): no clock read; the floor (keyed_floor.hpp: one "
         "32-byte slot per key, key inline, one CAS, nothing else) " +
             fmt1(fl.median) + " ns");
    emit("keyed-1M-steady-batch", summarize(field(r, "steady_many_ns")), bytes,
         "the same revisit in batches of " + std::to_string(batch) +
             " (try_acquire_many: one clock reading a batch, lookups prefetched); the floor in batches " +
             fmt1(fl_many.median) + " ns");
    emit("floor-keyed-1M-steady", fl, "-",
         "keyed_floor.hpp: 1M keys in one table of 32-byte slots (key inline, 16-byte cell, one CAS), the same "
         "shuffled revisit, one call at a time: what memory latency alone costs on this machine");
    emit("floor-keyed-1M-steady-batch", fl_many, "-",
         "keyed_floor.hpp, the same revisit in batches of " + std::to_string(batch) + ", home slots prefetched");
    emit("keyed-1M-steady-2thr", two, bytes,
         "2 threads on distinct keys (halves of the shuffle); ns = wall/total; speed-up over 1 thread = " +
             fmt1(one.median / two.median) + "x");
  }
  for (const char* name : {"1key-allow-virtualtime", "1key-allow-realtime", "1key-deny-realtime"}) {
    if (auto it = rep.runs.find(name); it != rep.runs.end())
      emit(name, summarize(field(it->second, "real_ns_per_iter")), "-",
           std::string("keyed_limiter, one key, gcra (") +
               (std::string(name).find("virtual") != std::string::npos ? "try_acquire_at" : "try_acquire") +
               "); thread CPU time " + fmt1(summarize(field(it->second, "cpu_ns_per_iter")).median) + " ns");
  }
  if (auto it = rep.runs.find("1key-2thr-allow"); it != rep.runs.end()) {
    const auto& r = it->second;
    const stats3 a = summarize(field(r, "allowed"));
    emit("1key-2thr-allow", summarize(field(r, "ns")), "-",
         "2 threads on one key of a keyed_limiter (gcra 1e9/s burst 1000, try_acquire); ns = wall/total decisions; "
         "allowed " +
             fmt1(a.median) + "/" + fmt1(summarize(field(r, "total")).median));
  }
  if (auto it = rep.runs.find("purge-10M"); it != rep.runs.end()) {
    const auto& r = it->second;
    const stats3 longest = summarize(field(r, "longest_slice_us"));
    const stats3 total = summarize(field(r, "total_ms"));
    stats3 per_key = total;
    const double k = summarize(field(r, "keys")).median;
    per_key.median = total.median * 1e6 / k;
    per_key.lo = total.lo * 1e6 / k;
    per_key.hi = total.hi * 1e6 / k;
    emit("keyed-10M-purge", per_key, "-",
         "purge_step(now, " + std::to_string(env_size("SLICE", 1024)) + " slots) until empty over " + fmt1(k) +
             " fresh keys: total " + fmt1(total.median) + " ms; slices: longest " + fmt1(longest.median) +
             " us wall (max over runs " + fmt1(longest.hi) + " us), 99.9th percentile " +
             fmt1(summarize(field(r, "p999_slice_us")).median) + " us, longest in thread CPU time " +
             fmt1(summarize(field(r, "longest_slice_cpu_us")).median) +
             " us; inserting them, the longest insert (a shard's table growing) " +
             fmt1(summarize(field(r, "longest_insert_us")).median) + " us");
  }
  if (auto it = rep.runs.find("churn-1M"); it != rep.runs.end()) {
    const auto& r = it->second;
    const stats3 empty = summarize(field(r, "empty_mean_ns"));
    const auto row = [&](const std::string& scenario, const std::string& side, const std::string& bytes,
                         const std::string& what) {
      const stats3 mean = summarize(field(r, side + "_mean_ns"));
      emit(scenario, mean, bytes,
           what + ", " + std::to_string(n_churn) +
               " new keys one call at a time (try_acquire_at), each timed: median " +
               fmt1(summarize(field(r, side + "_p50_ns")).median) + " ns, p99 " +
               fmt1(summarize(field(r, side + "_p99_ns")).median) + " ns, thread CPU " +
               fmt1(summarize(field(r, side + "_cpu_ns")).median) + " ns; " + fmt1(mean.median / empty.median) +
               "x the empty store's mean");
    };
    row("keyed-churn-empty", "empty", "-", "keyed_limiter<gcra 100/s burst 10>, an empty store");
    row("keyed-churn-1M-held", "held", fmt1(summarize(field(r, "held_bytes_per_state")).median),
        "the same store with 1M states held (not fresh); bytes/state = keyed_stats::bytes / keys (mallinfo2 beyond "
        "the keys: " +
            fmt1(summarize(field(r, "held_heap_per_state")).median) + ")");
    row("keyed-churn-1M-fresh", "fresh", "-",
        "1M states held, all fresh when the new keys come, in time order (the growing shards' sweeps drop " +
            fmt1(summarize(field(r, "fresh_purged")).median) + " of them)");
  }
  return 0;
}
