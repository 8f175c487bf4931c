// The Redis benchmark of sluice::redis: decisions per second through the
// client layer (the asynchronous client's synchronous face, one pipelined connection) running
// the research's exact GCRA script (research/redis-lab/gcra.lua) by EVALSHA,
// and the exact deny cache on 90%-denied traffic. Prints the peers' RESULT
// lines (shared/peers/README.md, "Output contract"); bench/redis.sh runs it
// beside redis-benchmark on the same server in the same run.
//
//   redis_bench --url redis://127.0.0.1:PORT --script PATH/gcra.lua [--runs 3] [--filter SUBSTRING] [--scale X]
//               [--suffix S]   (S appended to every row's name: bench/redis.sh's WAIT rows)
//
// Every loop is bounded by a fixed count. Virtual time: `now` is fixed, so
// an allowed decision writes (debt grows, tolerance never reached) and a
// denied one is a pure read, as in research/redis-lab/bench.sh.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <initializer_list>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "redis/client/async_client.hpp"
#include "redis/client/sync_client.hpp"
#include "sluice/remote/deny_cache.hpp"
#if __has_include("sluice/redis.hpp")
#include "sluice/core/gcra.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/redis/store.hpp"
#endif

namespace {

using namespace sluice::redis;
using sluice::remote::deny_cache;
using steady = std::chrono::steady_clock;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "redis_bench: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// --scale: every fixed count times this (a loaded machine needs fewer), in
// multiples of 160 so the 1-in-10 mix and every pipeline depth divide it.
double g_scale = 1.0;
std::uint64_t scaled(std::uint64_t n) {
  const auto v = static_cast<std::uint64_t>(static_cast<double>(n) * g_scale);
  return std::max<std::uint64_t>(160, v / 160 * 160);
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "redis_bench: %s\n", what.c_str());
  std::exit(1);
}

// gcra.lua's ARGV: nh nl L' cq cr sq sr mode ttl_ms. Allow: cost 1 tick of
// debt, tolerance 10^15 (never reached). Deny: cost = tolerance = 10^9, so
// the first call on a key admits and every later one (same now) is denied.
const std::vector<std::string_view> allow_args = {"0", "1000", "1", "1", "0", "1000000000000000", "0", "1", "0"};
const std::vector<std::string_view> deny_args = {"0", "1000", "1", "1000000000", "0", "1000000000", "0", "1", "0"};

struct gcra_caller {
  std::string sha;
  // argv of EVALSHA sha 1 key args...
  std::vector<std::string_view> argv(std::string_view key, const std::vector<std::string_view>& args) const {
    std::vector<std::string_view> v{"EVALSHA", sha, "1", key};
    v.insert(v.end(), args.begin(), args.end());
    return v;
  }
};

// The reply of gcra.lua: {allowed, retry, dq, dr, eh, el}.
bool decode_allowed(const reply& r, std::int64_t* retry = nullptr) {
  const auto* a = r.as_array();
  if (a == nullptr || a->size() != 6) die("gcra.lua replied " + (r.is_error() ? r.str : std::string("a bad shape")));
  const auto allowed = (*a)[0].as_integer();
  const auto ra = (*a)[1].as_integer();
  if (!allowed || !ra) die("gcra.lua replied non-integers");
  if (retry != nullptr) *retry = *ra;
  return *allowed == 1;
}

struct outcome {
  std::uint64_t ops = 0;
  std::uint64_t allowed = 0;
};

// The client layer as the store uses it: the synchronous face of the
// asynchronous client (one connection), with a pipeline of commands.
class client {
 public:
  explicit client(async_client_options o) {
    auto c = sync_client::open(std::move(o));
    if (!c) die(c.err().what());
    c_ = std::move(c).value();
  }
  call_result call(std::span<const std::string_view> argv) { return c_->call(argv); }
  call_result call(std::initializer_list<std::string_view> argv) { return c_->call(argv); }
  batch_result pipeline(std::span<const std::vector<std::string_view>> commands) {
    std::promise<batch_result> p;
    auto f = p.get_future();
    dynamic_cast<async_client&>(c_->async()).async_pipeline(commands, [&p](batch_result r) {
      p.set_value(std::move(r));
    });
    return f.get();
  }

