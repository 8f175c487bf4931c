// The Redis store (include/sluice/redis.hpp): requests to FCALLs of the Lua
// library, replies back to decisions with the core's code, and the failure
// modes.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "redis/circuit_breaker.hpp"
#include "redis/client.hpp"
#include "redis/cluster.hpp"
#include "redis/combine.hpp"
#include "redis/deny_cache.hpp"
#include "redis/protocol.hpp"
#include "redis/slots.hpp"
#include "sluice/redis.hpp"
#include "sluice/snapshot.hpp"
#include "sluice/store/memory.hpp"

namespace sluice {
namespace redis {
extern const std::string_view lua_library;
}  // namespace redis

namespace {

using redis::plan;

constexpr std::string_view decide_fn = "sluice_v1_decide";
constexpr std::string_view peek_fn = "sluice_v1_peek";

/// One defined policy.
struct entry {
  std::string name;
  plan p;
  policy_id local_id = 0;  // the same policy in the local fallback
};

/// An FCALL's bytes: keys then arguments, and the views the client takes.
struct call_bytes {
  std::vector<std::string> strings;
  std::vector<std::string_view> views;
  std::size_t num_keys = 0;
  std::size_t leaves = 0;  // leaves over every check, in order
  bool has_id = false;
};

/// "0.000001" for 1 ns: ticks to milliseconds, as a decimal the Lua side reads.
std::string ms_per_tick(std::int64_t tick_ns) {
  std::string frac = std::to_string(tick_ns % 1'000'000);
  frac.insert(0, 6 - frac.size(), '0');
  return std::to_string(tick_ns / 1'000'000) + "." + frac;
}

/// How a reply failed to become a decision.
enum class outcome : std::uint8_t { ok, corrupt, mismatch, failure };

}  // namespace

struct redis_store::impl {
  redis_store_options opt;
  // One server, or a cluster (`cluster` is then the same object; null for one server).
  std::unique_ptr<redis::backend> cli;
  redis::cluster_client* cluster;
  std::string mpt;    // ms per tick, as text
  std::string grace;  // ms
  std::string long_ttl;
  std::string id_ttl;

  mutable std::shared_mutex defs_mu;
  std::vector<std::shared_ptr<const entry>> defs;  // requires defs_mu
  std::unordered_map<std::string, policy_id> ids;  // name -> index in defs; requires defs_mu

  // The local fallback (failure_mode::local only): the same policies in
  // process.
  std::unique_ptr<memory_store> local;

  std::unique_ptr<redis::circuit_breaker> breaker;  // null: none
  std::unique_ptr<redis::deny_cache> denials;       // null: off

  std::atomic<std::uint64_t> deny_hits{0}, breaker_open{0};
  std::atomic<std::uint64_t> decisions{0}, from_store{0}, replayed{0}, fallbacks{0}, errors{0}, failures{0}, skew{0},
      mismatches{0}, corrupt{0}, cross_slot{0};

  impl(redis_store_options o, std::unique_ptr<redis::backend> b, redis::cluster_client* c)
      : opt(std::move(o)),
        cli(std::move(b)),
        cluster(c),
        mpt(ms_per_tick(opt.tick_ns)),
        grace(std::to_string(opt.grace.count())),
        long_ttl(std::to_string(opt.unknown_tick_ttl.count())),
        id_ttl(std::to_string(std::max<std::int64_t>(1, opt.idempotency_window.count()))) {
    if (opt.breaker_failures > 0) {
      redis::circuit_breaker_options bo;
      bo.consecutive_failures = opt.breaker_failures;
      bo.cool_down = std::chrono::duration_cast<std::chrono::nanoseconds>(opt.breaker_cool_down).count();
      breaker = std::make_unique<redis::circuit_breaker>(bo);
    }
    if (opt.deny_cache) denials = std::make_unique<redis::deny_cache>(opt.deny_cache_capacity);
    if (opt.on_failure == failure_mode::local) {
      memory_store_options mo;
      mo.max_policies = std::size_t{1} << 16;
      local = std::make_unique<memory_store>(mo);
    }
  }

