// The Redis store (include/sluice/redis/store.hpp): definitions and
// redefinitions, the failure modes, the deny cache and the counts. Requests
// become FCALLs in decide.cpp; states carried over a redefinition are
// decided in carry.cpp.
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <utility>

#include "redis/client/binary.hpp"
#include "redis/client/slots.hpp"
#include "redis/store/combine.hpp"
#include "redis/store/state_free.hpp"
#include "redis/store/store_impl.hpp"
#include "sluice/core/detail/request_identity.hpp"
#include "sluice/core/policy_codec.hpp"
#include "sluice/core/reconfigure.hpp"
#include "sluice/core/redact.hpp"

namespace sluice {
redis_store::impl::impl(redis::store_settings o, std::unique_ptr<redis::sync_client> b)
    : opt(std::move(o)),
      cli(std::move(b)),
      cluster(dynamic_cast<redis::cluster_client*>(&cli->async())),
      ttl_base(opt.tick_ns > 0 ? opt.grace.count() + 2 : opt.unknown_tick_ttl.count()),
      id_ttl(std::to_string(std::max<std::int64_t>(1, opt.idempotency_window.count()))) {
  // In a cluster each node has its own breaker, in the router
  // (cluster.hpp): one dead primary leaves the others' keys to the store.
  if (opt.breaker_failures > 0 && cluster == nullptr) {
    remote::circuit_breaker_options bo;
    bo.consecutive_failures = opt.breaker_failures;
    bo.cool_down = std::chrono::duration_cast<std::chrono::nanoseconds>(opt.breaker_cool_down).count();
    breaker = std::make_unique<remote::circuit_breaker>(bo);
  }
  if (opt.deny_cache) denials = std::make_unique<remote::deny_cache>(opt.deny_cache_capacity);
  // Published on by every store, cache or not: another process's may hear.
  invalidation = redis::invalidation_channel(opt.key_prefix);
  if (opt.on_failure == failure_mode::local) {
    memory_store_options mo;
    mo.max_policies = max_chunks * chunk_size;
    local = std::make_unique<memory_store>(mo);
  }
  std::random_device rd;
  batches.store((static_cast<std::uint64_t>(rd()) << 20) & ((std::uint64_t{1} << 51) - 1), std::memory_order_relaxed);
}

bool redis_store::impl::entries_of(const store_request& r, const entry** es) const {
  if (r.checks.empty() || r.checks.size() > max_checks) return false;
  const bool any_belief = belief_count.load(std::memory_order_acquire) != 0;
  for (std::size_t i = 0; i < r.checks.size(); ++i) {
    if (cost_of(r, r.checks[i]) < 1) return false;  // a check's cost below 1: a bad request
    es[i] = entry_of(r.checks[i].policy);
    if (es[i] == nullptr) return false;
    // A key this process saw overridden is built for its override first
    // (a wrong belief costs one status 6, never a wrong decision).
    if (any_belief) es[i] = believed(r.checks[i].policy, r.checks[i].key, es[i]);
    for (std::size_t j = 0; j < i; ++j)
      if (r.checks[i].policy == r.checks[j].policy && r.checks[i].key == r.checks[j].key)
        return false;  // a (policy, key) named twice: a bad request
  }
  return true;
}

namespace {

/// The slot of a state key of `key` under `e` (leaf suffix `suffix`): its
/// key's up to the first '}', or the whole state key's when that is empty.
std::uint16_t leaf_slot(const redis::entry& e, std::string_view key, std::string_view suffix) {
  if (const auto s = redis::braced_key_slot(key)) return *s;
  std::string whole = e.key_head;
  whole.append(key).append(1, '}').append(suffix);
  return redis::key_slot(whole);
}

}  // namespace

bool redis_store::impl::one_slot(const store_request& r, const entry* const* es) const {
  if (cluster == nullptr) return true;
  std::optional<std::uint16_t> slot;
  for (std::size_t i = 0; i < r.checks.size(); ++i)
    for (const auto& lp : es[i]->p->leaves()) {
      const std::uint16_t s = leaf_slot(*es[i], r.checks[i].key, lp.suffix);
      if (slot && *slot != s) return false;
      slot = s;
    }
  return true;
}

void redis_store::impl::identity_of(const store_request& r, const entry* const* es, std::string& out) const {
  detail::request_identity(
      r, [&](std::size_t i) -> std::string_view { return es[i]->name; }, out);
}

void redis_store::impl::append_id_key(const store_request& r, const entry* const* es, std::string& out) const {
  out.append(opt.key_prefix).append("i:");
  append_id_tag(r, es, out);
  out.append(r.id);
}

void redis_store::impl::append_id_tag(const store_request& r, const entry* const* es, std::string& out) const {
  for (std::size_t i = 0; cluster != nullptr && i < r.checks.size(); ++i) {
    if (es[i]->p->leaves().empty()) continue;
    const std::string_view key = r.checks[i].key;
    const std::string_view tag = key.substr(0, key.find('}'));
    out.append(1, '{')
        .append(tag.empty() ? redis::slot_tag(leaf_slot(*es[i], key, es[i]->p->leaves().front().suffix)) : tag)
        .append(1, '}');
    break;
  }
}

std::string redis_store::refund_id(const store_request& r) const {
  std::string out;
  if (r.id.empty()) return out;
  const redis::entry* es[max_checks];
  if (impl_->cluster != nullptr && impl_->entries_of(r, es)) impl_->append_id_tag(r, es, out);
  out.append(r.id);
  return out;
}

store_decision redis_store::impl::refuse_cross_slot(const store_request& r, bool peek, std::span<decision> per_check) {
  count(decisions, peek);
  count(errors, peek);
  count(cross_slot, peek);
  return error_decision(r, per_check);
}

redis::call_result redis_store::impl::call_one(const redis::function_call& fc) {
  const std::int64_t t0 = remote::circuit_breaker::steady_ns();
  auto r = cli->fcall(fc);
  figures.observe(remote::circuit_breaker::steady_ns() - t0);
  figures.note(r);
  return r;
}

std::vector<redis::call_result> redis_store::impl::call_each(std::span<const redis::function_call> fcs) {
  const std::int64_t t0 = remote::circuit_breaker::steady_ns();
  auto rs = cli->fcall_each(fcs);
  figures.observe(remote::circuit_breaker::steady_ns() - t0);
  figures.note_each(rs);
  return rs;
}

void redis_store::impl::health_changed(std::string_view which, bool healthy,
                                       std::optional<redis::failure_reason> why) const {
  if (!opt.on_health_change) return;
  std::string line = "store " + std::string(which) + ": ";
  if (healthy) {
    line += "healthy again: a probe call succeeded, the store decides";
  } else {
    line += "unhealthy: the circuit breaker opened after " + std::to_string(opt.breaker_failures) +
            " failed calls in a row (the last: " +
            // One server: the last failure's words too (a TLS failure's cause).
            (why && cluster == nullptr && !figures.last_failure().empty()
                 ? redact_url(figures.last_failure())
                 : std::string(why ? redis_store_stats::failure_reasons[static_cast<std::size_t>(*why)] : "no reply")) +
            "); the failure mode (" +
            std::string(opt.on_failure == failure_mode::fail_open ? "fail-open"
                        : opt.on_failure == failure_mode::local   ? "local"
                                                                  : "fail-closed") +
            ") answers until a probe call succeeds";
  }
  opt.on_health_change(line);
}

void redis_store::impl::say(std::string_view line) const {
  if (opt.on_health_change) return opt.on_health_change(line);
  std::fprintf(stderr, "sluice: %.*s\n", static_cast<int>(line.size()), line.data());
}

std::int64_t redis_store::impl::next_batch() noexcept {
  const std::uint64_t b = batches.fetch_add(1, std::memory_order_relaxed) & ((std::uint64_t{1} << 52) - 1);
  return b == 0 ? 1 : static_cast<std::int64_t>(b);
}

store_decision redis_store::impl::error_decision(const store_request& r, std::span<decision> per_check) {
  store_decision out;
  out.d.retry_after = never;
  out.from = source::error;
  out.at = r.now;
  for (std::size_t i = 0; i < per_check.size() && i < r.checks.size(); ++i) per_check[i] = out.d;
  return out;
}

store_decision redis_store::impl::failed(const store_request& r, const entry* const* es, bool peek,
                                         std::span<decision> per_check, std::span<std::optional<tick>> grows) {
  store_decision out;
  out.at = r.now;
  switch (opt.on_failure) {
    case failure_mode::fail_open:
      out.d.allowed = true;
      out.from = source::fail_open;
      break;
    case failure_mode::fail_closed:
      out.d.retry_after = opt.fail_closed_retry_after;
      out.from = source::fail_closed;
      break;
    case failure_mode::local: {
      // The same policies in process (a memory store): the same checks,
      // atomically, under the local ids.
      std::array<check, max_checks> mine{};
      for (std::size_t i = 0; i < r.checks.size(); ++i)
        mine[i] = check{es[i]->local_id, r.checks[i].key, r.checks[i].cost};
      store_request lr = r;
      lr.checks = std::span<const check>(mine.data(), r.checks.size());
      out = peek ? local->peek_at(lr, per_check) : local->decide_at(lr, per_check, grows);
      out.from = out.from == source::store ? source::fallback : out.from;
      out.lease = 0;  // a lease of the fallback's could not be released in Redis
      out.at = r.now;
      return out;
    }
  }
  for (std::size_t i = 0; i < per_check.size() && i < r.checks.size(); ++i) {
    per_check[i] = out.d;
    per_check[i].part = -1;
  }
  return out;
}

store_decision redis_store::impl::fall_back(const store_request& r, const entry* const* es, bool peek,
                                            std::span<decision> per_check, std::span<std::optional<tick>> grows) {
  if (opt.on_failure != failure_mode::local) {  // the local limiter follows the rules itself, with figures
    std::array<const redis::plan*, max_checks> plans{};
    for (std::size_t i = 0; i < r.checks.size(); ++i) plans[i] = es[i]->p;
    const redis::rule_answer rule = redis::rule_of(r, plans.data());
    if (rule.k != redis::known::depends) {
      // Known without a state: no failure mode may turn it round
      // (semantics.md, "Answers that need no state"). No figures.
      count(by_rule, peek);
      store_decision out;
      out.at = r.now;
      out.from = source::rule;
      out.d.allowed = rule.k == redis::known::admit;
      out.d.retry_after = out.d.allowed ? 0 : never;
      for (std::size_t i = 0; i < per_check.size() && i < r.checks.size(); ++i) {
        per_check[i] = out.d;
        per_check[i].part = -1;
      }
      for (std::size_t i = 0; i < grows.size() && i < r.checks.size(); ++i) grows[i].reset();
      return out;
    }
  }
  count(fallbacks, peek);
  return failed(r, es, peek, per_check, grows);
}

store_decision redis_store::impl::decide_stateless(const store_request& r, const entry* const* es, bool peek,
                                                   std::span<decision> per_check,
                                                   std::span<std::optional<tick>> grows) {
  std::vector<const any_policy*> pols;
  std::vector<any_state> states;
  std::array<std::int64_t, max_checks> costs{};
  std::array<decision, max_checks> mine{};
  const std::span<decision> pc = per_check.empty() ? std::span<decision>(mine.data(), r.checks.size()) : per_check;
  for (std::size_t i = 0; i < r.checks.size(); ++i) {
    pols.push_back(&es[i]->p->policy());
    states.push_back(fresh_state(es[i]->p->policy()));
    costs[i] = cost_of(r, r.checks[i]);
  }
  store_decision out;
  out.d = redis::combine(pols, states, r.now, std::span<const std::int64_t>(costs.data(), r.checks.size()), pc);
  out.from = source::store;
  out.at = r.now;
  for (std::size_t i = 0; i < grows.size() && i < r.checks.size(); ++i)
    grows[i] = grows_after_of(*pols[i], states[i], r.now, pc[i].remaining);
  count(decisions, peek);
  count(from_store, peek);
  return out;
}

store_decision redis_store::impl::conclude(const store_request& r, const entry* const* es, outcome o,
                                           store_decision out, bool peek, std::span<decision> per_check,
                                           std::span<std::optional<tick>> grows, std::optional<std::uint64_t> seen) {
  count(decisions, peek);
  if (o != outcome::ok)  // no state behind the answer (the local fallback writes its own)
    for (std::size_t i = 0; i < grows.size() && i < r.checks.size(); ++i) grows[i].reset();
  if (breaker && o != outcome::not_sent) {
    if (o == outcome::failure ? breaker->record_failure_now() : breaker->record_success_now())
      health_changed(node, o != outcome::failure, figures.last_reason());
  }
  switch (o) {
    case outcome::ok:
      out.at = r.now;
      count(out.from == source::replayed ? replayed : from_store, peek);
      // Only while subscribed, and only when no invalidation (or emptying)
      // came since the call went out (`seen`): its denial may predate it.
      if (seen && cache_live() && !peek && !out.d.allowed && out.from == source::store) {
        // Never a concurrency part's denial: a release, on any process of
        // a fleet, may end it before its retry_after (semantics.md, "Leases
        // in a Redis store").
        if (r.checks.size() == 1) {
          if (out.d.retry_after > 0 && !es[0]->p->leases())
            denials->insert(r.checks[0].policy, es[0]->version, r.checks[0].key, cost_of(r, r.checks[0]), r.now,
                            out.d.retry_after, *seen);
        } else {
          for (std::size_t i = 0; i < r.checks.size() && i < per_check.size(); ++i)
            if (!per_check[i].allowed && per_check[i].retry_after > 0 && !es[i]->p->leases())
              denials->insert(r.checks[i].policy, es[i]->version, r.checks[i].key, cost_of(r, r.checks[i]), r.now,
                              per_check[i].retry_after, *seen);
        }
      }
      return out;
    case outcome::corrupt:
      count(corrupt, peek);
      count(errors, peek);
      return error_decision(r, per_check);
    case outcome::unknown:
      count(unknown_config, peek);
      count(errors, peek);
      return error_decision(r, per_check);
    case outcome::mismatch:
      count(mismatches, peek);
      count(errors, peek);
      return error_decision(r, per_check);
    case outcome::id_conflict: {  // a used id with other checks: refused, nothing decided (semantics.md)
      count(id_conflicts, peek);
      store_decision c = error_decision(r, per_check);
      c.from = source::id_conflict;
      return c;
    }
    case outcome::moved:  // the key's override changed under every attempt: nothing decided
      count(override_races, peek);
      count(errors, peek);
      return error_decision(r, per_check);
    case outcome::not_sent:  // a cluster node's breaker is open: no call was made
      count(breaker_open, peek);
      return fall_back(r, es, peek, per_check, grows);
    default:
      break;
  }
  count(failures, peek);
  return fall_back(r, es, peek, per_check, grows);
}

void redis_store::impl::append_invalidation(std::vector<std::string>& args,
                                            std::span<const std::string_view> keys) const {
  std::string message;
  for (const std::string_view k : keys) redis::append_invalidated_key(message, k);
  args.push_back(invalidation);
  args.push_back(std::move(message));
}

void redis_store::impl::settle(std::string_view key) {
  const std::string_view keys[] = {key};
  (void)call_one(fns.sync.call(1, keys));
}

std::optional<store_decision> redis_store::impl::local_answer(const store_request& r, const entry* const* es, bool peek,
                                                              std::span<decision> per_check,
                                                              std::span<std::optional<tick>> grows) {
  if (denials && !r.id.empty()) {
    // Not the cache's to answer (a repeat must replay), but it goes to the
    // store at `now`: the cache must know (deny_cache.hpp).
    for (std::size_t i = 0; i < r.checks.size(); ++i) denials->note(r.checks[i].policy, r.checks[i].key, r.now);
  }
  if (denials && r.id.empty() && !listener->subscribed()) {
    // Not subscribed (yet, or any more): a change made elsewhere could go
    // unheard, so the cache, emptied, answers nothing.
    if (!peek) bypassed.fetch_add(1, std::memory_order_relaxed);
  } else if (denials && r.id.empty()) {
    store_decision out;
    bool hit = false;
    const auto look = [&] {
      hit = false;
      for (std::size_t i = 0; i < r.checks.size(); ++i) {
        const auto ra =
            denials->lookup(r.checks[i].policy, es[i]->version, r.checks[i].key, cost_of(r, r.checks[i]), r.now);
        if (!ra) continue;
        if (i < grows.size()) grows[i] = *ra;  // the cached wait: `t` for a cost of 1, later for more
        if (!hit || *ra > out.d.retry_after) {
          out.d.retry_after = *ra;
          out.d.part = static_cast<std::int32_t>(i);
        }
        hit = true;
      }
    };
    // A first look finds whether anything is cached at all (a miss costs
    // no system call); a hit answers only from a second look made AFTER
    // caught_up() held: no message unread on the subscription, and none
    // read but not yet applied (the order matters: invalidation.cpp,
    // caught_up; docs/redis.md, "The deny cache").
    look();
    if (hit && listener->caught_up()) {
      for (std::size_t i = 0; i < grows.size() && i < r.checks.size(); ++i) grows[i].reset();
      look();
    } else if (hit) {
      // A message may end this very denial: the store answers.
      for (std::size_t i = 0; i < grows.size() && i < r.checks.size(); ++i) grows[i].reset();
      if (!peek) bypassed.fetch_add(1, std::memory_order_relaxed);
      hit = false;
    }
    if (hit) {
      out.from = source::deny_cache;
      out.at = r.now;
      for (std::size_t i = 0; i < per_check.size() && i < r.checks.size(); ++i) per_check[i] = decision{};
      if (!peek) {
        decisions.fetch_add(1, std::memory_order_relaxed);
        deny_hits.fetch_add(1, std::memory_order_relaxed);
      }
      return out;
    }
  }
  if (breaker && !breaker->allow_call_now()) {
    count(decisions, peek);
    count(breaker_open, peek);
    return fall_back(r, es, peek, per_check, grows);
  }
  return std::nullopt;
}

result<std::unique_ptr<redis_store>> redis_store::open(const store_options& shared) {
  auto options = redis::settings_of(shared);
  if (!options) return options.err();
  auto b = redis::open_backend(options.value());
  if (!b) return b.err();
  auto p = std::make_unique<impl>(std::move(options).value(), std::move(b).value());
  // The one server's name in health lines and breaker figures, whichever
  // client reaches it (a Sentinel deployment: its URL, redacted).
  const auto node_of = [](const redis::url& u) {
    return u.is_unix()
               ? u.socket_path
               : (u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host) + ":" + std::to_string(u.port);
  };
  if (p->cluster == nullptr) {
    if (auto u = redis::parse_url(p->opt.url)) {
      p->node = node_of(*u);
    } else {
      p->node = redact_url(p->opt.url);
    }
  }
  if (p->cluster != nullptr && p->opt.on_health_change) {
    impl* self = p.get();
    p->cluster->set_on_breaker_change(
        [self](const std::string& n, bool healthy, std::optional<redis::failure_reason> why) {
          self->health_changed(n, healthy, why);
        });
  }
  if (auto lib = p->cli->set_library(std::string(library_name()), std::string(redis::lua_library)); !lib)
    return lib.err();
  // Eviction never silent (docs/redis.md, "Eviction"): a policy that may
  // evict a state is refused, or warned of when told so; a server that does
  // not answer now is read by the watch once it does.
  const redis::eviction_reading first = redis::read_eviction(*p->cli);
  std::optional<std::string> wrong;
  for (const auto& s : first.servers)
    if (redis::policy_evicts(s.policy)) {
      wrong = redis::evicting_policy_text(s.policy);
      break;
    }
  if (!wrong && first.forbidden) wrong = redis::unread_policy_text(*first.forbidden);
  if (wrong && !p->opt.warn_on_eviction_policy)
    return error{"eviction", *wrong + "; or, to run anyway, warn instead (sluice serve: store.eviction = \"warn\")"};
  if (wrong) p->say("store: warning: " + *wrong);
  // module=on: a server that answers without the module is refused now
  // (docs/redis.md, "The store and the module"); one that does not answer
  // is checked when it does.
  if (redis::module_use_in(p->opt.url) == redis::module_use::on) {
    const auto r = p->cli->call({"PING"});
    if (const auto* e = std::get_if<redis::call_error>(&r);
        e != nullptr && e->message.find("module=on") != std::string::npos)
      return error{"module", redact_url(e->message)};
  }
  impl* self = p.get();
  p->evictions = std::make_unique<redis::eviction_watch>(
      *p->cli, std::chrono::milliseconds(p->opt.from_url.eviction_poll_ms),
      [self](std::string_view line) { self->say(line); }, first);
  if (p->denials) {
    // The cache answers only once it hears every other process's changes
    // (docs/redis.md, "The deny cache").
    auto nodes = redis::subscription_nodes_of(p->opt, p->cli->async());
    if (!nodes) return nodes.err();
    redis::async_client_options base;
    base.connect_timeout = p->opt.connect_timeout;
    base.command_timeout = p->opt.command_timeout;
    p->listener = std::make_unique<redis::invalidation_listener>(p->invalidation, std::move(nodes.value().where),
                                                                 nodes.value().follow, base, *p->denials);
    // A store opened on a server that answers has its cache from its first
    // request; on one that does not, it opens anyway, the cache bypassed.
    // Behind Sentinel the master is known only once a call has asked.
    if (!nodes.value().follow) (void)p->listener->wait_subscribed(p->opt.connect_timeout + p->opt.command_timeout);
  }
  return std::unique_ptr<redis_store>(new redis_store(std::move(p)));
}

redis_store::redis_store(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

redis_store::~redis_store() {
  // Asynchronous decisions still waiting are answered first (the closed
  // client fails their calls at once; the failure mode answers), while
  // every part of the store they use is alive; so is the slow lane's job
  // (a clock measurement waiting on its own connection to a server that
  // does not answer fails at once too, not at its command timeout).
  // Attached loops were detached and run by their owner
  // (remote/event_loops.hpp).
  for (auto& l : impl_->loops)
    if (l.b) l.b->close();
  impl_->cli->close();
  std::unique_lock lock(impl_->flight_mu);
  impl_->flight_cv.wait(lock, [this] { return impl_->in_flight == 0; });
}

result<policy_id> redis_store::define(std::string_view name, const any_policy& policy) {
  return define_at(name, policy, now());
}

result<policy_id> redis_store::define_at(std::string_view name, const any_policy& policy, tick at) {
  if (name.empty()) return error{"name", "a policy needs a name"};
  if (impl_->cluster != nullptr)
    if (auto e = redis::cluster_name_error("name", name)) return *e;
  auto made = redis::plan::make(policy);
  if (!made) return made.err();
  auto p = std::make_shared<const redis::plan>(std::move(made).value());
  impl& im = *impl_;
  std::lock_guard lock(im.defs_mu);
  auto e = std::make_unique<impl::entry>();
  e->name = std::string(name);
  e->key_head = im.opt.key_prefix + "s:" + e->name + ":{";
  e->override_head = im.opt.key_prefix + "o:" + e->name + ":{";
  e->version = ++im.versions;
  policy_id id = 0;
  if (const auto it = im.ids.find(e->name); it != im.ids.end()) {
    id = it->second;
    const impl::entry& old = *im.entry_of(id);
    if (encode_policy(old.p->policy()) == encode_policy(policy)) return id;  // unchanged: keep every state as it is
    // Refuse before anything changes, as the memory store does: the fresh
    // state tells whether the new policy can continue the old one's states.
    if (auto probe = reconfigure(old.p->policy(), fresh_state(old.p->policy()), policy, at); !probe) return probe.err();
    if (im.local) {
      if (auto l = im.local->define_at(name, policy, at); !l) return l.err();
    }
    e->epochs = old.epochs;
    e->local_id = old.local_id;
  } else {
    if (im.ids.size() >= impl::max_chunks * impl::chunk_size)
      return error{"policies", "the Redis store holds at most 65536 policy names"};
    id = static_cast<policy_id>(im.defined.load(std::memory_order_relaxed));
    if (im.local) {
      auto l = im.local->define(name, policy);
      if (!l) return l.err();
      e->local_id = l.value();
    }
    auto& chunk = im.chunks[id >> impl::chunk_bits];
    if (!chunk) {
      chunk = std::make_unique<std::atomic<const impl::entry*>[]>(impl::chunk_size);
      for (std::size_t i = 0; i < impl::chunk_size; ++i) chunk[i].store(nullptr, std::memory_order_relaxed);
    }
    im.ids.emplace(e->name, id);
  }
  e->epochs.push_back(redis::epoch{p, at});
  e->p = e->epochs.back().p.get();
  im.chunks[id >> impl::chunk_bits][id & (impl::chunk_size - 1)].store(e.get(), std::memory_order_release);
  if (id >= im.defined.load(std::memory_order_relaxed)) im.defined.store(id + 1, std::memory_order_release);
  im.entries.push_back(std::move(e));
  // Its denials were decided under the old configuration (a new version
  // never matches them; this frees their slots).
  if (im.denials) im.denials->forget(id);
  return id;
}

store_decision redis_store::decide_at(const store_request& r, std::span<decision> per_check,
                                      std::span<std::optional<tick>> grows_after) {
  return impl_->run(r, redis::call_kind::decide, per_check, grows_after);
}

store_decision redis_store::peek_at(const store_request& r, std::span<decision> per_check) {
  return impl_->run(r, redis::call_kind::peek, per_check);
}

void redis_store::decide_async(const store_request& r, std::span<decision> per_check,
                               std::span<std::optional<tick>> grows_after, decided done) {
  impl_->run_async(r, redis::call_kind::decide, per_check, grows_after, std::move(done));
}

void redis_store::peek_async(const store_request& r, decided done) {
  impl_->run_async(r, redis::call_kind::peek, {}, {}, std::move(done));
}

void redis_store::count_keys_async(std::function<void(std::optional<std::uint64_t>)> done) {
  impl_->enter();
  impl_->cli->async().async_count_keys([this, h = std::move(done)](std::optional<std::uint64_t> n) {
    h(n);
    impl_->leave();
  });
}

result<bool> redis_store::attach_loops(std::span<boost::asio::io_context* const> loops) {
  impl& im = *impl_;
  if (im.cluster != nullptr)
    return error{"store", "a Redis Cluster keeps the store's own I/O thread (one router per store)"};
  if (!im.loops.empty()) return error{"store", "event loops are attached already"};
  std::vector<impl::loop_backend> made;
  for (boost::asio::io_context* ctx : loops) {
    auto b = im.cli->make_on(ctx->get_executor());
    if (!b) return b.err();
    made.push_back(impl::loop_backend{ctx, std::move(b).value()});
  }
  im.loops = std::move(made);
  return true;
}

void redis_store::detach_loop(boost::asio::io_context& loop) {
  for (auto& l : impl_->loops) {
    if (l.ctx != &loop || !l.b) continue;
    l.b->close();
    l.b.reset();
  }
}

redis::async_backend& redis_store::impl::backend_here() noexcept {
  for (const auto& l : loops)
    if (l.b && l.ctx->get_executor().running_in_this_thread()) return *l.b;
  return cli->async();
}

void redis_store::decide_many_at(std::span<const store_request> requests, std::span<store_decision> out) {
  // Chunks of requests bound the per-call buffers; each chunk goes out in
  // pipelines of at most 256 calls (decide.cpp, max_pipeline), the requests
  // the deny cache answers taking none.
  constexpr std::size_t chunk = 4096;
  for (std::size_t i = 0; i < requests.size(); i += chunk) {
    const std::size_t n = std::min(chunk, requests.size() - i);
    impl_->many(requests.subspan(i, n), out.subspan(i, n));
  }
}

tick redis_store::now() const noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

redis_store_stats redis_store::redis_stats() const {
  const auto& p = *impl_;
  const auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  redis_store_stats s;
  s.base.decisions = get(p.decisions);
  s.base.from_store = get(p.from_store);
  s.base.replayed = get(p.replayed);
  s.base.fallbacks = get(p.fallbacks);
  s.base.errors = get(p.errors);
  s.base.store_failures = get(p.failures);
  s.base.clock_skew = get(p.skew);
  s.base.deny_cache_hits = get(p.deny_hits);
  s.base.id_conflicts = get(p.id_conflicts);
  s.base.by_rule = get(p.by_rule);
  s.mismatches = get(p.mismatches);
  s.corrupt = get(p.corrupt);
  s.breaker_open = get(p.breaker_open);
  s.breaker_trips = p.breaker ? p.breaker->times_opened() : 0;
  s.carried = get(p.carried);
  s.carry_conflicts = get(p.carry_conflicts);
  s.unknown_config = get(p.unknown_config);
  s.cross_slot = get(p.cross_slot);
  s.override_moves = get(p.override_moves);
  s.override_races = get(p.override_races);
  s.override_fallbacks = get(p.override_fallbacks);
  p.figures.read(s);
  if (p.listener) {
    const auto l = p.listener->figures();
    s.deny_cache_subscribed = l.subscribed;
    s.deny_cache_invalidations = l.invalidations;
    s.deny_cache_subscriptions = l.subscriptions;
    s.deny_cache_bypassed = get(p.bypassed);
  }
  if (p.have_offset.load(std::memory_order_relaxed)) s.clock_offset_ns = p.offset_ns.load(std::memory_order_relaxed);
  s.evicted_keys = p.evictions ? p.evictions->evicted() : 0;
  s.last_failure = p.figures.last_failure();
  for (const auto& v : p.cli->module_paths()) {
    s.module_calls += v.module_calls;
    s.library_calls += v.library_calls;
    // One server: the store's own name for it (a Sentinel URL's, redacted).
    s.module_paths.push_back(
        {p.cluster != nullptr || p.node.empty() ? v.node : p.node, redis::describe_path(v.caps, v.use)});
  }
  if (p.breaker) s.breakers.push_back({p.node, remote::circuit_breaker::name(p.breaker->current())});
  if (p.cluster != nullptr) {
    for (const auto& [n, st] : p.cluster->breaker_states())
      s.breakers.push_back({n, remote::circuit_breaker::name(st)});
    const auto c = p.cluster->stats();
    s.moved = c.moved;
    s.asked = c.asked;
    s.cluster_retries = c.tryagain + c.clusterdown + c.refused;
    s.topology_refreshes = c.refreshes;
    s.breaker_trips += c.breaker_trips;
    s.breakers_open = c.breakers_open;
  }
  return s;
}

store_stats redis_store::stats() const { return redis_stats().base; }

std::optional<std::int64_t> redis_store::measure_clock_offset() { return impl_->measure_clock(); }

std::optional<std::uint64_t> redis_store::count_keys() { return impl_->cli->count_keys(); }

std::string_view redis_store::library_code() noexcept { return redis::lua_library; }
std::string_view redis_store::library_name() noexcept { return redis::lua_library_name; }

}  // namespace sluice