 private:
  std::unique_ptr<sync_client> c_;
};

// Runs `ops` decisions on `keys` distinct keys (cycling), `depth` per pipeline.
outcome run_gcra(client& c, const gcra_caller& g, const std::vector<std::string>& keys, std::size_t offset, bool allow,
                 std::uint64_t ops, std::size_t depth) {
  outcome o;
  const auto& args = allow ? allow_args : deny_args;
  std::vector<std::vector<std::string_view>> batch;
  std::size_t k = offset;
  for (std::uint64_t done = 0; done < ops;) {
    batch.clear();
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(depth, ops - done));
    for (std::size_t i = 0; i < n; ++i) {
      batch.push_back(g.argv(keys[k], args));
      k = k + 1 == keys.size() ? 0 : k + 1;
    }
    if (n == 1) {
      auto r = c.call(batch[0]);
      if (auto* e = std::get_if<call_error>(&r)) die(e->what());
      o.allowed += decode_allowed(std::get<reply>(r)) ? 1 : 0;
    } else {
      auto r = c.pipeline(batch);
      if (auto* e = std::get_if<call_error>(&r)) die(e->what());
      for (const auto& rep : std::get<std::vector<reply>>(r)) o.allowed += decode_allowed(rep) ? 1 : 0;
    }
    done += n;
    o.ops += n;
  }
  return o;
}

std::vector<std::string> make_keys(const std::string& prefix, std::size_t n) {
  std::vector<std::string> keys;
  keys.reserve(n);
  for (std::size_t i = 0; i < n; ++i) keys.push_back(prefix + std::to_string(i));
  return keys;
}

struct result_row {
  std::string scenario;
  std::string note;
  std::vector<double> ns_per_op{};
  std::vector<double> cpu_ns_per_op{};  // the client thread's CPU time (single-thread rows)
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// --suffix: appended to every row's name (the same rows against a server
// with a replica, with and without ?wait_replicas=1 in --url).
std::string g_suffix;

void print(const result_row& r) {
  std::vector<double> v = r.ns_per_op;
  std::sort(v.begin(), v.end());
  const double med = median(v);
  std::string note = r.note;
  if (!r.cpu_ns_per_op.empty()) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "; client thread CPU %.1f ns/op (median)", median(r.cpu_ns_per_op));
    note += buf;
  }
  std::printf("RESULT\tsluice-redis\t%s%s\t%.2f\t%.0f\t-\t%zu\t%.2f\t%.2f\t%s\n", r.scenario.c_str(), g_suffix.c_str(),
              med, 1e9 / med, v.size(), v.front(), v.back(), note.c_str());
  std::fflush(stdout);
}

double thread_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

double seconds_since(steady::time_point t0) { return std::chrono::duration<double>(steady::now() - t0).count(); }

#if __has_include("sluice/redis.hpp")
#define SLUICE_BENCH_HAVE_STORE 1
// Whether this redis_store has the deny cache option (added while both were built).
template <typename Options>
constexpr bool has_deny_cache = requires(Options o) {
  o.deny_cache = true;
};

template <typename Options>
void set_deny_cache(Options& o, bool on) {
  if constexpr (has_deny_cache<Options>) o.deny_cache = on;
}

