// How long a reload stops decisions (issue 17): a memory_store holds KEYS
// states (default 1M) under one GCRA policy (100/s burst 10); a decision
// loop on another thread revisits them in shuffled order while the main
// thread redefines the policy (a new rate, the states carried over, as a
// `sluice serve` reload does). Prints, from the loop's own clock readings
// (wall time), the longest decision, the 99.99th percentile and the count
// over 10 ms, in a quiet stretch of 2 s before the reload and from the
// reload until every state is carried over; and how long define_at (the
// gate's closed time is within it) and the whole carry-over took. On a
// loaded machine a preempted loop shows in both stretches alike.
//
//   reload_bench               RUNS=3 reloads, each on a fresh store
// Env: RUNS, KEYS.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sluice/keyed/memory.hpp"

namespace {

using clk = std::chrono::steady_clock;

std::size_t env_size(const char* name, std::size_t dflt) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : dflt;
}

double ms(clk::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct phase_stats {
  double max_ms = 0;
  double p9999_ms = 0;
  std::size_t over_10ms = 0;
  std::size_t n = 0;
};

phase_stats summarize(std::vector<float>& v) {
  phase_stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.max_ms = v.back();
  s.p9999_ms = v[std::min(v.size() - 1, v.size() * 9999 / 10000)];
  s.over_10ms = static_cast<std::size_t>(v.end() - std::upper_bound(v.begin(), v.end(), 10.0F));
  return s;
}

struct run_result {
  phase_stats quiet;      // the 2 s before the reload
  phase_stats reload;     // from the reload's start until every state is carried
  double define_ms = 0;   // define_at's own time
  double carried_ms = 0;  // until the store holds no state of the old policy (stats settle)
  std::uint64_t decisions = 0;
};

run_result one_run(std::size_t n, std::uint64_t seed) {
  sluice::memory_store_options o;
  o.keyed.hash_seed = seed;
  sluice::memory_store st(o);
  const sluice::tick second = 1'000'000'000;
  const auto id = st.define_at("p", sluice::gcra::make({100, second}, 10).value(), 0).value();
  std::vector<std::string> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = "client-" + std::to_string(i);
  sluice::tick now = 1;
  for (const auto& k : keys) {
    const sluice::check c{id, k, 1};
    (void)st.decide_at({std::span<const sluice::check>(&c, 1), now, 1, {}});
  }
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0U);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));

  std::atomic<int> phase{0};  // 0: quiet, 1: reloading, 2: stop
  std::atomic<bool> started{false};
  run_result out;
  std::vector<float> lat[2];
  lat[0].reserve(8'000'000);
  lat[1].reserve(16'000'000);
  std::thread loop([&] {
    std::uint64_t count = 0;
    std::size_t i = 0;
    sluice::tick t = 2;
    const auto deadline = clk::now() + std::chrono::seconds(60);  // bounded, whatever happens
    started.store(true);
    for (;;) {
      const int ph = phase.load(std::memory_order_acquire);
      if (ph == 2 || clk::now() > deadline) break;
      const sluice::check c{id, keys[order[i]], 1};
      const auto t0 = clk::now();
      (void)st.decide_at({std::span<const sluice::check>(&c, 1), t, 1, {}});
      const double d = ms(clk::now() - t0);
      if (lat[ph].size() < lat[ph].capacity()) lat[ph].push_back(static_cast<float>(d));
      ++count;
      if (++i == n) i = 0;
      t += 10;
    }
    out.decisions = count;
  });
  while (!started.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const auto r0 = clk::now();
  phase.store(1, std::memory_order_release);
  (void)st.define_at("p", sluice::gcra::make({200, second}, 10).value(), 1000).value();
  out.define_ms = ms(clk::now() - r0);
  // The carry-over is done when a purge (which settles it first) returns.
  (void)st.purge(1000);
  out.carried_ms = ms(clk::now() - r0);
  phase.store(2, std::memory_order_release);
  loop.join();
  out.quiet = summarize(lat[0]);
  out.reload = summarize(lat[1]);
  return out;
}

}  // namespace

int main() {
  const std::size_t runs = env_size("RUNS", 3);
  const std::size_t n = env_size("KEYS", 1'000'000);
  std::printf(
      "# reload of a policy holding %zu states (gcra 100/s burst 10 -> 200/s), a decision loop on another "
      "thread; wall ms\n",
      n);
  std::printf(
      "run\tquiet_max_ms\tquiet_p9999_ms\tquiet_over10\treload_max_ms\treload_p9999_ms\treload_over10\tdefine_"
      "ms\tcarried_"
      "ms\tdecisions\n");
  double worst = 0;
  double worst_quiet = 0;
  for (std::size_t r = 0; r < runs; ++r) {
    const run_result x = one_run(n, 11 + r);
    worst = std::max(worst, x.reload.max_ms);
    worst_quiet = std::max(worst_quiet, x.quiet.max_ms);
    std::printf("%zu\t%.3f\t%.3f\t%zu\t%.3f\t%.3f\t%zu\t%.3f\t%.1f\t%llu\n", r + 1, x.quiet.max_ms, x.quiet.p9999_ms,
                x.quiet.over_10ms, x.reload.max_ms, x.reload.p9999_ms, x.reload.over_10ms, x.define_ms, x.carried_ms,
                static_cast<unsigned long long>(x.decisions));
  }
  std::printf(
      "RESULT\tsluice\treload-stall-1M\t%.3f\tms\tlongest decision during a reload (target <= 10 ms; quiet "
      "stretch's longest %.3f ms)\n",
      worst, worst_quiet);
  return 0;
}