  std::vector<std::shared_ptr<const entry>> entries_of(const store_request& r, bool& ok) const {
    std::vector<std::shared_ptr<const entry>> out;
    ok = !r.checks.empty() && r.checks.size() <= max_checks;
    if (!ok) return out;
    for (std::size_t i = 0; i < r.checks.size(); ++i) {
      if (cost_of(r, r.checks[i]) < 1) {
        ok = false;  // a check's cost below 1: a bad request
        return out;
      }
      for (std::size_t j = 0; j < i; ++j)
        if (r.checks[i].policy == r.checks[j].policy && r.checks[i].key == r.checks[j].key) {
          ok = false;  // a (policy, key) named twice: a bad request
          return out;
        }
    }
    std::shared_lock lock(defs_mu);
    for (const check& c : r.checks) {
      if (c.policy >= defs.size()) {
        ok = false;
        return out;
      }
      out.push_back(defs[c.policy]);
    }
    return out;
  }

  std::string state_key(const entry& e, std::string_view key, const redis::leaf_plan& lp) const {
    std::string k;
    k.reserve(opt.prefix.size() + e.name.size() + key.size() + lp.suffix.size() + 6);
    k.append(opt.prefix).append("s:").append(e.name).append(":{").append(key).append("}").append(lp.suffix);
    return k;
  }

  /// The slot of check `i`'s leaf `lp` in a cluster (redis/slots.hpp): its
  /// key's up to the first '}', or the whole state key's when that is empty.
  std::uint16_t leaf_slot(const entry& e, std::string_view key, const redis::leaf_plan& lp) const {
    const auto s = redis::braced_key_slot(key);
    return s ? *s : redis::key_slot(state_key(e, key, lp));
  }

  /// In a cluster, whether every state key of `r` is in one slot (its id
  /// key is put there by build). Always true on one server.
  bool one_slot(const store_request& r, const std::vector<std::shared_ptr<const entry>>& es) const {
    if (cluster == nullptr) return true;
    std::optional<std::uint16_t> slot;
    for (std::size_t i = 0; i < es.size(); ++i)
      for (const auto& lp : es[i]->p.leaves()) {
        const std::uint16_t s = leaf_slot(*es[i], r.checks[i].key, lp);
        if (slot && *slot != s) return false;
        slot = s;
      }
    return true;
  }

  /// `<prefix>i:<id>`; in a cluster `<prefix>i:{<tag>}<id>`, `tag` putting
  /// it in the slot of the request's state keys: their key up to its first
  /// '}', or a short tag of that slot when that is empty.
  std::string id_key(const store_request& r, const std::vector<std::shared_ptr<const entry>>& es) const {
    std::string k = opt.prefix + "i:";
    for (std::size_t i = 0; cluster != nullptr && i < es.size(); ++i) {
      if (es[i]->p.leaves().empty()) continue;
      const std::string_view key = r.checks[i].key;
      const std::string_view tag = key.substr(0, key.find('}'));
      k.append("{")
          .append(tag.empty() ? redis::slot_tag(leaf_slot(*es[i], key, es[i]->p.leaves().front())) : tag)
          .append("}");
      break;
    }
    return k.append(r.id);
  }

  void build(const store_request& r, const std::vector<std::shared_ptr<const entry>>& es, bool peek,
             call_bytes& out) const {
    auto& s = out.strings;
    out.has_id = !peek && !r.id.empty();
    if (out.has_id) s.push_back(id_key(r, es));
    for (std::size_t i = 0; i < es.size(); ++i)
      for (const auto& lp : es[i]->p.leaves()) {
        s.push_back(state_key(*es[i], r.checks[i].key, lp));
        ++out.leaves;
      }
    out.num_keys = s.size();
    std::int64_t h = 0;
    std::int64_t l = 0;
    redis::split_limbs(r.now, h, l);
    s.push_back(std::to_string(r.now));
    s.push_back(std::to_string(h));
    s.push_back(std::to_string(l));
    s.emplace_back(out.has_id ? "1" : "0");
    s.push_back(id_ttl);
    s.push_back(grace);
    s.push_back(opt.tick_ns > 0 ? mpt : "0");
    s.push_back(long_ttl);
    s.emplace_back("A");
    s.push_back(std::to_string(es.size()));
    for (std::size_t i = 0; i < es.size(); ++i) es[i]->p.append_args(r.now, cost_of(r, r.checks[i]), s);
    out.views.assign(s.begin(), s.end());
  }