// The store's own decision path (sluice::redis_store: its FUNCTION library,
// int128 protocol, failure handling), on the same server.
void bench_store(const std::string& url_text, int runs, const std::function<bool(const std::string&)>& wanted,
                 const std::function<void()>& flush) {
  using sluice::check;
  using sluice::redis_store;
  using sluice::store_decision;
  using sluice::store_request;
  auto make_store = [&](bool with_cache) {
    sluice::store_options o;
    o.url = url_text;
    o.key_prefix = "bench:";
    // Nanosecond ticks, as a deployment: every write's PX is computed from
    // the state (time to fresh + grace), the contract's TTL.
    o.tick_ns = 1;
    o.command_timeout = std::chrono::milliseconds(2000);
    o.connect_timeout = std::chrono::milliseconds(1000);
    set_deny_cache(o, with_cache);
    auto st = redis_store::open(o);
    if (!st) die("redis_store::open: " + st.err().what());
    return std::move(st).value();
  };
  // allow: 1 per tick, burst 2^40, now fixed: every decision admits (writes).
  // deny: 1 per 10^12 ticks, burst 1: a key's first decision admits, every later one is denied.
  const sluice::any_policy allow_p = sluice::gcra::make(sluice::rate{1, 1}, std::int64_t{1} << 40).value();
  const sluice::any_policy deny_p = sluice::gcra::make(sluice::rate{1, 1'000'000'000'000}, 1).value();
  const auto one_key = make_keys("hot", 1);
  const auto many_keys = make_keys("k", 100000);
  struct sc {
    std::string name;
    bool allow;
    const std::vector<std::string>* keys;
    std::size_t depth;
    int threads;
    std::uint64_t ops;
    bool overridden = false;  // the key has an override (docs/redis.md, "Overrides"), known to the process
  };
  // An override of `allow_p` (burst 2^41): every decision still admits.
  const sluice::any_policy override_p = sluice::gcra::make(sluice::rate{1, 1}, std::int64_t{1} << 41).value();
  const std::vector<sc> scs = {
      {"redis-store-gcra-1key-allow-P1", true, &one_key, 1, 1, 10000},
      {"redis-store-gcra-1key-allow-P16", true, &one_key, 16, 1, 60000},
      {"redis-store-gcra-1key-allow-overridden-P1", true, &one_key, 1, 1, 10000, true},
      {"redis-store-gcra-1key-allow-overridden-P16", true, &one_key, 16, 1, 60000, true},
      {"redis-store-gcra-1key-allow-2thr-P1", true, &one_key, 1, 2, 8000},
      {"redis-store-gcra-1key-allow-2thr-P16", true, &one_key, 16, 2, 40000},
      {"redis-store-gcra-1key-deny-P1", false, &one_key, 1, 1, 10000},
      {"redis-store-gcra-1key-deny-P16", false, &one_key, 16, 1, 60000},
      {"redis-store-gcra-1key-deny-2thr-P16", false, &one_key, 16, 2, 40000},
      {"redis-store-gcra-100kkeys-allow-P1", true, &many_keys, 1, 1, 10000},
      {"redis-store-gcra-100kkeys-allow-P16", true, &many_keys, 16, 1, 60000},
      {"redis-store-gcra-100kkeys-deny-P16", false, &many_keys, 16, 1, 60000},
  };
  auto run = [](redis_store& st, sluice::policy_id pol, const std::vector<std::string>& keys, std::size_t offset,
                std::uint64_t ops, std::size_t depth, std::uint64_t& allowed) {
    std::vector<check> checks(depth);
    std::vector<store_request> reqs(depth);
    std::vector<store_decision> out(depth);
    std::size_t k = offset;
    for (std::uint64_t done = 0; done < ops;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(depth, ops - done));
      for (std::size_t i = 0; i < n; ++i) {
        checks[i] = check{pol, keys[k]};
        reqs[i] = store_request{std::span(&checks[i], 1), 1000, 1, {}};
        k = k + 1 == keys.size() ? 0 : k + 1;
      }
      if (n == 1) {
        out[0] = st.decide_at(reqs[0]);
      } else {
        st.decide_many_at(std::span(reqs.data(), n), std::span(out.data(), n));
      }
      for (std::size_t i = 0; i < n; ++i) {
        if (out[i].from != sluice::source::store && out[i].from != sluice::source::deny_cache)
          die(std::string("redis_store answered from ") + std::string(sluice::name_of(out[i].from)));
        allowed += out[i].d.allowed ? 1 : 0;
      }
      done += n;
    }
  };
  for (const auto& s : scs) {
    if (!wanted(s.name)) continue;
    result_row row{s.name,
                   std::string("sluice::redis_store decide_at") + (s.depth > 1 ? "/decide_many_at" : "") +
                       ", GCRA (FCALL of its library), " + (s.keys->size() == 1 ? "1 key" : "100k keys (cycled)") +
                       ", " + (s.allow ? "every call allowed" : "every call denied") +
                       (s.overridden ? ", the key overridden" : "") + ", " + std::to_string(s.threads) +
                       " thread(s), batches of " + std::to_string(s.depth),
                   {}};
    for (int r = 0; r < runs; ++r) {
      flush();
      auto st = make_store(false);
      const auto pol = st->define(s.allow ? "allow" : "deny", s.allow ? allow_p : deny_p);
      if (!pol) die("define: " + pol.err().what());
      if (s.overridden)
        if (auto ov = st->set_override_at(pol.value(), (*s.keys)[0], override_p, 1000); !ov)
          die("set_override_at: " + ov.err().what());
      if (!s.allow) {
        std::uint64_t a = 0;
        run(*st, pol.value(), *s.keys, 0, s.keys->size(), 64, a);
        if (a != s.keys->size()) die("store deny set-up: a key was not spent by its first call");
      }
      std::atomic<std::uint64_t> allowed{0};
      const auto t0 = steady::now();
      std::vector<std::thread> ts;
      for (int t = 0; t < s.threads; ++t)
        ts.emplace_back([&, t] {
          std::uint64_t a = 0;
          run(*st, pol.value(), *s.keys, static_cast<std::size_t>(t) * 7919 % s.keys->size(), scaled(s.ops), s.depth,
              a);
          allowed += a;
        });
      for (auto& t : ts) t.join();
      const double secs = seconds_since(t0);
      const std::uint64_t total = scaled(s.ops) * static_cast<std::uint64_t>(s.threads);
      if (s.allow ? allowed.load() != total : allowed.load() != 0)
        die(s.name + ": decisions were not all " + (s.allow ? "allowed" : "denied"));
      row.ns_per_op.push_back(secs * 1e9 / static_cast<double>(total));
    }
    print(row);
  }
  // Leases (semantics.md, "Leases in a Redis store"): a concurrency policy's
  // acquire (decide_at: one FCALL) and its release (release_at: one FCALL),
  // beside the GCRA rows of the same run. The FCALLs are counted by Redis
  // itself (INFO commandstats), so "a release is one call" is measured, not
  // assumed.
  {
    async_client_options co;
    co.where = parse_url(url_text).value();
    co.command_timeout = std::chrono::milliseconds(2000);
    client stats_client(co);
    const auto fcalls = [&]() -> std::uint64_t {
      auto r = stats_client.call({"INFO", "commandstats"});
      const auto* rep = std::get_if<reply>(&r);
      const auto text = rep != nullptr ? rep->as_string() : std::nullopt;
      if (!text) die("INFO commandstats failed");
      const auto at = text->find("cmdstat_fcall:calls=");
      if (at == std::string_view::npos) return 0;
      return std::strtoull(std::string(text->substr(at + 20, 24)).c_str(), nullptr, 10);
    };
    const sluice::any_policy conc = sluice::parse_policy("concurrency 5 lease=30s").value();
    const sluice::any_policy both = sluice::parse_policy("all(gcra 1/1ns burst=1099511627776, concurrency 5)").value();
    struct lease_sc {
      std::string name;
      const sluice::any_policy* p;
      const std::vector<std::string>* keys;
      bool release;
    };
    const std::vector<lease_sc> lscs = {
        {"redis-store-concurrency-100kkeys-acquire-P1", &conc, &many_keys, false},
        {"redis-store-concurrency-1key-acquire-release-P1", &conc, &one_key, true},
        {"redis-store-gcra+concurrency-1key-acquire-release-P1", &both, &one_key, true},
    };
    for (const auto& s : lscs) {
      if (!wanted(s.name)) continue;
      result_row row{s.name,
                     std::string("sluice::redis_store, ") +
                         (s.p == &conc ? "concurrency 5" : "all(gcra, concurrency 5)") + ", 1 thread, " +
                         (s.release ? "per op: decide_at (admit, one FCALL) then release_at (one FCALL) on 1 key"
                                    : "per op: decide_at (admit, one FCALL) on a new key of 100k (one lease each)"),
                     {}};
      double calls_per_op = 0;
      for (int r = 0; r < runs; ++r) {
        flush();
        auto st = make_store(false);
        const auto pol = st->define("lease", *s.p);
        if (!pol) die("define: " + pol.err().what());
        // An acquire alone takes a new key each time (one lease each); an
        // acquire and its release cycle over the keys (on one key: 10,000 pairs).
        const std::uint64_t ops = s.release ? scaled(10000) : std::min<std::uint64_t>(scaled(10000), s.keys->size());
        const std::uint64_t f0 = fcalls();
        const auto t0 = steady::now();
        for (std::uint64_t i = 0; i < ops; ++i) {
          const check c{pol.value(), (*s.keys)[i % s.keys->size()]};
          const store_decision d = st->decide_at(store_request{std::span(&c, 1), 1000, 1, {}});
          if (d.from != sluice::source::store || !d.d.allowed || d.lease == 0)
            die(s.name + ": an acquire was not admitted");
          if (s.release) {
            const sluice::release_result rr = st->release_at(std::span(&c, 1), d.lease, 1000);
            if (rr.from != sluice::source::store || rr.units != 1) die(s.name + ": a release freed nothing");
          }
        }
        const double secs = seconds_since(t0);
        calls_per_op = static_cast<double>(fcalls() - f0) / static_cast<double>(ops);
        row.ns_per_op.push_back(secs * 1e9 / static_cast<double>(ops));
      }
      char buf[96];
      std::snprintf(buf, sizeof buf, "; FCALLs per op (INFO commandstats): %.3f", calls_per_op);
      row.note += buf;
      print(row);
    }
  }
  // The store's own deny cache on 90%-denied traffic, 1 thread (as
  // redis-denycache-90pct-*): batches of `depth` requests (decide_many_at),
  // of which the misses (about a tenth) go to Redis in one pipeline.
  for (std::size_t depth : {std::size_t{1}, std::size_t{16}, std::size_t{64}, std::size_t{256}, std::size_t{1024}}) {
    const std::string name = "redis-store-denycache-90pct-deny-P" + std::to_string(depth);
    if (!wanted(name)) continue;
    if (!has_deny_cache<sluice::store_options>) {
      std::fprintf(stderr, "# %s: this redis_store has no deny_cache option; row skipped\n", name.c_str());
      continue;
    }
    result_row row{name,
                   "sluice::redis_store with deny_cache, GCRA, 1 thread: 90% of requests on 1000 spent keys, 10% on "
                   "100 admitted keys, batches of " +
                       std::to_string(depth),
                   {}};
    const auto abusive = make_keys("abuse", 1000);
    const auto normal = make_keys("ok", 100);
    const std::uint64_t ops = scaled(depth == 1 ? 100000 : 1000000);
    for (int r = 0; r < runs; ++r) {
      flush();
      auto st = make_store(true);
      const auto pa = st->define("allow", allow_p);
      const auto pd = st->define("deny", deny_p);
      if (!pa || !pd) die("define failed");
      std::uint64_t a = 0;
      run(*st, pd.value(), abusive, 0, abusive.size(), 64, a);  // spend, untimed
      std::vector<check> checks(depth);
      std::vector<store_request> reqs(depth);
      std::vector<store_decision> out(depth);
      std::uint64_t allowed = 0, cached = 0;
      std::size_t ai = 0, ni = 0;
      const auto t0 = steady::now();
      const double c0 = thread_cpu_ns();
      for (std::uint64_t done = 0; done < ops;) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(depth, ops - done));
        for (std::size_t i = 0; i < n; ++i) {
          const bool is_normal = (done + i) % 10 == 9;
          const std::string& key = is_normal ? normal[ni] : abusive[ai];
          if (is_normal)
            ni = ni + 1 == normal.size() ? 0 : ni + 1;
          else
            ai = ai + 1 == abusive.size() ? 0 : ai + 1;
          checks[i] = check{is_normal ? pa.value() : pd.value(), key};
          reqs[i] = store_request{std::span(&checks[i], 1), 1000, 1, {}};
        }
        if (n == 1)
          out[0] = st->decide_at(reqs[0]);
        else
          st->decide_many_at(std::span(reqs.data(), n), std::span(out.data(), n));
        for (std::size_t i = 0; i < n; ++i) {
          allowed += out[i].d.allowed ? 1 : 0;
          cached += out[i].from == sluice::source::deny_cache ? 1 : 0;
        }
        done += n;
      }
      const double secs = seconds_since(t0);
      row.cpu_ns_per_op.push_back((thread_cpu_ns() - c0) / static_cast<double>(ops));
      if (allowed != ops / 10) die(name + ": wrong mix of decisions");
      row.ns_per_op.push_back(secs * 1e9 / static_cast<double>(ops));
      if (r == 0)
        std::fprintf(stderr, "# %s: %llu answered by the deny cache, %llu by Redis\n", name.c_str(),
                     static_cast<unsigned long long>(cached), static_cast<unsigned long long>(ops - cached));
    }
    print(row);
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  std::string url_text, script_path, filter;
  int runs = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "redis_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--url")
      url_text = next();
    else if (a == "--script")
      script_path = next();
    else if (a == "--runs")
      runs = std::max(1, std::atoi(next().c_str()));
    else if (a == "--filter")
      filter = next();
    else if (a == "--scale")
      g_scale = std::clamp(std::atof(next().c_str()), 0.001, 100.0);
    else if (a == "--suffix")
      g_suffix = next();
    else {
      std::fprintf(
          stderr, "usage: redis_bench --url redis://host:port --script gcra.lua [--runs N] [--filter S] [--scale X]\n");
      return 2;
    }
  }
  if (url_text.empty() || script_path.empty()) {
    std::fprintf(stderr,
                 "usage: redis_bench --url redis://host:port --script gcra.lua [--runs N] [--filter S] [--scale X]\n");
    return 2;
  }
  auto where = parse_url(url_text);
  if (!where) {
    std::fprintf(stderr, "redis_bench: --url: %s\n", where.err().what().c_str());
    return 2;
  }
  async_client_options opts;
  opts.where = where.value();
  opts.command_timeout = std::chrono::milliseconds(2000);
  opts.connect_timeout = std::chrono::milliseconds(1000);
  client c(opts);

  const std::string script = slurp(script_path);
  auto loaded = c.call({"SCRIPT", "LOAD", script});
  if (auto* e = std::get_if<call_error>(&loaded)) die("SCRIPT LOAD: " + e->what());
  gcra_caller g{std::string(std::get<reply>(loaded).as_string().value_or(""))};

  auto wanted = [&](const std::string& sc) { return filter.empty() || sc.find(filter) != std::string::npos; };
  auto flush = [&] {
    auto r = c.call({"FLUSHALL"});
    if (auto* e = std::get_if<call_error>(&r)) die("FLUSHALL: " + e->what());
  };

  const auto one_key = make_keys("bench:hot", 1);
  const auto many_keys = make_keys("bench:k:", 100000);

  // ---- the GCRA script through the client -----------------------------------
  struct gcra_scenario {
    std::string name;
    bool allow;
    const std::vector<std::string>* keys;
    std::size_t depth;
    int threads;
    std::uint64_t ops;  // per thread
  };
  const std::vector<gcra_scenario> scenarios = {
      {"redis-gcra-1key-allow-P1", true, &one_key, 1, 1, 10000},
      {"redis-gcra-1key-allow-P16", true, &one_key, 16, 1, 60000},
      {"redis-gcra-1key-allow-2thr-P1", true, &one_key, 1, 2, 8000},
      {"redis-gcra-1key-allow-2thr-P16", true, &one_key, 16, 2, 40000},
      {"redis-gcra-1key-deny-P1", false, &one_key, 1, 1, 10000},
      {"redis-gcra-1key-deny-P16", false, &one_key, 16, 1, 60000},
      {"redis-gcra-1key-deny-2thr-P1", false, &one_key, 1, 2, 8000},
      {"redis-gcra-1key-deny-2thr-P16", false, &one_key, 16, 2, 40000},
      {"redis-gcra-100kkeys-allow-P1", true, &many_keys, 1, 1, 10000},
      {"redis-gcra-100kkeys-allow-P16", true, &many_keys, 16, 1, 60000},
      {"redis-gcra-100kkeys-allow-2thr-P16", true, &many_keys, 16, 2, 40000},
      {"redis-gcra-100kkeys-deny-P1", false, &many_keys, 1, 1, 10000},
      {"redis-gcra-100kkeys-deny-P16", false, &many_keys, 16, 1, 60000},
      {"redis-gcra-100kkeys-deny-2thr-P16", false, &many_keys, 16, 2, 40000},
  };
  for (const auto& s : scenarios) {
    if (!wanted(s.name)) continue;
    result_row row{s.name,
                   std::string("sluice::redis client, EVALSHA research gcra.lua, ") +
                       (s.keys->size() == 1 ? "1 key" : "100k keys (cycled)") + ", " +
                       (s.allow ? "every call allowed (GET+SET)" : "every call denied (read-only)") + ", " +
                       std::to_string(s.threads) + " thread(s) with a connection each, pipeline " +
                       std::to_string(s.depth),
                   {}};
    for (int r = 0; r < runs; ++r) {
      flush();
      if (!s.allow) {  // the first call of a key admits: spend every key first, untimed
        const auto o = run_gcra(c, g, *s.keys, 0, false, s.keys->size(), 64);
        if (o.allowed != s.keys->size()) die("deny set-up: a key was not spent by its first call");
      }
      std::atomic<std::uint64_t> ops{0}, allowed{0};
      const auto t0 = steady::now();
      std::vector<std::thread> ts;
      for (int t = 0; t < s.threads; ++t)
        ts.emplace_back([&, t] {
          const auto o =
              run_gcra(c, g, *s.keys, static_cast<std::size_t>(t) * 7919 % s.keys->size(), s.allow, s.ops, s.depth);
          ops += o.ops;
          allowed += o.allowed;
        });
      for (auto& t : ts) t.join();
      const double secs = seconds_since(t0);
      if (s.allow ? allowed.load() != ops.load() : allowed.load() != 0)
        die(s.name + ": decisions were not all " + (s.allow ? "allowed" : "denied"));
      row.ns_per_op.push_back(secs * 1e9 / static_cast<double>(ops.load()));
    }
    print(row);
  }

  // ---- INCR through the client (the client's own overhead vs redis-benchmark) ----
  for (std::size_t depth : {std::size_t{1}, std::size_t{16}}) {
    const std::string name = "redis-incr-client-P" + std::to_string(depth);
    if (!wanted(name)) continue;
    result_row row{name, "sluice::redis client, INCR one key, 1 connection, pipeline " + std::to_string(depth), {}};
    const std::uint64_t ops = scaled(depth == 1 ? 10000 : 160000);
    const std::vector<std::vector<std::string_view>> batch(depth, std::vector<std::string_view>{"INCR", "bench:n"});
    for (int r = 0; r < runs; ++r) {
      const auto t0 = steady::now();
      for (std::uint64_t done = 0; done < ops; done += depth) {
        if (depth == 1) {
          if (std::holds_alternative<call_error>(c.call(batch[0]))) die("INCR failed");
        } else if (std::holds_alternative<call_error>(c.pipeline(batch))) {
          die("INCR pipeline failed");
        }
      }
      row.ns_per_op.push_back(seconds_since(t0) * 1e9 / static_cast<double>(ops));
    }
    print(row);
  }

  // ---- the deny cache --------------------------------------------------------
  // 90%-denied traffic from one thread: 9 of 10 requests come from 1,000
  // abusive keys (spent: the store denies them, "retry after 1e9 ticks"), 1 of
  // 10 from 100 normal keys (admitted). The cache answers an abusive key
  // after its first denial; every other request goes to Redis (one by one, or
  // the misses of a run of requests pipelined 16 at a time).
  const auto abusive = make_keys("bench:abuse:", 1000);
  const auto normal = make_keys("bench:ok:", 100);
  for (std::size_t depth : {std::size_t{1}, std::size_t{16}, std::size_t{64}}) {
    const std::string name = "redis-denycache-90pct-deny-P" + std::to_string(depth);
    if (!wanted(name)) continue;
    result_row row{name,
                   "deny cache + sluice::redis, EVALSHA gcra.lua, 1 thread: 90% of requests on 1000 spent keys "
                   "(cached after their first denial), 10% on 100 admitted keys (to Redis), misses pipelined " +
                       std::to_string(depth),
                   {}};
    const std::uint64_t ops = scaled(depth == 1 ? 100000 : 1000000);
    for (int r = 0; r < runs; ++r) {
      flush();
      run_gcra(c, g, abusive, 0, false, abusive.size(), 64);  // spend the abusive keys, untimed
      deny_cache cache;
      std::uint64_t denied = 0, allowed = 0, cached = 0;
      std::vector<std::vector<std::string_view>> batch;
      std::vector<const std::string*> batch_keys;
      auto send = [&] {
        if (batch.empty()) return;
        auto res = c.pipeline(batch);
        if (auto* e = std::get_if<call_error>(&res)) die(e->what());
        const auto& reps = std::get<std::vector<reply>>(res);
        for (std::size_t i = 0; i < reps.size(); ++i) {
          std::int64_t retry = 0;
          if (decode_allowed(reps[i], &retry)) {
            ++allowed;
          } else {
            ++denied;
            cache.insert(1, 1, *batch_keys[i], 1, 1000, retry < 0 ? sluice::never : retry);
          }
        }
        batch.clear();
        batch_keys.clear();
      };
      const auto t0 = steady::now();
      const double c0 = thread_cpu_ns();
      std::size_t ai = 0, ni = 0;
      for (std::uint64_t i = 0; i < ops; ++i) {
        const bool is_normal = i % 10 == 9;
        const std::string& key = is_normal ? normal[ni] : abusive[ai];
        if (is_normal)
          ni = ni + 1 == normal.size() ? 0 : ni + 1;
        else
          ai = ai + 1 == abusive.size() ? 0 : ai + 1;
        if (cache.lookup(1, 1, key, 1, 1000)) {
          ++denied;
          ++cached;
          continue;
        }
        batch.push_back(g.argv(key, is_normal ? allow_args : deny_args));
        batch_keys.push_back(&key);
        if (batch.size() == depth) send();
      }
      send();
      const double secs = seconds_since(t0);
      row.cpu_ns_per_op.push_back((thread_cpu_ns() - c0) / static_cast<double>(ops));
      if (denied + allowed != ops || allowed != ops / 10) die(name + ": wrong mix of decisions");
      row.ns_per_op.push_back(secs * 1e9 / static_cast<double>(ops));
      if (r == 0)
        std::fprintf(stderr, "# %s: %llu answered by the cache, %llu by Redis\n", name.c_str(),
                     static_cast<unsigned long long>(cached), static_cast<unsigned long long>(ops - cached));
    }
    print(row);
  }

  // The cache alone: a lookup that hits (a cached denial), 1 thread.
  if (wanted("denycache-lookup-hit")) {
    result_row row{
        "denycache-lookup-hit", "deny_cache::lookup of a cached denial, 1 thread, 1000 keys cycled, no Redis", {}};
    deny_cache cache;
    for (const auto& k : abusive) cache.insert(1, 1, k, 1, 0, 1'000'000);
    const std::uint64_t ops = scaled(5'000'000);
    for (int r = 0; r < runs; ++r) {
      std::uint64_t hits = 0;
      std::size_t ai = 0;
      const auto t0 = steady::now();
      const double c0 = thread_cpu_ns();
      for (std::uint64_t i = 0; i < ops; ++i) {
        hits += cache.lookup(1, 1, abusive[ai], 1, static_cast<sluice::tick>(i & 1023)).has_value() ? 1 : 0;
        ai = ai + 1 == abusive.size() ? 0 : ai + 1;
      }
      const double secs = seconds_since(t0);
      row.cpu_ns_per_op.push_back((thread_cpu_ns() - c0) / static_cast<double>(ops));
      if (hits != ops) die("deny cache lookups missed");
      row.ns_per_op.push_back(secs * 1e9 / static_cast<double>(ops));
    }
    print(row);
  }
#ifdef SLUICE_BENCH_HAVE_STORE
  bench_store(url_text, runs, wanted, flush);
#else
  std::fprintf(stderr, "# redis_bench: built without sluice::redis_store (sluice/redis.hpp): no redis-store-* rows\n");
#endif
  return 0;
}
