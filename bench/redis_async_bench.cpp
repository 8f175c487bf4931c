// The asynchronous client's pipelined throughput against its synchronous
// face, on the research's exact GCRA script (EVALSHA, 1 key, allowed), and
// TLS against plaintext. bench/redis-async.sh runs it beside redis-benchmark
// on the same server and prints the ratios.
//
//   redis_async_bench PLAIN_URL TLS_URL SHA [SECONDS_PER_RUN] [RUNS]
//
// Rows (RESULT lines as bench/redis_bench prints them: ns per call, calls/s):
//   sync-c1        sync_client (the synchronous face), 1 thread, one call at a time
//   sync-t2        sync_client, 2 threads, one call at a time each
//   async-inflight50      async_client, one connection, 50 calls in flight
//                         (each answer sends the next), one loop thread
//   async-face-t8  sync_client (the backend face), 8 threads calling at once
//   async-tls-inflight50  async-inflight50 over rediss://
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "redis/client/async_client.hpp"
#include "redis/client/sync_client.hpp"
#include "summary.hpp"

namespace {

using namespace sluice::redis;
using steady = std::chrono::steady_clock;
namespace asio = boost::asio;

std::string sha;
// gcra.lua's ARGV (bench/redis.sh's ALLOW): allowed, no TTL.
const std::vector<std::string_view> allow_args{"0", "1000", "1", "1", "0", "1000000000000000", "0", "1", "0"};

std::vector<std::string_view> command() {
  std::vector<std::string_view> argv{"EVALSHA", sha, "1", "rb:hot"};
  argv.insert(argv.end(), allow_args.begin(), allow_args.end());
  return argv;
}

// Calls per second of `threads` threads running `one` for `secs`.
template <class F>
double threaded(int threads, double secs, F one) {
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> done{0}, bad{0};
  std::vector<std::thread> ts;
  const auto t0 = steady::now();
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      std::uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (!one()) bad.fetch_add(1);
        ++n;
      }
      done.fetch_add(n);
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(secs));
  stop = true;
  for (auto& t : ts) t.join();
  const double s = std::chrono::duration<double>(steady::now() - t0).count();
  if (bad.load() != 0) std::fprintf(stderr, "# %llu failed calls\n", static_cast<unsigned long long>(bad.load()));
  return static_cast<double>(done.load()) / s;
}

// Calls per second of one async client with `inflight` calls outstanding.
double inflight(const std::string& text, int window, double secs) {
  asio::io_context io;
  async_client_options o;
  o.where = parse_url(text).value();
  o.command_timeout = std::chrono::seconds(5);
  o.connect_timeout = std::chrono::seconds(2);
  auto c = async_client::create(io.get_executor(), o).value();
  const auto argv = command();
  std::uint64_t done = 0, bad = 0;
  bool stop = false;
  int live = 0;
  steady::time_point t0{};
  std::function<void()> next = [&] {
    ++live;
    c->async_call(argv, [&](call_result r) {
      --live;
      if (!std::holds_alternative<reply>(r)) ++bad;
      ++done;
      if (!stop)
        next();
      else if (live == 0)
        io.stop();
    });
  };
  // Warm up (connect, load), then measure.
  bool up = false;
  c->async_call(argv, [&](call_result r) {
    up = std::holds_alternative<reply>(r);
    io.stop();
  });
  io.run();
  io.restart();
  if (!up) {
    std::fprintf(stderr, "# %s: the first call failed\n", text.c_str());
    return 0;
  }
  asio::steady_timer finish(io, std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(secs)));
  finish.async_wait([&](const boost::system::error_code&) { stop = true; });
  t0 = steady::now();
  for (int i = 0; i < window; ++i) asio::post(io, next);
  io.run();
  const double s = std::chrono::duration<double>(steady::now() - t0).count();
  if (bad != 0) std::fprintf(stderr, "# %llu failed calls\n", static_cast<unsigned long long>(bad));
  c->close();
  io.restart();
  io.run_for(std::chrono::milliseconds(200));
  return static_cast<double>(done) / s;
}

void report(const std::string& scenario, const std::vector<double>& per_sec, const std::string& note) {
  std::vector<double> ns;
  for (double r : per_sec) ns.push_back(1e9 / r);
  const auto s = sluice_bench::summarize(ns);
  std::printf("RESULT\tsluice-redis-async\t%s\t%.2f\t%.0f\t-\t%zu\t%.2f\t%.2f\t%s\n", scenario.c_str(), s.median,
              1e9 / s.median, s.n, s.lo, s.hi, note.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: redis_async_bench PLAIN_URL TLS_URL SHA [SECONDS_PER_RUN] [RUNS]\n");
    return 2;
  }
  const std::string plain = argv[1], tls = argv[2];
  sha = argv[3];
  const double secs = argc > 4 ? std::atof(argv[4]) : 1.0;
  const int runs = argc > 5 ? std::atoi(argv[5]) : 3;
  const auto argvs = command();

  async_client_options ao;
  ao.where = parse_url(plain).value();
  ao.command_timeout = std::chrono::seconds(5);
  auto face = sync_client::open(ao).value();
  auto one_face = [&] { return std::holds_alternative<reply>(face->call(argvs)); };
  auto one_sync = one_face;

  std::vector<double> s1, s2, a50, f8, t50;
  for (int r = 0; r < runs; ++r) {  // interleaved, so a noisy moment spreads over every row
    s1.push_back(threaded(1, secs, one_sync));
    s2.push_back(threaded(2, secs, one_sync));
    a50.push_back(inflight(plain, 50, secs));
    f8.push_back(threaded(8, secs, one_face));
    t50.push_back(inflight(tls, 50, secs));
  }
  report("sync-c1", s1, "sync_client (synchronous face of async_client), 1 thread, 1 call at a time");
  report("sync-t2", s2, "sync_client, 2 threads, 1 call at a time each, 1 connection");
  report("async-inflight50", a50, "async_client, 1 connection, 50 calls in flight, 1 loop thread");
  report("async-face-t8", f8, "sync_client (backend face of async_client), 8 threads at once, 1 connection");
  report("async-tls-inflight50", t50, "async_client over rediss://, 1 connection, 50 calls in flight");
  return 0;
}