  /// Turns a reply into a decision; `out` holds it when ok.
  outcome interpret(const store_request& r, const std::vector<std::shared_ptr<const entry>>& es,
                    const redis::reply& rep, bool peek, store_decision& out, std::span<decision> per_check) {
    const auto* arr = rep.as_array();
    if (arr == nullptr || arr->empty()) return outcome::failure;
    const auto status = (*arr)[0].as_integer();
    if (!status) return outcome::failure;
    std::vector<std::optional<std::string_view>> before;
    std::vector<std::optional<std::string_view>> after;
    std::vector<std::string_view> record_parts;
    tick now = r.now;
    bool admitted = false;
    if (*status == 2) {
      // A repeated request id: the first decision, recomputed from the same
      // states at the same instant.
      if (arr->size() != 2 || !(*arr)[1].as_string()) return outcome::failure;
      const std::string_view rec = *(*arr)[1].as_string();
      std::size_t pos = 0;
      while (true) {
        const std::size_t bar = rec.find('|', pos);
        record_parts.push_back(rec.substr(pos, bar == std::string_view::npos ? std::string_view::npos : bar - pos));
        if (bar == std::string_view::npos) break;
        pos = bar + 1;
      }
      std::size_t leaves = 0;
      for (const auto& e : es) leaves += e->p.leaves().size();
      if (record_parts.size() != 2 + 2 * leaves) return outcome::corrupt;
      const auto [p, ec] =
          std::from_chars(record_parts[0].data(), record_parts[0].data() + record_parts[0].size(), now);
      if (ec != std::errc{} || p != record_parts[0].data() + record_parts[0].size()) return outcome::corrupt;
      if (record_parts[1] != "0" && record_parts[1] != "1") return outcome::corrupt;
      admitted = record_parts[1] == "1";
      for (std::size_t i = 0; i < leaves; ++i) {
        const std::string_view b = record_parts[2 + 2 * i];
        const std::string_view a = record_parts[3 + 2 * i];
        before.emplace_back(b.empty() ? std::nullopt : std::optional<std::string_view>(b));
        after.emplace_back(a.empty() ? std::nullopt : std::optional<std::string_view>(a));
      }
    } else if (*status == 0 || *status == 1) {
      admitted = *status == 1;
      if (arr->size() % 2 != 1) return outcome::failure;
      for (std::size_t i = 1; i + 1 < arr->size(); i += 2) {
        const auto& b = (*arr)[i];
        const auto& a = (*arr)[i + 1];
        if (!b.is_nil() && !b.as_string()) return outcome::failure;
        if (!a.is_nil() && !a.as_string()) return outcome::failure;
        before.push_back(b.as_string());
        after.push_back(a.as_string());
      }
    } else {
      return outcome::failure;
    }
    // Every check's state before the decision, from the stored values.
    std::vector<any_state> states;
    states.reserve(es.size());
    std::size_t at = 0;
    tick latest = detail::i64_min;
    for (const auto& e : es) {
      const std::size_t n = e->p.leaves().size();
      if (at + n > before.size()) return outcome::failure;
      std::vector<std::optional<std::string_view>> mine(before.begin() + static_cast<std::ptrdiff_t>(at),
                                                        before.begin() + static_cast<std::ptrdiff_t>(at + n));
      auto s = e->p.decode(mine, latest);
      if (!s) return outcome::corrupt;
      states.push_back(std::move(s).value());
      at += n;
    }
    if (at != before.size()) return outcome::failure;
    if (!peek && *status != 2 && latest != detail::i64_min &&
        static_cast<detail::i128>(r.now) < static_cast<detail::i128>(latest) - opt.skew_tolerance)
      skew.fetch_add(1, std::memory_order_relaxed);
    // The core decides on them; the script's admit must be the same, and so
    // must every state it wrote.
    std::vector<const any_policy*> pols;
    std::vector<std::int64_t> costs;
    pols.reserve(es.size());
    costs.reserve(es.size());
    for (std::size_t i = 0; i < es.size(); ++i) {
      pols.push_back(&es[i]->p.policy());
      costs.push_back(cost_of(r, r.checks[i]));
    }
    out.d = redis::combine(pols, states, now, costs, per_check);
    if (out.d.allowed != admitted) return outcome::mismatch;
    if (!peek) {
      at = 0;
      std::vector<const any_state*> leaf_states;
      for (std::size_t i = 0; i < es.size(); ++i) {
        leaf_states.clear();
        es[i]->p.leaf_states(states[i], leaf_states);
        for (std::size_t j = 0; j < leaf_states.size(); ++j, ++at) {
          if (!admitted) {
            if (after[at]) return outcome::mismatch;  // a denial writes nothing
            continue;
          }
          tick ignored = 0;
          const auto& v = after[at] ? after[at] : before[at];
          auto written = es[i]->p.decode_leaf(j, v, ignored);
          if (!written || !(written.value() == *leaf_states[j])) return outcome::mismatch;
        }
      }
    }
    out.from = *status == 2 ? source::replayed : source::store;
    return outcome::ok;
  }

