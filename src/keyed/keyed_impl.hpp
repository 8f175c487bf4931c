// The keyed store's internals, shared by its sources (keyed.cpp: the
// single-key paths and the whole-store operations; multi.cpp: the
// multi-key atomic form), over its memory layout (keyed_table.hpp).
// Private: not installed.
//
// Sharded open-addressing tables of records that never move, a lock-free
// 16-byte compare-and-swap path for GCRA and the token bucket, and shard
// locks for everything else. See keyed.hpp and docs/keyed.md for the
// design; the invariants the code relies on are stated where they are used.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include "internals.hpp"
#include "keyed_table.hpp"
#include "reclaim.hpp"
#include "sluice/core/detail/hash.hpp"
#include "sluice/core/fresh.hpp"
#include "sluice/core/report.hpp"
#include "sluice/keyed/keyed.hpp"

namespace sluice {
namespace keyed_detail {

enum class mode { gcra, token_bucket, general };

inline tick read_steady(const void*) noexcept { return steady_clock::now(); }
inline tick read_manual(const void* c) noexcept { return static_cast<const manual_clock*>(c)->now(); }

/// A decision computed at `eff` = max(now, drop bound), with its durations
/// counted from the caller's `now` again: those that are neither 0 nor
/// `never` grow by eff − now.
inline decision rebase(decision d, tick now, tick eff) noexcept {
  if (eff == now) return d;
  const i128 delta = static_cast<i128>(eff) - now;
  auto fix = [&](tick& v) {
    if (v == 0 || v == never) return;
    const i128 x = v + delta;
    v = x >= t_max ? never : static_cast<tick>(x);
  };
  fix(d.retry_after);
  fix(d.reset_after);
  fix(d.release_after);
  return d;
}

inline std::size_t round_pow2(std::size_t n) {
  std::size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace keyed_detail

using namespace keyed_detail;  // NOLINT: the private header of the keyed store's own sources

struct keyed_limiter::impl {
  any_policy policy;
  mode m = mode::general;
  std::optional<gcra> gp;
  std::optional<token_bucket> tp;
  // The compact modes' constants: L, W, S·W (GCRA's tolerance, the token
  // bucket's capacity), S, and division by L and by W without a divide.
  std::int64_t limit = 0;
  std::int64_t c_w = 1;
  std::int64_t c_sw = 0;
  std::int64_t c_burst = 0;
  detail::divisor c_by_l;
  detail::divisor c_by_w;
  keyed_options opt;
  std::size_t nshards = 1;
  int shard_shift = 64;
  std::unique_ptr<shard[]> shards;
  u64 seed = 0;
  tick (*clock_fn)(const void*) = read_steady;
  const void* clock_ctx = nullptr;
  any_state fresh;
  std::int64_t fresh_room = 0;
  keyed_budget* budget = nullptr;  // opt.budget's, or null
  // The horizon: the latest instant promised by purge / purge_step (no
  // later request is stamped before it), at which sweeps judge freshness.
  alignas(64) std::atomic<tick> horizon{t_min};
  alignas(64) std::atomic<std::size_t> step_next{0};
  std::atomic<std::size_t> take_next{0};  // the shard take_some starts at

  impl(any_policy p, keyed_options o)
      : policy(std::move(p)), opt(std::move(o)), fresh(fresh_state(policy)), budget(opt.budget.get()) {
    if (const auto* g = std::get_if<gcra>(&policy); !opt.compact) {
      // every policy in the general mode
    } else if (g != nullptr && g->tolerance() <= detail::i64_max) {
      m = mode::gcra;
      gp = *g;
      set_compact(g->limit(), static_cast<std::int64_t>(g->tolerance()), g->burst());
    } else if (const auto* t = std::get_if<token_bucket>(&policy); t != nullptr && t->capacity() <= detail::i64_max) {
      m = mode::token_bucket;
      tp = *t;
      set_compact(t->limit(), static_cast<std::int64_t>(t->capacity()), t->burst());
    }
    std::size_t n = round_pow2(std::clamp<std::size_t>(opt.shards == 0 ? 64 : opt.shards, 1, 65536));
    if (opt.max_keys != 0)
      while (n > 1 && n > opt.max_keys) n >>= 1;
    nshards = n;
    int bits = 0;
    while ((std::size_t{1} << bits) < n) ++bits;
    shard_shift = 64 - bits;
    shards.reset(new shard[n]);
    if (opt.max_keys != 0)
      for (std::size_t i = 0; i < n; ++i) shards[i].limit = opt.max_keys / n + (i < opt.max_keys % n ? 1 : 0);
    seed = opt.hash_seed;
    if (seed == 0) {
      std::random_device rd;
      seed = (static_cast<u64>(rd()) << 32) ^ rd() ^ reinterpret_cast<u64>(this);
    }
    any_state probe = fresh;
    fresh_room = decide(policy, probe, 0, 0).remaining;
  }

  void set_compact(rate r, std::int64_t sw, std::int64_t burst) noexcept {
    limit = r.limit;
    c_w = r.window;
    c_sw = sw;
    c_burst = burst;
    if (limit >= 1) c_by_l = detail::divisor(limit);
    c_by_w = detail::divisor(c_w);
  }

  ~impl() {
    std::size_t held = 0;
    for (std::size_t i = 0; i < nshards; ++i) {
      shard& s = shards[i];
      held += s.size.load(std::memory_order_relaxed);
      table* t = s.tab.load(std::memory_order_relaxed);
      if (t != nullptr) {
        for (std::size_t j = 0; j < t->cap; ++j) {
          const u64 v = t->slots[j].load(std::memory_order_relaxed);
          if (v != 0) drop_record_now(s, record_of(v));
        }
      }
      for (record* r : s.limbo) drop_record_now(s, r);
      free_table(t);
      for (table* lt : s.limbo_tables) free_table(lt);
      for (void* c : s.chunks) ::operator delete (c, std::align_val_t{64});
    }
    if (budget != nullptr) detail::keyed_internals::give(*budget, held);
  }

  /// Frees what a record owns and the record itself (big ones) at once.
  /// Requires that no reader can reach it (destructor, general mode).
  void drop_record_now(shard& s, record* r) noexcept {
    if (m == mode::general) delete reinterpret_cast<any_state*>(r->lo);
    const std::size_t units = record_units(key_of(r).size());
    if (units > max_small_units) {
      ::operator delete (static_cast<void*>(r), std::align_val_t{16});
    } else {
      r->lo = reinterpret_cast<u64>(s.free_heads[units]);
      s.free_heads[units] = r;
    }
  }

  // ---- hashing ----
  u64 hash(std::string_view key) const noexcept { return keyed_detail::hash_bytes(key.data(), key.size(), seed); }
  shard& shard_for(u64 h) const noexcept { return shards[shard_shift >= 64 ? 0 : h >> shard_shift]; }
  static u64 h21_for(u64 h) noexcept { return (h >> 20) & h21_mask; }

  // ---- compact states ----
  gcra::state as_gcra(u64 lo, u64 hi) const noexcept {
    const auto last = static_cast<tick>(hi);
    const auto debt = static_cast<std::int64_t>(lo);
    if (last == t_min && debt == 0) return {};
    return {static_cast<i128>(last) * limit + debt, last};
  }
  static token_bucket::state as_tb(u64 lo, u64 hi) noexcept {
    return {static_cast<i128>(static_cast<std::int64_t>(lo)), static_cast<tick>(hi)};
  }

  /// Decides on a compact cell at `eff`; on an admit, the new cell. The
  /// same answers as the core `decide` of GCRA / the token bucket, bit for
  /// bit (tests/keyed/keyed_purge_test.cpp checks every field), in 64-bit
  /// arithmetic: with S·W < 2^63, every quantity relative to the effective
  /// instant fits, and only the instants themselves need 128 bits.
  decision step(u64 lo, u64 hi, tick eff, std::int64_t cost, u64& nlo, u64& nhi) const noexcept {
    const auto last = static_cast<tick>(hi);
    const auto debt = static_cast<std::int64_t>(lo);
    const std::int64_t l = limit;
    const std::int64_t sw = c_sw;
    const bool fresh_gcra = m == mode::gcra && last == t_min && debt == 0;
    // e = max(now, last); x = what is owed at e, in units of 1/L tick (GCRA:
    // b − e·L) or of 1/W token (token bucket: S·W − tokens held).
    const tick e = fresh_gcra ? eff : std::max(eff, last);
    std::int64_t x = 0;
    if (!fresh_gcra && debt > 0) {
      const u128 paid = static_cast<u128>(static_cast<u64>(e) - static_cast<u64>(last)) * static_cast<u64>(l);
      x = paid >= static_cast<u64>(debt) ? 0 : debt - static_cast<std::int64_t>(paid);
    }
    // Ticks from eff to the instant e + ceil(y / L), for 0 ≤ y ≤ S·W.
    auto until_paid = [&](std::int64_t y) noexcept {
      return detail::until_after(e, y == 0 ? 0 : c_by_l.ceil(static_cast<u64>(y)), eff);
    };
    auto room = [&](std::int64_t y) noexcept {  // a debt past S·W (a report's) has none
      return y >= sw ? std::int64_t{0} : static_cast<std::int64_t>(c_by_w.div(static_cast<u64>(sw - y)));
    };
    decision d;
    if (cost < 1 || cost > c_burst || l == 0) {
      d.remaining = l == 0 ? 0 : room(x);
      d.retry_after = never;
      if (l == 0 || (m == mode::gcra && x == 0)) {
        d.reset_after = 0;
      } else {
        d.reset_after = until_paid(x);
      }
      return d;
    }
    const std::int64_t need = cost * c_w;  // ≤ S·W
    if (need <= sw - x) {
      const std::int64_t y = x + need;  // the new debt, ≤ S·W
      nlo = static_cast<u64>(y);
      nhi = static_cast<u64>(e);
      d.allowed = true;
      d.remaining = room(y);
      d.reset_after = until_paid(y);
      return d;
    }
    d.remaining = room(x);
    d.retry_after = until_paid(x - (sw - need));
    d.reset_after = m == mode::gcra && x == 0 ? 0 : until_paid(x);
    return d;
  }

  /// Reports `cost` (≥ 1) on a compact cell at `eff`: the new cell, always
  /// (report.hpp's charge of GCRA / the token bucket: the debt x + cost·W,
  /// saturating at max(S·W, 2^52·L − 1, capped at 2^63 − 1)), and the
  /// figures after it, bit for bit as the core's `report`.
  decision report_step(u64 lo, u64 hi, tick eff, std::int64_t cost, u64& nlo, u64& nhi) const noexcept {
    const auto last = static_cast<tick>(hi);
    const auto debt = static_cast<std::int64_t>(lo);
    const bool fresh_gcra = m == mode::gcra && last == t_min && debt == 0;
    const tick e = fresh_gcra ? eff : std::max(eff, last);
    std::int64_t x = 0;
    if (!fresh_gcra && debt > 0) {
      const u128 paid = static_cast<u128>(static_cast<u64>(e) - static_cast<u64>(last)) * static_cast<u64>(limit);
      x = paid >= static_cast<u64>(debt) ? 0 : debt - static_cast<std::int64_t>(paid);
    }
    nlo = lo;
    nhi = hi;
    u64 a = 0;
    u64 b = 0;
    if (cost < 1) return step(lo, hi, eff, cost, a, b);  // not a report: decide's (pure) answer
    if (limit != 0) {                                    // L = 0: nothing to charge
      const i128 cap = report_debt_bound(limit, c_sw);
      const i128 y = std::min<i128>(static_cast<i128>(x) + static_cast<i128>(cost) * c_w, cap);
      nlo = static_cast<u64>(static_cast<std::int64_t>(y));
      nhi = static_cast<u64>(e);
    }
    const decision zero = step(nlo, nhi, eff, 0, a, b);
    const decision one = step(nlo, nhi, eff, 1, a, b);
    return report_answer(zero, one);
  }

  any_state cell_state(u64 lo, u64 hi) const {
    if (m == mode::gcra) return as_gcra(lo, hi);
    return as_tb(lo, hi);
  }

  bool cell_fresh(u64 lo, u64 hi, tick at) const noexcept {
    if (m == mode::gcra) return is_fresh(*gp, as_gcra(lo, hi), at);
    return is_fresh(*tp, as_tb(lo, hi), at);
  }

  /// The cell for a core state of this compact policy, or nullopt when it
  /// does not fit (wrong type or out of range).
  std::optional<std::pair<u64, u64>> to_cell(const any_state& st) const noexcept {
    if (m == mode::gcra) {
      const auto* g = std::get_if<gcra::state>(&st);
      if (g == nullptr) return std::nullopt;
      if (*g == gcra::state{}) return std::pair<u64, u64>{0, static_cast<u64>(t_min)};
      const i128 debt = g->u - static_cast<i128>(g->last) * limit;
      if (debt < 0 || debt > report_debt_bound(limit, gp->tolerance())) return std::nullopt;  // a report's debt too
      if (g->last == t_min && debt == 0) return std::nullopt;                                 // would read as fresh
      return std::pair<u64, u64>{static_cast<u64>(static_cast<std::int64_t>(debt)), static_cast<u64>(g->last)};
    }
    const auto* t = std::get_if<token_bucket::state>(&st);
    if (t == nullptr || t->spent < 0 || t->spent > report_debt_bound(limit, tp->capacity())) return std::nullopt;
    return std::pair<u64, u64>{static_cast<u64>(static_cast<std::int64_t>(t->spent)), static_cast<u64>(t->last)};
  }

  /// The instant a request on a key without a state in `s` is decided at.
  /// Requires the shard lock.
  static tick absent_at(const shard& s, tick now) noexcept { return std::max(now, s.bound); }

  /// The instant a sweep that a request at `now` triggers judges freshness
  /// at: the horizon, or, in time order, that request's `now` if later.
  tick judge_at(tick now) const noexcept {
    const tick h = horizon.load(std::memory_order_acquire);
    return opt.in_time_order ? std::max(now, h) : h;
  }

  void raise_horizon(tick to) noexcept {
    tick cur = horizon.load(std::memory_order_relaxed);
    while (cur < to && !horizon.compare_exchange_weak(cur, to, std::memory_order_seq_cst)) {
    }
  }

  /// One state fewer in `s` (dropped or evicted). Requires the shard lock.
  void count_drop(shard& s) noexcept {
    s.size.fetch_sub(1, std::memory_order_relaxed);
    if (budget != nullptr) detail::keyed_internals::give(*budget, 1);
  }

  /// Room in the budget for one new state in `s`; with `may_sweep`, a spent
  /// budget first sweeps `s` for fresh states (judged at judge_at(now)).
  /// Counts a refusal. Requires the shard lock, and (with `may_sweep`) that
  /// the caller holds no record of `s` it will use afterwards.
  bool reserve(shard& s, tick now, bool may_sweep) {
    if (budget == nullptr || detail::keyed_internals::take(*budget)) return true;
    if (may_sweep && s.tab.load(std::memory_order_relaxed) != nullptr) {
      (void)sweep(s, judge_at(now), 64, s.tab.load(std::memory_order_relaxed)->cap, false);
      if (detail::keyed_internals::take(*budget)) return true;
    }
    s.refused.fetch_add(1, std::memory_order_relaxed);
    detail::keyed_internals::count_refused(*budget);
    return false;
  }

  static decision refused_decision() noexcept {
    decision d;
    d.retry_after = never;
    d.part = keyed_refused;
    return d;
  }

  /// The compare-and-swap loop on a found record. False when the record was
  /// dropped meanwhile, or is held by a multi-key decision (the caller looks
  /// again under the shard lock, where no cell is ever held). A
  /// `now` read before another thread's admit is read as that admit's time
  /// (the step's max(now, last)): a retry decides against the newer state
  /// and is never more permissive than it (go#71360).
  bool cas_loop(record* r, std::int64_t cost, tick now, decision& out) const noexcept {
    u64 lo;
    u64 hi;
    cell_load(r, lo, hi);
    if (lo >= held_lo) return false;  // dead, or held by a multi-key decision
    for (;;) {
      u64 nlo = 0;
      u64 nhi = 0;
      const decision d = step(lo, hi, now, cost, nlo, nhi);
      if (!d.allowed) {  // a pure read of the state as it was at the load
        out = d;
        return true;
      }
      const u128 before = cell_cas(r, lo, hi, nlo, nhi);
      if (before == pack(lo, hi)) {
        out = d;
        return true;
      }
      lo = static_cast<u64>(before);
      hi = static_cast<u64>(before >> 64);
      if (lo >= held_lo) return false;
    }
  }

  decision acquire(std::string_view key, std::int64_t cost, tick now) {
    return acquire_hashed(hash(key), key, cost, now);
  }

  decision acquire_hashed(u64 h, std::string_view key, std::int64_t cost, tick now) {
    shard& s = shard_for(h);
    const u64 h21 = h21_for(h);
    if (m != mode::general) {
      {
        read_guard guard;
        const table* t = s.tab.load(std::memory_order_acquire);
        if (t != nullptr) {
          if (record* r = find(t, h21, key); r != nullptr) {
            decision d;
            if (cas_loop(r, cost, now, d)) return d;
          }
        }
      }
      return slow_compact(s, h21, key, cost, now);
    }
    return slow_general(s, h21, key, cost, now);
  }

  /// Decides `n` requests in order, as `n` calls of `acquire` would, with
  /// the memory accesses of neighbouring lookups overlapped by a software
  /// pipeline: request i + 2D is hashed and its home slot prefetched, the
  /// record named by request i + D's home slot is prefetched, and request i
  /// decides, on lines that have had D steps to arrive. The prefetches are
  /// hints: every decision still looks its key up from scratch, so a key
  /// repeated in the batch, or a table that grows meanwhile, decides
  /// exactly as one call after another. `at(i)` gives request i (a
  /// keyed_request, or a reference to one); `put(i, d)` takes its decision.
  template <typename At, typename Put>
  void acquire_many(std::size_t n, At at, Put put) {
    constexpr std::size_t d = batch_distance;
    u64 hs[4 * d];  // ring of the hashes of requests i … i + 2D
    const std::size_t end = n + 2 * d;
    for (std::size_t i = 0; i < end; ++i) {
      if (i < n) {
        const u64 h = hash(at(i).key);
        hs[i % (4 * d)] = h;
        if (m != mode::general) prefetch_slot(h);
      }
      if (i >= d && i - d < n && m != mode::general) prefetch_record(hs[(i - d) % (4 * d)]);
      if (i >= 2 * d) {
        const std::size_t k = i - 2 * d;
        const keyed_request& r = at(k);
        put(k, acquire_hashed(hs[k % (4 * d)], r.key, r.cost, r.now));
      }
    }
  }

  void prefetch_slot(u64 h) const noexcept {
    read_guard guard;
    if (const table* t = shard_for(h).tab.load(std::memory_order_acquire); t != nullptr)
      __builtin_prefetch(&t->slots[home_of(h21_for(h), t->cap)]);
  }

  /// Prefetches the record of the first slot from the home of `h` whose
  /// hash bits match, looking at most 8 slots along the cluster (the rest
  /// of a long cluster is found without help). The record may be freed
  /// meanwhile, which a prefetch never minds.
  void prefetch_record(u64 h) const noexcept {
    read_guard guard;
    const table* t = shard_for(h).tab.load(std::memory_order_acquire);
    if (t == nullptr) return;
    const u64 h21 = h21_for(h);
    std::size_t i = home_of(h21, t->cap);
    for (int n = 0; n < 8; ++n) {
      const u64 v = t->slots[i].load(std::memory_order_relaxed);
      if (v == 0) return;
      if (h21_of_slot(v) == h21) {
        const auto* rec = reinterpret_cast<const unsigned char*>(record_of(v));
        __builtin_prefetch(rec, 1);       // the cell, which the decision swaps
        __builtin_prefetch(rec + 31, 1);  // the key's bytes when the record crosses a line
        return;
      }
      if (++i == t->cap) i = 0;
    }
  }

  decision slow_compact(shard& s, u64 h21, std::string_view key, std::int64_t cost, tick now) {
    decision out;
    {
      std::lock_guard lock(s.mu);
      const table* t = s.tab.load(std::memory_order_relaxed);
      record* r = t != nullptr ? find(t, h21, key) : nullptr;
      if (r != nullptr && cas_loop(r, cost, now, out)) return out;  // live under the lock: always true
      const tick eff = absent_at(s, now);
      u64 nlo = 0;
      u64 nhi = 0;
      const decision d = step(0, static_cast<u64>(t_min), eff, cost, nlo, nhi);
      if (d.allowed && !reserve(s, now, true)) {
        out = refused_decision();
      } else {
        if (d.allowed) {
          try {
            insert(s, h21, key, nlo, nhi, judge_at(now));
          } catch (...) {
            if (budget != nullptr) detail::keyed_internals::give(*budget, 1);
            throw;
          }
        }
        out = rebase(d, now, eff);
      }
    }
    maybe_reclaim(s);
    return out;
  }

  decision slow_general(shard& s, u64 h21, std::string_view key, std::int64_t cost, tick now) {
    std::lock_guard lock(s.mu);
    const table* t = s.tab.load(std::memory_order_relaxed);
    record* r = t != nullptr ? find(t, h21, key) : nullptr;
    if (r != nullptr) return decide(policy, *reinterpret_cast<any_state*>(r->lo), now, cost);
    const tick eff = absent_at(s, now);
    any_state st = fresh;
    const decision d = decide(policy, st, eff, cost);
    if (d.allowed && !(st == fresh)) {
      if (!reserve(s, now, true)) return refused_decision();
      auto owned = std::make_unique<any_state>(std::move(st));
      try {
        insert(s, h21, key, reinterpret_cast<u64>(owned.get()), 0, judge_at(now));
      } catch (...) {
        if (budget != nullptr) detail::keyed_internals::give(*budget, 1);
        throw;
      }
      owned.release();  // NOLINT: the record owns it now
    }
    return rebase(d, now, eff);
  }

  decision peek(std::string_view key, tick now, std::int64_t cost) const {
    const u64 h = hash(key);
    shard& s = shard_for(h);
    const u64 h21 = h21_for(h);
    if (m != mode::general) {
      u64 lo = 0;
      u64 hi = static_cast<u64>(t_min);
      bool found = false;
      tick eff = now;
      {
        read_guard guard;
        const table* t = s.tab.load(std::memory_order_acquire);
        if (const record* r = t != nullptr ? find(t, h21, key) : nullptr; r != nullptr) {
          cell_load(r, lo, hi);
          found = lo < held_lo;  // neither dead nor held
        }
      }
      if (!found) {
        std::lock_guard lock(s.mu);
        const table* t = s.tab.load(std::memory_order_relaxed);
        lo = 0;
        hi = static_cast<u64>(t_min);
        if (const record* r = t != nullptr ? find(t, h21, key) : nullptr; r != nullptr) {
          cell_load(r, lo, hi);
        } else {
          eff = absent_at(s, now);
        }
      }
      u64 nlo = 0;
      u64 nhi = 0;
      return rebase(step(lo, hi, eff, cost, nlo, nhi), now, eff);
    }
    std::lock_guard lock(s.mu);
    const table* t = s.tab.load(std::memory_order_relaxed);
    const record* r = t != nullptr ? find(t, h21, key) : nullptr;
    const any_state& st = r != nullptr ? *reinterpret_cast<const any_state*>(r->lo) : fresh;
    const tick eff = r != nullptr ? now : absent_at(s, now);
    return rebase(sluice::peek(policy, st, eff, cost), now, eff);
  }

  // ---- insert, room, sweep, evict, grow (all require the shard lock) ----

  /// Stores a new key's record. `judge` is the instant make_room's sweeps
  /// judge freshness at. Takes no room from the budget (the caller has).
  void insert(shard& s, u64 h21, std::string_view key, u64 lo, u64 hi, tick judge) {
    make_room(s, judge);
    record* r = alloc_record(s, key.size());  // may throw: the caller still owns `lo`'s state then
    __atomic_store_n(&r->lo, lo, __ATOMIC_RELAXED);
    __atomic_store_n(&r->hi, hi, __ATOMIC_RELAXED);
    write_key(r, key);
    place(s.tab.load(std::memory_order_relaxed), slot_of(h21, r));  // release: publishes the record
    s.size.fetch_add(1, std::memory_order_relaxed);
  }

  /// Room in `s`'s table for one more key. At max_keys, sweeps a few slots
  /// and evicts when nothing is fresh. A shard at its load threshold grows
  /// whatever its sweep drops: a sweep frees only the region it visits, so
  /// letting its drops put the growth off would hold the table at the
  /// threshold while new keys fill the unswept rest past it — at 1M keys
  /// under churn, clusters of 9,500 slots and 18–41 µs per new key.
  void make_room(shard& s, tick judge) {
    table* t = s.tab.load(std::memory_order_relaxed);
    if (t == nullptr) {
      t = new_table(16);
      add_bytes(s, table_bytes(t));
      s.tab.store(t, std::memory_order_release);
    }
    const std::size_t n = s.size.load(std::memory_order_relaxed);
    if (n >= s.limit) {
      const sweep_result sr = sweep(s, judge, 16, t->cap, true);
      if (sr.dropped == 0 && sr.best != 0) evict(s, sr.best, judge);
    } else if (n + 1 > t->threshold) {
      if (opt.auto_purge) (void)sweep(s, judge, 64, t->cap, false);
      grow(s);
      return;
    }
    t = s.tab.load(std::memory_order_relaxed);
    if (s.size.load(std::memory_order_relaxed) + 1 > t->threshold) grow(s);
  }

  struct sweep_result {
    std::size_t dropped = 0;
    std::size_t visited = 0;
    u64 best = 0;  // the slot nearest to fresh, when tracked
  };

  /// Visits at most `max_visit` slots (and at most `max_examine` keys) from
  /// the shard's cursor, dropping every state fresh at `at`; with `track`,
  /// also returns the slot of the state nearest to fresh among those kept.
  sweep_result sweep(shard& s, tick at, std::size_t max_examine, std::size_t max_visit, bool track) {
    sweep_result out;
    table* t = s.tab.load(std::memory_order_relaxed);
    if (t == nullptr) return out;
    const tick eff = at;
    std::size_t i = s.cursor % t->cap;
    std::size_t examined = 0;
    i128 best_at = 0;
    // `visited` counts the slots left behind; a drop stays on its slot (the
    // next entry of the cluster has shifted into it) and counts as examined.
    // `work` counts every slot read, the clusters that drops shift back
    // included, so that no slice runs much longer than its bounds say.
    std::size_t work = 0;
    const std::size_t max_work = max_examine + 2 * max_visit;
    while (examined < max_examine && out.visited < max_visit && work < max_work &&
           s.size.load(std::memory_order_relaxed) > 0) {
      ++work;
      const u64 v = t->slots[i].load(std::memory_order_relaxed);
      if (v == 0) {
        ++out.visited;
        if (++i == t->cap) i = 0;
        continue;
      }
      ++examined;
      record* r = record_of(v);
      if (try_drop_fresh(r, eff)) {
        work += erase_at(t, i);  // slot i now holds the next entry of the cluster: look at it again
        retire(s, r);
        s.bound = std::max(s.bound, at);
        count_drop(s);
        s.purged.fetch_add(1, std::memory_order_relaxed);
        ++out.dropped;
        continue;
      }
      if (track) {
        const i128 f = fresh_at(r, eff);
        if (out.best == 0 || f < best_at) {
          out.best = v;
          best_at = f;
        }
      }
      ++out.visited;
      if (++i == t->cap) i = 0;
    }
    s.cursor = i;
    return out;
  }

  bool try_drop_fresh(record* r, tick at) {
    if (m == mode::general) return is_fresh(policy, *reinterpret_cast<const any_state*>(r->lo), at);
    u64 lo;
    u64 hi;
    cell_load(r, lo, hi);
    for (;;) {
      if (lo >= held_lo || !cell_fresh(lo, hi, at)) return false;  // held by a multi-key decision, or not fresh
      const u128 before = cell_cas(r, lo, hi, tomb_lo, hi);
      if (before == pack(lo, hi)) return true;
      lo = static_cast<u64>(before);
      hi = static_cast<u64>(before >> 64);
    }
  }

  /// A decision of cost 0 at `at` on the record's state: denied `never`
  /// without any change (contract), so a pure read of remaining and reset.
  decision probe(const record* r, tick at) const {
    if (m == mode::general) return decide(policy, *reinterpret_cast<any_state*>(r->lo), at, 0);
    u64 lo;
    u64 hi;
    cell_load(r, lo, hi);
    u64 nlo = 0;
    u64 nhi = 0;
    return step(lo, hi, at, 0, nlo, nhi);
  }

  /// When the state would be fresh if nothing else happened: the eviction
  /// order (nearest first).
  i128 fresh_at(const record* r, tick at) const {
    const decision d = probe(r, at);
    return static_cast<i128>(at) + d.reset_after;
  }

  /// Units the state still counts against its key: fresh room − room now.
  std::uint64_t held_units(const record* r, tick at) const {
    const std::int64_t room = probe(r, at).remaining;
    return room >= fresh_room ? 0 : static_cast<std::uint64_t>(fresh_room - room);
  }

  void evict(shard& s, u64 v, tick at) {
    table* t = s.tab.load(std::memory_order_relaxed);
    record* r = record_of(v);
    std::uint64_t units = 0;
    if (m == mode::general) {
      units = held_units(r, at);
    } else {
      u64 lo;
      u64 hi;
      cell_load(r, lo, hi);
      for (;;) {
        u64 nlo = 0;
        u64 nhi = 0;
        const std::int64_t room = step(lo, hi, at, 0, nlo, nhi).remaining;
        units = room >= fresh_room ? 0 : static_cast<std::uint64_t>(fresh_room - room);
        const u128 before = cell_cas(r, lo, hi, tomb_lo, hi);
        if (before == pack(lo, hi)) break;
        lo = static_cast<u64>(before);
        hi = static_cast<u64>(before >> 64);
      }
    }
    (void)erase_at(t, find_slot(t, v));
    retire(s, r);
    s.bound = std::max(s.bound, at);
    count_drop(s);
    s.evicted.fetch_add(1, std::memory_order_relaxed);
    s.forgiven.fetch_add(units, std::memory_order_relaxed);
  }

  void grow(shard& s) {
    const table* old = s.tab.load(std::memory_order_relaxed);
    resize(s, old->cap + old->cap * 15 / 100 + 1, s.size.load(std::memory_order_relaxed) + 1);
  }

  /// At least `cap` slots, enough for `n` keys below a table's threshold.
  static std::size_t cap_for(std::size_t cap, std::size_t n) noexcept {
    while (std::min(cap - 1, cap * 85 / 100) < n) cap += cap / 8 + 1;
    return cap;
  }

  /// Replaces `s`'s table (not null) by one of at least `cap` slots that
  /// holds `n` keys below its threshold. Requires the shard lock.
  void resize(shard& s, std::size_t cap, std::size_t n) {
    table* old = s.tab.load(std::memory_order_relaxed);
    cap = cap_for(cap, n);
    table* nt = new_table(cap);
    for (std::size_t i = 0; i < old->cap; ++i) {
      const u64 v = old->slots[i].load(std::memory_order_relaxed);
      if (v != 0) place(nt, v);
    }
    s.cursor = static_cast<std::size_t>(static_cast<u128>(s.cursor) * cap / old->cap);
    add_bytes(s, table_bytes(nt));
    sub_bytes(s, table_bytes(old));
    s.tab.store(nt, std::memory_order_release);
    retire_table(s, old);
  }

  /// Makes room for about `n` keys over the store (each shard its share,
  /// plus an eighth for an uneven spread), so that filling it grows no
  /// table: a carry-over fills a new store under its frozen store's shard
  /// locks, and each growth there copied a whole table while a decision
  /// on that shard waited. Requires: no lock held, outside read sections.
  void reserve(std::size_t n) {
    const std::size_t per = n / nshards + n / nshards / 8 + 16;
    for (std::size_t i = 0; i < nshards; ++i) {
      shard& s = shards[i];
      {
        std::lock_guard lock(s.mu);
        table* t = s.tab.load(std::memory_order_relaxed);
        if (t != nullptr && t->threshold >= per) continue;
        if (t == nullptr) {
          t = new_table(cap_for(16, per));
          add_bytes(s, table_bytes(t));
          s.tab.store(t, std::memory_order_release);
          continue;
        }
        resize(s, t->cap, per);
      }
      if (m != mode::general) reclaim(s);
    }
  }

  /// An unlinked record: freed at once in the general mode (no lock-free
  /// readers), after a grace period otherwise.
  void retire(shard& s, record* r) {
    if (m == mode::general) {
      drop_record_now(s, r);
    } else {
      s.limbo.push_back(r);
    }
  }
  void retire_table(shard& s, table* t) {
    if (m == mode::general) {
      free_table(t);
    } else {
      s.limbo_tables.push_back(t);
    }
  }

  /// Ends the grace period of what the shard unlinked: waits for readers
  /// outside the shard lock, then frees. Requires: not holding the shard
  /// lock, not inside a read section.
  void reclaim(shard& s) {
    std::vector<record*> recs;
    std::vector<table*> tabs;
    {
      std::lock_guard lock(s.mu);
      recs.swap(s.limbo);
      tabs.swap(s.limbo_tables);
    }
    if (recs.empty() && tabs.empty()) return;
    keyed_detail::synchronize();
    for (table* t : tabs) free_table(t);
    std::lock_guard lock(s.mu);
    for (record* r : recs) release_record(s, r);
  }

  void maybe_reclaim(shard& s) {
    bool due = false;
    {
      std::lock_guard lock(s.mu);
      due = s.limbo.size() >= 256 || !s.limbo_tables.empty();
    }
    if (due) reclaim(s);
  }

  // ---- whole-store operations ----

  std::size_t purge_shard(shard& s, tick now, std::size_t slice) {
    std::size_t dropped = 0;
    std::size_t visited = 0;
    for (;;) {
      bool done = false;
      {
        std::lock_guard lock(s.mu);
        const table* t = s.tab.load(std::memory_order_relaxed);
        if (t == nullptr || s.size.load(std::memory_order_relaxed) == 0) {
          done = true;
        } else {
          const sweep_result r = sweep(s, now, slice, slice, false);
          dropped += r.dropped;
          visited += r.visited;
          done = visited >= t->cap || (r.visited == 0 && r.dropped == 0);
        }
      }
      if (m != mode::general) reclaim(s);
      if (done) return dropped;
    }
  }

  void clear_shard_locked(shard& s) {
    table* t = s.tab.load(std::memory_order_relaxed);
    if (t == nullptr) return;
    for (std::size_t i = 0; i < t->cap; ++i) {
      const u64 v = t->slots[i].load(std::memory_order_relaxed);
      if (v == 0) continue;
      record* r = record_of(v);
      if (m != mode::general) {
        u64 lo;
        u64 hi;
        cell_load(r, lo, hi);
        while (cell_cas(r, lo, hi, tomb_lo, hi) != pack(lo, hi)) cell_load(r, lo, hi);
      }
      t->slots[i].store(0, std::memory_order_release);
      retire(s, r);
    }
    if (budget != nullptr) detail::keyed_internals::give(*budget, s.size.load(std::memory_order_relaxed));
    s.size.store(0, std::memory_order_relaxed);
  }

  std::optional<any_state> state_copy(const record* r) const {
    if (m == mode::general) return *reinterpret_cast<const any_state*>(r->lo);
    u64 lo;
    u64 hi;
    cell_load(r, lo, hi);
    if (lo == tomb_lo) return std::nullopt;
    return cell_state(lo, hi);
  }
};

}  // namespace sluice
