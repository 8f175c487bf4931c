// The Redis Cluster benchmark: the same client (sluice::redis_store,
// pipelined decide_many_at of GCRA decisions over 100k keys) against one
// Redis and against a cluster, in the same run, runs interleaved. Prints
// the peers' RESULT lines (shared/peers/README.md, "Output contract"), the
// ratio, the CPU each server and the client used, and how long they were
// runnable but waited for a CPU (/proc/<pid>/stat and schedstat), which
// says what bounds the rate. bench/redis-cluster.sh starts the servers.
//
//   redis_cluster_bench --single redis://127.0.0.1:P --cluster redis+cluster://127.0.0.1:P1,...
//                       --single-pids PID --cluster-pids PID1,PID2,PID3
//                       [--threads 2] [--depth 64] [--ops 200000] [--runs 3]
//
// Every loop has a fixed count. Virtual time (`now` fixed): every decision
// admits and writes, as redis_bench's allow rows.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sluice/core/gcra.hpp"
#include "sluice/redis/store.hpp"
#include "summary.hpp"

namespace {

using steady = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "redis_cluster_bench: %s\n", what.c_str());
  std::exit(1);
}

/// utime + stime of process `pid`, in seconds (/proc/<pid>/stat fields 14, 15).
double process_cpu(long pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) die("cannot read /proc/" + std::to_string(pid) + "/stat");
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i)
    if (i >= 14) ticks += std::atof(field.c_str());
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// This process's CPU time (every thread), in seconds.
double self_cpu() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/// Seconds a task spent runnable but waiting for a CPU (the second field of
/// /proc/<path>/schedstat, in ns): "tid" of a server, or "thread-self".
double run_queue_wait(const std::string& path) {
  std::ifstream f("/proc/" + path + "/schedstat");
  double on_cpu = 0, waiting = 0;
  f >> on_cpu >> waiting;
  return waiting / 1e9;
}

std::vector<long> parse_pids(const std::string& s) {
  std::vector<long> out;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, ',');)
    if (!p.empty()) out.push_back(std::atol(p.c_str()));
  return out;
}

struct target {
  std::string name;  // "single", "cluster"
  std::string url;
  std::vector<long> pids;
  std::vector<double> ns_per_op;
  std::vector<double> server_cpu;   // CPU seconds per wall second, all servers together
  std::vector<double> client_cpu;   // the same for this process
  std::vector<double> busiest;      // the busiest server's
  std::vector<double> server_wait;  // run-queue wait per wall second, all servers together
  std::vector<double> client_wait;  // the same for the client threads
};

struct run_options {
  int threads = 2;
  std::size_t depth = 64;
  std::uint64_t ops = 200'000;  // per thread
};