  store_decision failed(const store_request& r, const std::vector<std::shared_ptr<const entry>>& es, bool peek,
                        std::span<decision> per_check) {
    store_decision out;
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
        std::vector<check> mine(r.checks.begin(), r.checks.end());
        for (std::size_t i = 0; i < mine.size(); ++i) mine[i].policy = es[i]->local_id;
        store_request lr = r;
        lr.checks = mine;
        out = peek ? local->peek_at(lr, per_check) : local->decide_at(lr, per_check);
        out.from = out.from == source::store ? source::fallback : out.from;
        return out;
      }
    }
    for (std::size_t i = 0; i < per_check.size() && i < r.checks.size(); ++i) {
      per_check[i] = out.d;
      per_check[i].part = -1;
    }
    return out;
  }

  store_decision error_decision(const store_request& r, std::span<decision> per_check) {
    store_decision out;
    out.d.retry_after = never;
    out.from = source::error;
    for (std::size_t i = 0; i < per_check.size() && i < r.checks.size(); ++i) per_check[i] = out.d;
    return out;
  }

  /// Adds one to `c` for a decision (peeks are not counted, as in the
  /// memory store).
  static void count(std::atomic<std::uint64_t>& c, bool peek) {
    if (!peek) c.fetch_add(1, std::memory_order_relaxed);
  }

  /// The decision for a reply (or the failure in its place), counted.
  store_decision finish(const store_request& r, const std::vector<std::shared_ptr<const entry>>& es,
                        const std::variant<redis::reply, redis::call_error>& res, bool peek,
                        std::span<decision> per_check) {
    count(decisions, peek);
    outcome o = outcome::failure;
    store_decision out;
    std::vector<decision> mine;  // per-check decisions for the deny cache when the caller wants none
    if (denials && !peek && per_check.empty()) {
      mine.resize(r.checks.size());
      per_check = mine;
    }
    if (const auto* rep = std::get_if<redis::reply>(&res)) {
      if (const auto msg = rep->as_error()) {
        o = msg->starts_with("sluice: corrupt state") ? outcome::corrupt : outcome::failure;
      } else {
        o = interpret(r, es, *rep, peek, out, per_check);
      }
    } else if (const auto* err = std::get_if<redis::call_error>(&res)) {
      o = err->kind == redis::call_error::server && err->message.starts_with("sluice: corrupt state")
              ? outcome::corrupt
              : outcome::failure;
    }
    if (breaker) {
      if (o == outcome::failure)
        breaker->record_failure_now();
      else
        breaker->record_success_now();
    }
    switch (o) {
      case outcome::ok:
        count(out.from == source::replayed ? replayed : from_store, peek);
        if (denials && !peek && !out.d.allowed && out.from == source::store)
          for (std::size_t i = 0; i < r.checks.size(); ++i)
            if (!per_check[i].allowed && per_check[i].retry_after > 0)
              denials->insert(r.checks[i].policy, 0, r.checks[i].key, cost_of(r, r.checks[i]), r.now,
                              per_check[i].retry_after);
        return out;
      case outcome::corrupt:
        count(corrupt, peek);
        count(errors, peek);
        return error_decision(r, per_check);
      case outcome::mismatch:
        count(mismatches, peek);
        count(errors, peek);
        return error_decision(r, per_check);
      case outcome::failure:
        break;
    }
    count(failures, peek);
    count(fallbacks, peek);
    return failed(r, es, peek, per_check);
  }

  void many(std::span<const store_request> requests, std::span<store_decision> out);

  /// A request whose keys span several cluster slots cannot be atomic:
  /// an error, decided nowhere.
  store_decision refuse_cross_slot(const store_request& r, bool peek, std::span<decision> per_check) {
    count(decisions, peek);
    count(errors, peek);
    count(cross_slot, peek);
    return error_decision(r, per_check);
  }

  store_decision one(const store_request& r, bool peek, std::span<decision> per_check) {
    bool ok = false;
    const auto es = entries_of(r, ok);
    if (!ok) {
      count(decisions, peek);
      count(errors, peek);
      return error_decision(r, per_check);
    }
    if (!one_slot(r, es)) return refuse_cross_slot(r, peek, per_check);
    if (auto cached = local_answer(r, es, peek, per_check)) return *cached;
    call_bytes b;
    build(r, es, peek, b);
    const redis::function_call fc{peek ? peek_fn : decide_fn, b.num_keys, b.views};
    const auto res = cli->fcall(fc);
    return finish(r, es, res, peek, per_check);
  }

  /// The answer without a call, if any: the deny cache's, or the failure
  /// mode's while the breaker is open.
  std::optional<store_decision> local_answer(const store_request& r,
                                             const std::vector<std::shared_ptr<const entry>>& es, bool peek,
                                             std::span<decision> per_check) {
    if (denials && r.id.empty()) {
      store_decision out;
      bool hit = false;
      for (std::size_t i = 0; i < r.checks.size(); ++i) {
        const auto ra = denials->lookup(r.checks[i].policy, 0, r.checks[i].key, cost_of(r, r.checks[i]), r.now);
        if (!ra) continue;
        if (!hit || *ra > out.d.retry_after) {
          out.d.retry_after = *ra;
          out.d.part = static_cast<std::int32_t>(i);
        }
        hit = true;
      }
      if (hit) {
        out.from = source::deny_cache;
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
      count(fallbacks, peek);
      count(breaker_open, peek);
      return failed(r, es, peek, per_check);
    }
    return std::nullopt;
  }
};

