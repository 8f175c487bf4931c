// The Redis store's release of a lease (store.hpp release_at; semantics.md
// "Leases in a Redis store"; docs/redis.md "Leases"): one FCALL of
// `sluice_v2_release` (release.lua) over every leaf key of the lease id's
// checks, which removes the lease with the nonce from each concurrency
// leaf and answers every leaf's value before and after. The client then
// releases with the core on the values read and refuses an answer whose
// writes are not the core's. A key holding an earlier configuration's
// value is carried over here (migrate.hpp) and written by a compare-and-set.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "redis/client/binary.hpp"
#include "redis/store/store_impl.hpp"
#include "sluice/core/lease.hpp"

namespace sluice {

using redis::outcome;

namespace {

/// The most attempts at a release whose keys must be carried over (a
/// compare-and-set that lost a race reads again).
constexpr int release_attempts = 4;

}  // namespace

release_result redis_store::impl::release_lease(std::span<const check> given, std::uint64_t nonce, tick now) {
  release_result out;
  const auto error = [&] {
    out = release_result{};
    out.from = source::error;
    return out;
  };
  // A check's cost is ignored (store.hpp): the request's checks at cost 1.
  if (given.empty() || given.size() > max_checks) return error();
  std::array<check, max_checks> mine{};
  for (std::size_t i = 0; i < given.size(); ++i) mine[i] = check{given[i].policy, given[i].key, 0};
  store_request r;
  r.checks = std::span<const check>(mine.data(), given.size());
  r.now = now;
  r.cost = 1;
  std::array<const entry*, max_checks> es{};
  if (!entries_of(r, es.data())) {
    errors.fetch_add(1, std::memory_order_relaxed);
    return error();
  }
  if (!one_slot(r, es.data())) {  // its keys would span slots: not atomic
    cross_slot.fetch_add(1, std::memory_order_relaxed);
    return error();
  }
  const std::size_t n = r.checks.size();
  std::size_t leaves = 0;
  for (std::size_t i = 0; i < n; ++i) leaves += es[i]->p->leaves().size();
  if (leaves == 0) return out;  // no state: nothing held (the store answered)
  if (breaker && !breaker->allow_call_now()) {
    breaker_open.fetch_add(1, std::memory_order_relaxed);
    return error();
  }
  // Every call's outcome feeds the breaker as a decision's does.
  const auto note = [&](bool ok) {
    if (breaker && (ok ? breaker->record_success_now() : breaker->record_failure_now()))
      health_changed(node, ok, figures.last_reason());
  };
  const auto failed = [&] {
    failures.fetch_add(1, std::memory_order_relaxed);
    note(false);
    return error();
  };
  r.now = now = lookup_now(now);  // at the store's clock: the reference sent, decided at the reply's instant
  std::vector<std::string> keys;
  std::string blob;
  std::vector<std::string_view> views;
  // The call for the entries in `es`: every leaf's key and tag.
  const auto make_call = [&] {
    keys.clear();
    blob.clear();
    put_instant(blob, now);
    redis::put_number(blob, opt.tick_ns);
    redis::put_number(blob, static_cast<std::int64_t>(nonce >> 32));
    redis::put_number(blob, static_cast<std::int64_t>(nonce & 0xFFFFFFFFULL));
    for (std::size_t i = 0; i < n; ++i)
      for (const auto& lp : es[i]->p->leaves()) {
        keys.push_back(es[i]->key_head + std::string(r.checks[i].key) + "}" + lp.suffix);
        blob.append(lp.tag_view());
      }
    views.assign(keys.begin(), keys.end());
    views.push_back(blob);
  };
  // A key whose value was written under an override this process does not
  // believe (or no longer stored): each check's override key is read, and
  // the call built again under what is stored; false when nothing changed.
  const auto follow_overrides = [&] {
    bool changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (es[i]->p->leaves().empty() || !overridable(r.checks[i].key)) continue;
      const std::string k = override_key(*es[i], r.checks[i].key);
      const std::string_view kv[] = {k};
      const auto res = call_one(fns.refund_read.call(1, kv));
      const auto* rep = std::get_if<redis::reply>(&res);
      const auto* arr = rep != nullptr ? rep->as_array() : nullptr;
      bool ok = true;
      if (arr == nullptr || arr->size() != 1) return false;
      const auto v = value_of((*arr)[0], ok);
      if (!ok) return false;
      const entry* e = entry_of(r.checks[i].policy);
      if (v) {
        auto o = override_entry(r.checks[i].policy, *v);
        if (!o) return false;
        e = o.value();
      }
      if (e != es[i]) {
        es[i] = e;
        believe(r.checks[i].policy, r.checks[i].key, e);
        changed = true;
      }
    }
    return changed;
  };
  make_call();