/// One timed run against `t`: a fresh store and prefix, `threads` threads
/// each deciding `ops` requests in batches of `depth`.
void run_once(target& t, const run_options& ro, int run) {
  sluice::store_options o;
  o.url = t.url;
  o.key_prefix = "bench" + std::to_string(run) + ":";
  o.tick_ns = 0;
  o.command_timeout = std::chrono::seconds(5);
  o.connect_timeout = std::chrono::seconds(1);
  o.breaker_failures = 0;
  auto st = sluice::redis_store::open(o);
  if (!st) die(t.name + ": " + st.err().what());
  auto& store = *st.value();
  // 1 per tick, burst 2^40, `now` fixed: every decision admits (and writes).
  const auto pol = store.define("allow", sluice::gcra::make(sluice::rate{1, 1}, std::int64_t{1} << 40).value());
  if (!pol) die("define: " + pol.err().what());
  std::vector<std::string> keys;
  for (int i = 0; i < 100'000; ++i) keys.push_back("k" + std::to_string(i));
  auto work = [&](std::size_t first, std::uint64_t ops, std::uint64_t& admitted) {
    std::vector<sluice::check> checks(ro.depth);
    std::vector<sluice::store_request> reqs(ro.depth);
    std::vector<sluice::store_decision> out(ro.depth);
    std::size_t k = first;
    for (std::uint64_t done = 0; done < ops;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(ro.depth, ops - done));
      for (std::size_t i = 0; i < n; ++i) {
        checks[i] = {pol.value(), keys[k]};
        reqs[i] = sluice::store_request{std::span(&checks[i], 1), 1000, 1, {}};
        k = k + 1 == keys.size() ? 0 : k + 1;
      }
      store.decide_many_at(std::span(reqs.data(), n), std::span(out.data(), n));
      for (std::size_t i = 0; i < n; ++i) {
        if (out[i].from != sluice::source::store) die(t.name + ": answered from " + std::string(name_of(out[i].from)));
        admitted += out[i].d.allowed ? 1 : 0;
      }
      done += n;
    }
  };
  std::uint64_t warm = 0;
  work(0, ro.depth * 20, warm);  // connections, the library, the slot map
  std::vector<double> cpu0, wait0;
  for (const long p : t.pids) {
    cpu0.push_back(process_cpu(p));
    wait0.push_back(run_queue_wait(std::to_string(p)));
  }
  std::atomic<std::int64_t> client_wait_us{0};
  const double self0 = self_cpu();
  std::atomic<std::uint64_t> admitted{0};
  const auto t0 = steady::now();
  std::vector<std::thread> ts;
  for (int i = 0; i < ro.threads; ++i)
    ts.emplace_back([&, i] {
      const double w0 = run_queue_wait("thread-self");
      std::uint64_t a = 0;
      work(static_cast<std::size_t>(i) * 50'000, ro.ops, a);
      admitted += a;
      client_wait_us += static_cast<std::int64_t>((run_queue_wait("thread-self") - w0) * 1e6);
    });
  for (auto& th : ts) th.join();
  const double secs = std::chrono::duration<double>(steady::now() - t0).count();
  const std::uint64_t total = ro.ops * static_cast<std::uint64_t>(ro.threads);
  if (admitted != total) die(t.name + ": not every decision admitted");
  double servers = 0, busiest = 0, waited = 0;
  for (std::size_t i = 0; i < t.pids.size(); ++i) {
    const double used = process_cpu(t.pids[i]) - cpu0[i];
    servers += used;
    busiest = std::max(busiest, used);
    waited += run_queue_wait(std::to_string(t.pids[i])) - wait0[i];
  }
  t.server_wait.push_back(waited / secs);
  t.client_wait.push_back(static_cast<double>(client_wait_us.load()) / 1e6 / secs);
  t.ns_per_op.push_back(secs * 1e9 / static_cast<double>(total));
  t.server_cpu.push_back(servers / secs);
  t.busiest.push_back(busiest / secs);
  t.client_cpu.push_back((self_cpu() - self0) / secs);
}

void print(const target& t, const run_options& ro) {
  const auto s = sluice_bench::summarize(t.ns_per_op);
  const auto cpu = sluice_bench::summarize(t.server_cpu);
  const auto top = sluice_bench::summarize(t.busiest);
  const auto me = sluice_bench::summarize(t.client_cpu);
  const auto sw = sluice_bench::summarize(t.server_wait);
  const auto cw = sluice_bench::summarize(t.client_wait);
  std::printf(
      "RESULT\tsluice-redis\tredis-store-gcra-%s-%dthr-P%zu\t%.2f\t%.0f\t-\t%zu\t%.2f\t%.2f\tsluice::redis_store "
      "decide_many_at, GCRA, 100k keys, every call allowed, %d threads, batches of %zu, %s (%zu server "
      "process%s); CPU per wall second (median): servers %.2f (busiest %.2f), client %.2f; CPU per decision: "
      "servers %.1f us, client %.1f us; waiting for a CPU per wall second: servers %.2f, client threads %.2f\n",
      t.name.c_str(), ro.threads, ro.depth, s.median, 1e9 / s.median, s.n, s.lo, s.hi, ro.threads, ro.depth,
      t.url.c_str(), t.pids.size(), t.pids.size() == 1 ? "" : "es", cpu.median, top.median, me.median,
      cpu.median * s.median / 1e3, me.median * s.median / 1e3, sw.median, cw.median);
}

}  // namespace

int main(int argc, char** argv) {
  target single{"single", "", {}, {}, {}, {}, {}, {}, {}};
  target cluster{"cluster", "", {}, {}, {}, {}, {}, {}, {}};
  run_options ro;
  int runs = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--single")
      single.url = next();
    else if (a == "--cluster")
      cluster.url = next();
    else if (a == "--single-pids")
      single.pids = parse_pids(next());
    else if (a == "--cluster-pids")
      cluster.pids = parse_pids(next());
    else if (a == "--threads")
      ro.threads = std::clamp(std::atoi(next().c_str()), 1, 64);
    else if (a == "--depth")
      ro.depth = static_cast<std::size_t>(std::clamp(std::atoi(next().c_str()), 1, 256));
    else if (a == "--ops")
      ro.ops = static_cast<std::uint64_t>(std::clamp(std::atoll(next().c_str()), 1000LL, 100'000'000LL));
    else if (a == "--runs")
      runs = std::clamp(std::atoi(next().c_str()), 1, 100);
    else
      die("unknown option " + a + " (see the comment at the top of bench/redis_cluster_bench.cpp)");
  }
  if (single.url.empty() || cluster.url.empty() || single.pids.empty() || cluster.pids.empty())
    die("--single, --cluster, --single-pids and --cluster-pids are required");
  // Interleaved, so a change in the machine's load touches both alike.
  for (int r = 0; r < runs; ++r) {
    run_once(single, ro, r);
    run_once(cluster, ro, r);
    std::fprintf(stderr, "# run %d: single %.0f/s, cluster %.0f/s\n", r + 1, 1e9 / single.ns_per_op.back(),
                 1e9 / cluster.ns_per_op.back());
  }
  print(single, ro);
  print(cluster, ro);
  const double ratio =
      sluice_bench::summarize(single.ns_per_op).median / sluice_bench::summarize(cluster.ns_per_op).median;
  std::printf("# cluster / single decisions per second (medians): %.2f (issue target >= 2)\n", ratio);
  return 0;
}