result<std::unique_ptr<redis_store>> redis_store::open(redis_store_options options) {
  if (options.tick_ns < 0) return error{"tick_ns", "must be 0 (unknown) or positive"};
  if (options.grace.count() < 0) return error{"grace", "must not be negative"};
  if (options.skew_tolerance < 0) return error{"skew_tolerance", "must not be negative"};
  auto b = redis::open_backend(options.url, options.prefix, options.connect_timeout, options.command_timeout,
                               options.pool_size);
  if (!b) return b.err();
  auto* cluster = dynamic_cast<redis::cluster_client*>(b.value().get());
  auto p = std::make_unique<impl>(std::move(options), std::move(b).value(), cluster);
  if (auto lib = p->cli->set_library(std::string(library_name()), std::string(redis::lua_library)); !lib)
    return lib.err();
  return std::unique_ptr<redis_store>(new redis_store(std::move(p)));
}

redis_store::redis_store(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
redis_store::~redis_store() = default;

result<policy_id> redis_store::define(std::string_view name, const any_policy& policy) {
  if (impl_->cluster != nullptr)
    if (auto e = redis::cluster_name_error("name", name)) return *e;
  auto p = plan::make(policy);
  if (!p) return p.err();
  std::unique_lock lock(impl_->defs_mu);
  if (const auto it = impl_->ids.find(std::string(name)); it != impl_->ids.end()) {
    if (encode_policy(impl_->defs[it->second]->p.policy()) == encode_policy(policy)) return it->second;
    // Appended piece by piece: GCC 12's -O3 warns (-Wrestrict, a false
    // positive) on "'" + std::string(...).
    std::string message = "'";
    message.append(name).append(
        "' is already defined with another policy; the Redis store cannot carry its states over a change of "
        "configuration yet");
    return error{"algorithm", std::move(message)};
  }
  impl_->ids.emplace(std::string(name), static_cast<policy_id>(impl_->defs.size()));
  policy_id local_id = 0;
  if (impl_->local) {
    auto local = impl_->local->define(name, policy);
    if (!local) return local.err();
    local_id = local.value();
  }
  impl_->defs.push_back(std::make_shared<const entry>(entry{std::string(name), std::move(p).value(), local_id}));
  return static_cast<policy_id>(impl_->defs.size() - 1);
}

store_decision redis_store::decide_at(const store_request& r, std::span<decision> per_check) {
  return impl_->one(r, false, per_check);
}

store_decision redis_store::peek_at(const store_request& r, std::span<decision> per_check) {
  return impl_->one(r, true, per_check);
}

void redis_store::decide_many_at(std::span<const store_request> requests, std::span<store_decision> out) {
  // Pipelines of at most `chunk` calls: hiredis 0.14 moves its whole output
  // buffer after every partial write, so one huge pipeline costs quadratic time.
  constexpr std::size_t chunk = 256;
  for (std::size_t i = 0; i < requests.size(); i += chunk) {
    const std::size_t n = std::min(chunk, requests.size() - i);
    impl_->many(requests.subspan(i, n), out.subspan(i, n));
  }
}

void redis_store::impl::many(std::span<const store_request> requests, std::span<store_decision> out) {
  impl* const impl_ = this;
  struct pending {
    std::vector<std::shared_ptr<const entry>> es;
    call_bytes b;
    bool ok = false;
  };
  std::vector<pending> ps(requests.size());
  std::vector<redis::function_call> calls;
  std::vector<std::size_t> index;  // call -> request
  std::vector<bool> done(requests.size(), false);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    ps[i].es = impl_->entries_of(requests[i], ps[i].ok);
    if (!ps[i].ok) continue;
    if (!one_slot(requests[i], ps[i].es)) {
      out[i] = refuse_cross_slot(requests[i], false, {});
      done[i] = true;
      continue;
    }
    if (auto answered = local_answer(requests[i], ps[i].es, false, {})) {
      out[i] = *answered;
      done[i] = true;
      continue;
    }
    impl_->build(requests[i], ps[i].es, false, ps[i].b);
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!ps[i].ok || done[i]) continue;
    calls.push_back({decide_fn, ps[i].b.num_keys, ps[i].b.views});
    index.push_back(i);
  }
  auto res = calls.empty() ? std::vector<redis::call_result>{} : impl_->cli->fcall_each(calls);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!ps[i].ok) {
      impl_->decisions.fetch_add(1, std::memory_order_relaxed);
      impl_->errors.fetch_add(1, std::memory_order_relaxed);
      out[i] = impl_->error_decision(requests[i], {});
    }
  }
  for (std::size_t c = 0; c < calls.size(); ++c) {
    const redis::call_result one =
        c < res.size() ? std::move(res[c])
                       : redis::call_result(redis::call_error{redis::call_error::protocol, "short pipeline", true});
    out[index[c]] = impl_->finish(requests[index[c]], ps[index[c]].es, one, false, {});
  }
}