  for (int attempt = 0; attempt < release_attempts; ++attempt) {
    const std::int64_t sent = remote::circuit_breaker::steady_ns();
    auto res = call_one(fns.release.call(keys.size(), views));
    auto* rep = std::get_if<redis::reply>(&res);
    if (rep != nullptr && !take_instant(*rep, sent, now)) return failed();
    r.now = now;
    if (rep == nullptr) {
      if (redis::outcome_of(std::get<redis::call_error>(res)) == outcome::corrupt) {
        note(true);
        corrupt.fetch_add(1, std::memory_order_relaxed);
        errors.fetch_add(1, std::memory_order_relaxed);
        return error();
      }
      return failed();
    }
    const auto* arr = rep->as_array();
    const auto status = arr != nullptr && !arr->empty() ? (*arr)[0].as_integer() : std::nullopt;
    bool ok = true;
    if (!status || (*status == 1 && arr->size() != 1 + 2 * leaves) || (*status == 3 && arr->size() != 1 + leaves) ||
        (*status != 1 && *status != 3))
      return failed();
    note(true);
    std::vector<std::optional<std::string_view>> before(leaves);
    std::vector<std::optional<std::string_view>> after(leaves);
    const std::size_t step = *status == 1 ? 2 : 1;
    for (std::size_t k = 0; k < leaves; ++k) {
      before[k] = value_of((*arr)[1 + step * k], ok);
      if (step == 2) after[k] = value_of((*arr)[2 + step * k], ok);
    }
    if (!ok) return failed();
    // The core's release on the states read (carried over when a key holds
    // an earlier configuration's value).
    std::vector<redis::cas_key> writes(*status == 3 ? leaves : 0);  // each key as read, and its write
    for (std::size_t x = 0; x < writes.size(); ++x) {
      writes[x].key = keys[x];
      if (before[x]) writes[x].expected.emplace(*before[x]);
    }
    bool any_write = false;
    std::size_t at = 0;
    release_result got;
    bool again = false;
    for (std::size_t i = 0; i < n; ++i) {
      const redis::plan& p = *es[i]->p;
      const std::size_t k = p.leaves().size();
      auto [st, latest, how, stale] = redis::read_check_at(es[i]->epochs, before, at);
      if (!st && how == redis::read_outcome::unknown && attempt + 1 < release_attempts && follow_overrides()) {
        again = true;  // written under the override stored now: released under it
        break;
      }
      if (!st) {
        (how == redis::read_outcome::unknown ? unknown_config : corrupt).fetch_add(1, std::memory_order_relaxed);
        errors.fetch_add(1, std::memory_order_relaxed);
        return error();
      }
      std::vector<const any_state*> old_leaves;
      p.leaf_states(*st, old_leaves);
      std::vector<any_state> was;
      for (const any_state* x : old_leaves) was.push_back(*x);
      got.per_check[i] = release(p.policy(), *st, now, nonce);
      got.units += got.per_check[i];
      std::vector<const any_state*> new_leaves;
      p.leaf_states(*st, new_leaves);
      for (std::size_t j = 0; j < k; ++j, ++at) {
        const bool changed = !(was[j] == *new_leaves[j]);
        if (*status == 1) {
          // The script's writes must be the core's: a changed leaf's
          // written value is its new state, every other leaf unchanged.
          if (after[at]) {
            tick ignored = detail::i64_min;
            auto w = p.decode_leaf(j, after[at], ignored);
            if (!w || !(w.value() == *new_leaves[j])) {
              mismatches.fetch_add(1, std::memory_order_relaxed);
              errors.fetch_add(1, std::memory_order_relaxed);
              return error();
            }
          } else if (changed) {
            mismatches.fetch_add(1, std::memory_order_relaxed);
            errors.fetch_add(1, std::memory_order_relaxed);
            return error();
          }
          continue;
        }
        // Carried over: write every leaf the release changed, and every
        // leaf read from an earlier configuration (a key's values share one
        // configuration, migrate.hpp); a fresh leaf is deleted.
        redis::cas_key& w = writes[at];
        switch (write_leaf(p, j, was[j], *new_leaves[j], stale[j], std::max(now, latest), w)) {
          case redis::leaf_write::kept:
            break;
          case redis::leaf_write::written:
            any_write = any_write || w.written.has_value();
            break;
          case redis::leaf_write::unholdable:
            if (changed) {
              mismatches.fetch_add(1, std::memory_order_relaxed);
              errors.fetch_add(1, std::memory_order_relaxed);
              return error();
            }
            break;  // carried only, and not holdable: left as written (carried again from there)
        }
      }
    }
    if (again) {
      make_call();
      continue;
    }
    if (*status == 3 && got.units > 0 && any_write) {
      // The carried states, written only if every key still holds what was read.
      const std::string args[] = {"0", id_ttl, "", ""};
      const auto cas = compare_and_set(fns.cas, {}, args, writes);
      if (!cas.status || (*cas.status != 0 && *cas.status != 1)) return failed();
      note(true);
      if (*cas.status == 0) continue;  // something moved: read again
      carried.fetch_add(1, std::memory_order_relaxed);
    }
    // A release only makes states more permissive: the deny cache forgets
    // these keys (as a refund does).
    if (denials && got.units > 0)
      for (std::size_t i = 0; i < n; ++i) denials->forget(r.checks[i].policy, r.checks[i].key);
    releases.fetch_add(1, std::memory_order_relaxed);
    got.from = source::store;
    return got;
  }
  return error();  // still contended after every attempt: nothing released
}

release_result redis_store::release_at(std::span<const check> checks, std::uint64_t nonce, tick now) {
  return impl_->release_lease(checks, nonce, now);
}

}  // namespace sluice
