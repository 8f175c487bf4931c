#include "store_flag.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "store_kinds.hpp"

namespace sluice::cli {

void add_store_flag(CLI::App& cmd, std::string& spec, std::string* prefix) {
  const store_registry& stores = program_stores();
  std::string help = "where the states live: " + stores.describe();
  const bool remote = stores.has("redis");
  if (remote) help += "; the password may come from $SLUICE_REDIS_PASSWORD instead";
  cmd.add_option("--store", spec, help);
  if (prefix != nullptr && remote)
    cmd.add_option("--store-prefix", *prefix, "a remote store's key prefix (default: a fresh random one per run)");
}

result<made_store> make_store(std::string_view spec, const store_setup& setup) {
  store_options o;
  o.url = std::string(spec);
  o.memory.keyed = setup.keyed;
  const store_scheme* scheme = scheme_of(spec);
  if (scheme != nullptr && scheme->remote) {
    o.key_prefix = setup.key_prefix;
    if (o.key_prefix.empty()) {
      // A fresh prefix per run, so that runs never see each other's keys.
      std::random_device rd;
      char buf[32];
      std::snprintf(buf, sizeof buf, "sluice:run:%08x%08x:", rd(), rd());
      o.key_prefix = buf;
    }
    o.tick_ns = 0;  // a trace's ticks, not real time
    o.unknown_tick_ttl = setup.remote_ttl;
    o.on_failure = failure_mode::fail_closed;
    o.command_timeout = std::chrono::seconds(2);
    o.connect_timeout = std::chrono::seconds(2);
    o.breaker_failures = 0;
    // The password may live outside the URL (docs/redis.md, "URLs, passwords").
    if (const char* pw = std::getenv("SLUICE_REDIS_PASSWORD"); pw != nullptr) o.password = pw;
  }
  auto st = program_stores().open(o);
  // The registry's own errors name "url": here that is --store itself.
  if (!st) return error{"--store", st.err().code == error_code::bad_store_url ? st.err().message : st.err().what()};
  made_store out;
  out.s = std::move(st).value();
  out.memory = dynamic_cast<memory_store*>(out.s.get());
  return out;
}

result<single_policy_store> single_policy_store::make(made_store made, std::string_view name, const any_policy& p) {
  auto id = made.s->define(name, p);
  if (!id) return error{"--store", id.err().what()};
  return single_policy_store(std::move(made), id.value());
}

namespace {
/// Whether `from` answered with the check's own figures.
bool decided(source from) noexcept { return from == source::store || from == source::replayed; }
}  // namespace

decision single_policy_store::try_acquire_at(std::string_view key, tick now, std::int64_t cost, std::string_view id) {
  const check c{id_, key};
  decision own;
  const store_decision d = made_.s->decide_at({.checks = {&c, 1}, .now = now, .cost = cost, .id = id}, {&own, 1});
  last_ = d.from;
  lease_ = d.lease;
  return decided(d.from) ? own : d.d;
}

decision single_policy_store::peek_at(std::string_view key, tick now, std::int64_t cost) {
  const check c{id_, key};
  decision own;
  const store_decision d = made_.s->peek_at({.checks = {&c, 1}, .now = now, .cost = cost, .id = {}}, {&own, 1});
  last_ = d.from;
  return d.from == source::store ? own : d.d;
}

refund_status single_policy_store::refund_at(std::string_view id, tick now) {
  const refund_answer a = made_.s->refund_at(id, now);
  last_ = a.status == refund_status::error ? source::error : source::store;
  return a.status;
}

std::int64_t single_policy_store::release_at(std::string_view key, std::uint64_t nonce, tick now) {
  const check c{id_, key};
  const release_result r = made_.s->release_at({&c, 1}, nonce, now);
  last_ = r.from;
  return r.units;
}

decision single_policy_store::report_at(std::string_view key, tick now, std::int64_t cost) {
  const check c{id_, key};
  decision own;
  const store_decision d = made_.s->report_at({.checks = {&c, 1}, .now = now, .cost = cost, .id = {}}, {&own, 1});
  last_ = d.from;
  return d.from == source::store ? own : d.d;
}

void single_policy_store::try_acquire_many_at(std::span<const request> requests, std::span<decision> out,
                                              std::span<source> from, std::span<std::uint64_t> leases) {
  std::vector<check> checks(requests.size());
  std::vector<store_request> rs(requests.size());
  std::vector<store_decision> ds(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    checks[i] = check{id_, requests[i].key};
    rs[i] = store_request{
        .checks = {&checks[i], 1}, .now = requests[i].now, .cost = requests[i].cost, .id = requests[i].id};
  }
  made_.s->decide_many_at(rs, ds);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    // A request of one check: its decision is the check's own (all_of over
    // one part), but for `part`, which names the check (0) rather than the
    // limiter's own part; replay prints no part.
    out[i] = ds[i].d;
    from[i] = ds[i].from;
    if (!leases.empty()) leases[i] = ds[i].lease;
  }
  if (!requests.empty()) last_ = ds.back().from;
}

void single_policy_store::restore(const std::vector<std::pair<std::string, any_state>>& entries) {
  if (made_.memory != nullptr) made_.memory->with_keyed(id_, [&](keyed_limiter& k) { k.restore(entries); });
}

std::string single_policy_store::last_failure() const {
  const auto f = made_.s->figures();
  return f ? f->last_failure : std::string();
}

}  // namespace sluice::cli
