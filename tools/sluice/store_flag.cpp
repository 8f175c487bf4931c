#include "store_flag.hpp"

#include <cstdio>
#include <cstdlib>
#include <random>

#include "sluice/redact.hpp"
#include "trace.hpp"

#ifdef SLUICE_HAVE_REDIS
#include "sluice/redis.hpp"
#endif

namespace sluice::cli {

void add_store_flag(CLI::App& cmd, std::string& spec, std::string* prefix) {
#ifdef SLUICE_HAVE_REDIS
  cmd.add_option("--store", spec,
                 "where the states live: memory (default: this process), redis://[user:password@]host:port[/db], "
                 "rediss://... (TLS; ca_file, cert_file, key_file, server_name, verify=no as query parameters), "
                 "unix://[user:password@]/path[?db=N], redis+cluster://host:port[,host:port...] (a Redis "
                 "Cluster), or redis+sentinel://host:port[,host:port...]/MASTER[/db] (rediss+sentinel:// with TLS); "
                 "the password may come from $SLUICE_REDIS_PASSWORD instead");
  if (prefix != nullptr)
    cmd.add_option("--store-prefix", *prefix, "the Redis store's key prefix (default: a fresh random one per run)");
#else
  cmd.add_option("--store", spec, "where the states live: memory (default: this process)");
  (void)prefix;
#endif
}

namespace {
constexpr const char* kinds =
#ifdef SLUICE_HAVE_REDIS
    "memory, redis://host:port[/db], rediss://host:port[/db] (TLS), unix:///path, "
    "redis+cluster://host:port[,host:port...], redis+sentinel://host:port[,host:port...]/MASTER[/db]";
#else
    "memory";
#endif
}  // namespace

result<made_store> make_store(std::string_view spec, const store_setup& setup) {
  if (spec.empty()) return error{"--store", std::string("is empty (") + kinds + ")"};
  if (spec == "memory") {
    memory_store_options o;
    o.keyed = setup.keyed;
    auto m = std::make_unique<memory_store>(o);
    made_store out;
    out.memory = m.get();
    out.s = std::move(m);
    return out;
  }
#ifdef SLUICE_HAVE_REDIS
  if (is_remote_store_url(spec)) {
    redis_store_options o;
    o.url = std::string(spec);
    o.prefix = setup.key_prefix;
    if (o.prefix.empty()) {
      // A fresh prefix per run, so that runs never see each other's keys.
      std::random_device rd;
      char buf[32];
      std::snprintf(buf, sizeof buf, "sluice:run:%08x%08x:", rd(), rd());
      o.prefix = buf;
    }
    o.tick_ns = 0;  // a trace's ticks, not real time
    o.unknown_tick_ttl = setup.remote_ttl;
    o.on_failure = failure_mode::fail_closed;
    o.command_timeout = std::chrono::seconds(2);
    o.connect_timeout = std::chrono::seconds(2);
    o.breaker_failures = 0;
    // The password may live outside the URL (docs/redis.md, "URLs, passwords").
    if (const char* pw = std::getenv("SLUICE_REDIS_PASSWORD"); pw != nullptr) o.password = pw;
    auto r = redis_store::open(o);
    if (!r) return error{"--store", r.err().what()};
    made_store out;
    out.s = std::move(r).value();
    return out;
  }
#endif
  return error{"--store", quote_input(redact_url(spec)) + " is not a store (" + kinds + ")"};
}

result<single_policy_store> single_policy_store::make(made_store made, std::string_view name, const any_policy& p) {
  auto id = made.s->define(name, p);
  if (!id) return error{"--store", id.err().what()};
  return single_policy_store(std::move(made), id.value());
}

decision single_policy_store::try_acquire_at(std::string_view key, tick now, std::int64_t cost) {
  const check c{id_, key};
  decision own;
  const store_decision d = made_.s->decide_at({.checks = {&c, 1}, .now = now, .cost = cost, .id = {}}, {&own, 1});
  last_ = d.from;
  return d.from == source::store ? own : d.d;
}

void single_policy_store::try_acquire_many_at(std::span<const request> requests, std::span<decision> out,
                                              std::span<source> from) {
  std::vector<check> checks(requests.size());
  std::vector<store_request> rs(requests.size());
  std::vector<store_decision> ds(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    checks[i] = check{id_, requests[i].key};
    rs[i] = store_request{.checks = {&checks[i], 1}, .now = requests[i].now, .cost = requests[i].cost, .id = {}};
  }
  made_.s->decide_many_at(rs, ds);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    // A request of one check: its decision is the check's own (all_of over
    // one part), but for `part`, which names the check (0) rather than the
    // limiter's own part; replay prints no part.
    out[i] = ds[i].d;
    from[i] = ds[i].from;
  }
  if (!requests.empty()) last_ = ds.back().from;
}

void single_policy_store::restore(const std::vector<std::pair<std::string, any_state>>& entries) {
  if (made_.memory != nullptr) made_.memory->with_keyed(id_, [&](keyed_limiter& k) { k.restore(entries); });
}

}  // namespace sluice::cli