tick redis_store::now() const noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

redis_store_stats redis_store::redis_stats() const {
  const auto& p = *impl_;
  redis_store_stats s;
  s.base.decisions = p.decisions.load(std::memory_order_relaxed);
  s.base.from_store = p.from_store.load(std::memory_order_relaxed);
  s.base.replayed = p.replayed.load(std::memory_order_relaxed);
  s.base.fallbacks = p.fallbacks.load(std::memory_order_relaxed);
  s.base.errors = p.errors.load(std::memory_order_relaxed);
  s.base.store_failures = p.failures.load(std::memory_order_relaxed);
  s.base.clock_skew = p.skew.load(std::memory_order_relaxed);
  s.mismatches = p.mismatches.load(std::memory_order_relaxed);
  s.corrupt = p.corrupt.load(std::memory_order_relaxed);
  s.base.deny_cache_hits = p.deny_hits.load(std::memory_order_relaxed);
  s.breaker_open = p.breaker_open.load(std::memory_order_relaxed);
  s.breaker_trips = p.breaker ? p.breaker->times_opened() : 0;
  s.cross_slot = p.cross_slot.load(std::memory_order_relaxed);
  if (p.cluster != nullptr) {
    const auto c = p.cluster->stats();
    s.moved = c.moved;
    s.asked = c.asked;
    s.cluster_retries = c.tryagain + c.clusterdown + c.refused;
    s.topology_refreshes = c.refreshes;
  }
  return s;
}

store_stats redis_store::stats() const { return redis_stats().base; }

std::optional<std::uint64_t> redis_store::count_keys() { return impl_->cli->count_keys(); }

std::string_view redis_store::library_code() noexcept { return redis::lua_library; }
std::string_view redis_store::library_name() noexcept { return "sluice_v1"; }

}  // namespace sluice
