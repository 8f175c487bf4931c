// The keyed store's multi-key atomic form: one request over several (store,
// key) checks, decided as all_of (keyed.hpp, try_acquire_all_at).
//
// Why it is atomic: every check's shard lock is taken (in address order, so
// two multi-key decisions never deadlock), which stops every locked path on
// those keys (general-mode states, new keys, purges, evictions); and every
// existing lock-free cell is held (lo = held_lo) by one compare-and-swap, so
// a lock-free decision that loaded the cell before fails its swap, and one
// that loads it after sees the mark: both then take the shard lock, and so
// wait until the request is decided and every cell let go. The decision is
// computed on copies, then written all at once or not at all.
#include <algorithm>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "keyed_impl.hpp"
#include "sluice/core/detail/all_of_fold.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/report.hpp"

namespace sluice {
namespace {

using impl_t = keyed_limiter::impl;

/// One check as it is being decided.
struct work {
  impl_t* im = nullptr;
  shard* s = nullptr;
  std::int64_t cost = 0;  // this check's units
  u64 h21 = 0;
  std::string_view key;
  record* r = nullptr;    // null: a key without a state (fresh)
  tick eff = 0;           // now, or for a key without a state max(now, its shard's drop bound)
  bool reserved = false;  // a new key's room, taken from its store's budget
  // Compact modes: the cell as held (fresh: {0, t_min}) and as decided.
  u64 lo = 0;
  u64 hi = 0;
  u64 nlo = 0;
  u64 nhi = 0;
  bool held = false;
  // General mode: the state as decided, on a copy.
  std::optional<any_state> st;
  decision d;      // the check's own decision, rebased to the caller's now
  receipt ticket;  // admit_all_at: what the check would take (kept only on an admit)
};

/// Takes the distinct shard locks in address order; lets them go in reverse.
class shard_locks {
 public:
  explicit shard_locks(std::vector<shard*> shards) : shards_(std::move(shards)) {
    std::sort(shards_.begin(), shards_.end());
    shards_.erase(std::unique(shards_.begin(), shards_.end()), shards_.end());
    for (shard* s : shards_) s->mu.lock();
  }
  ~shard_locks() {
    for (auto it = shards_.rbegin(); it != shards_.rend(); ++it) (*it)->mu.unlock();
  }
  shard_locks(const shard_locks&) = delete;
  shard_locks& operator=(const shard_locks&) = delete;

 private:
  std::vector<shard*> shards_;
};

/// Lets every held cell go as it was (unless `commit` wrote it first);
/// destroyed before the shard locks, so no cell is ever held without its
/// lock, whatever throws.
class holds {
 public:
  explicit holds(std::vector<work>& w) : w_(w) {}
  ~holds() {
    for (work& x : w_)
      if (x.held) {
        (void)cell_cas(x.r, held_lo, x.hi, x.lo, x.hi);
        x.held = false;
      }
  }
  holds(const holds&) = delete;
  holds& operator=(const holds&) = delete;

 private:
  std::vector<work>& w_;
};

/// Holds the cell of a live compact record, recording its value. Requires
/// the shard lock (so the cell is neither dead nor held already).
void hold(work& x) {
  u64 lo;
  u64 hi;
  cell_load(x.r, lo, hi);
  for (;;) {
    const u128 before = cell_cas(x.r, lo, hi, held_lo, hi);
    if (before == pack(lo, hi)) break;
    lo = static_cast<u64>(before);
    hi = static_cast<u64>(before >> 64);
  }
  x.lo = lo;
  x.hi = hi;
  x.held = true;
}

/// A check's answer at `eff` with its cost on its state as found, computed
/// on a copy (the new cell in nlo/nhi, the new general state in `st`);
/// with `ticket`, its receipt too (the core `admit` on the same state: a
/// compact cell read as its core state, whose admit the cell's step
/// mirrors exactly).
decision trial(work& x, tick now, bool ticket = false) {
  impl_t& im = *x.im;
  if (im.m != mode::general) {
    x.nlo = 0;
    x.nhi = 0;
    const decision d = rebase(im.step(x.lo, x.hi, x.eff, x.cost, x.nlo, x.nhi), now, x.eff);
    if (ticket && d.allowed) {
      any_state st = x.r != nullptr ? im.cell_state(x.lo, x.hi) : im.fresh;
      x.ticket = admit(im.policy, st, x.eff, x.cost).ticket;
    }
    return d;
  }
  x.st = x.r != nullptr ? *reinterpret_cast<const any_state*>(x.r->lo) : im.fresh;
  if (ticket) {
    admission a = admit(im.policy, *x.st, x.eff, x.cost);
    x.ticket = std::move(a.ticket);
    return rebase(a.result, now, x.eff);
  }
  return rebase(decide(im.policy, *x.st, x.eff, x.cost), now, x.eff);
}

/// A check's report at `eff` on its state as found, on a copy: the new
/// cell or general state always (a report is never denied).
decision trial_report(work& x, tick now) {
  impl_t& im = *x.im;
  if (im.m != mode::general) {
    x.nlo = 0;
    x.nhi = 0;
    return rebase(im.report_step(x.lo, x.hi, x.eff, x.cost, x.nlo, x.nhi), now, x.eff);
  }
  x.st = x.r != nullptr ? *reinterpret_cast<const any_state*>(x.r->lo) : im.fresh;
  return rebase(report(im.policy, *x.st, x.eff, x.cost), now, x.eff);
}

/// The untouched state's figures (a decision of cost 0: denied, `never`,
/// and a pure read of remaining and reset_after).
decision untouched(const work& x, tick now) {
  impl_t& im = *x.im;
  if (im.m != mode::general) {
    u64 nlo = 0;
    u64 nhi = 0;
    return rebase(im.step(x.lo, x.hi, x.eff, 0, nlo, nhi), now, x.eff);
  }
  any_state copy = x.r != nullptr ? *reinterpret_cast<const any_state*>(x.r->lo) : im.fresh;
  return rebase(decide(im.policy, copy, x.eff, 0), now, x.eff);
}

/// The request's decision from its checks' (all_of, keyed.hpp): the one
/// all_of rule (sluice/detail/all_of_fold.hpp). On a denied request each
/// check's decision holds its figures as it is; one that would have
/// admitted reports no wait.
decision combine(const std::vector<work>& w, bool allowed) {
  detail::all_of_fold fold;
  if (!allowed) fold.mark_denied();
  for (std::size_t k = 0; k < w.size(); ++k) {
    const decision& d = w[k].d;
    const auto part = static_cast<std::int32_t>(k);
    if (allowed) {
      fold.admit(part, d);
      continue;
    }
    fold.as_is(d.remaining, d.reset_after);
    if (!d.allowed && d.retry_after != 0) fold.deny(part, d);
  }
  return fold.result();
}

/// The multi-key decision; `commit` false for a peek.
decision decide_all(std::span<const keyed_check> checks, tick now, std::int64_t cost, std::span<decision> per_check,
                    bool commit, bool reports, keyed_limiter::impl* (*impl_of)(keyed_limiter*),
                    std::span<receipt> receipts = {}) {
  const std::size_t n = checks.size();
  if (n == 0) throw std::invalid_argument("sluice::keyed_limiter::try_acquire_all_at: no checks");
  if (!per_check.empty() && per_check.size() < n)
    throw std::invalid_argument("sluice::keyed_limiter::try_acquire_all_at: per_check is shorter than checks");
  std::vector<work> w(n);
  std::vector<shard*> shards(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (checks[i].limiter == nullptr)
      throw std::invalid_argument("sluice::keyed_limiter::try_acquire_all_at: a check without a store");
    for (std::size_t j = 0; j < i; ++j)
      if (checks[j].limiter == checks[i].limiter && checks[j].key == checks[i].key)
        throw std::invalid_argument("sluice::keyed_limiter::try_acquire_all_at: a (store, key) named twice");
    if (checks[i].cost < 0)
      throw std::invalid_argument("sluice::keyed_limiter::try_acquire_all_at: a check's cost is negative");
    if (reports && (checks[i].cost != 0 ? checks[i].cost : cost) < 1)
      throw std::invalid_argument("sluice::keyed_limiter::report_all_at: a check's cost is below 1");
    work& x = w[i];
    x.im = impl_of(checks[i].limiter);
    x.key = checks[i].key;
    x.cost = checks[i].cost != 0 ? checks[i].cost : cost;
    const u64 h = x.im->hash(x.key);
    x.s = &x.im->shard_for(h);
    x.h21 = impl_t::h21_for(h);
    shards[i] = x.s;
  }
  bool allowed = true;
  bool refused = false;
  bool inserted = false;
  {
    const shard_locks locks(std::move(shards));
    // A spent budget: sweep each check's shard for fresh states first,
    // before any record is found or cell held (a sweep may drop them).
    for (work& x : w)
      if (x.im->budget != nullptr && x.im->budget->held() >= x.im->budget->max_states() &&
          x.s->tab.load(std::memory_order_relaxed) != nullptr)
        (void)x.im->sweep(*x.s, x.im->judge_at(now), 64, x.s->tab.load(std::memory_order_relaxed)->cap, false);
    const holds held(w);
    for (work& x : w) {
      const table* t = x.s->tab.load(std::memory_order_relaxed);
      x.r = t != nullptr ? find(t, x.h21, x.key) : nullptr;
      x.eff = x.r != nullptr ? now : impl_t::absent_at(*x.s, now);
      if (x.im->m != mode::general) {
        if (x.r != nullptr) {
          hold(x);
        } else {
          x.lo = 0;
          x.hi = static_cast<u64>(t_min);
        }
      }
    }
    for (work& x : w) {
      x.d = reports ? trial_report(x, now) : trial(x, now, !receipts.empty());
      allowed = allowed && x.d.allowed;
    }
    // Room for every new key that would be stored, before anything is
    // written: a refused request charges no check.
    if (allowed && commit) {
      for (work& x : w) {
        const bool stores = x.r == nullptr && (x.im->m != mode::general || !(*x.st == x.im->fresh));
        if (!stores) continue;
        if (!x.im->reserve(*x.s, now, false)) {
          refused = true;
          break;
        }
        x.reserved = true;
      }
      if (refused) {
        for (work& x : w)
          if (x.reserved) {
            detail::keyed_internals::give(*x.im->budget, 1);
            x.reserved = false;
          }
        allowed = false;
      }
    }
    if (!allowed) {
      for (work& x : w) {
        if (!x.d.allowed) continue;  // its own denial: already the untouched state's answer
        const decision u = untouched(x, now);
        x.d.allowed = false;
        x.d.remaining = u.remaining;
        x.d.reset_after = u.reset_after;
        x.d.retry_after = 0;
        x.d.release_after = 0;
      }
    } else if (commit) {
      // Existing states first (a held cell let go with its new value), then
      // new keys: an insert may sweep or evict in its shard, which must see
      // no held cell and no state about to be written back.
      for (work& x : w) {
        if (x.r == nullptr) continue;
        if (x.im->m != mode::general) {
          (void)cell_cas(x.r, held_lo, x.hi, x.nlo, x.nhi);
          x.held = false;
        } else {
          *reinterpret_cast<any_state*>(x.r->lo) = std::move(*x.st);
        }
      }
      for (work& x : w) {
        if (x.r != nullptr) continue;
        if (x.im->m != mode::general) {
          x.im->insert(*x.s, x.h21, x.key, x.nlo, x.nhi, x.im->judge_at(now));
          x.reserved = false;
          inserted = true;
        } else if (!(*x.st == x.im->fresh)) {
          auto owned = std::make_unique<any_state>(std::move(*x.st));
          x.im->insert(*x.s, x.h21, x.key, reinterpret_cast<u64>(owned.get()), 0, x.im->judge_at(now));
          x.reserved = false;
          owned.release();  // NOLINT: the record owns it now
        }
      }
    }
  }
  if (inserted)
    for (work& x : w)
      if (x.r == nullptr && x.im->m != mode::general) x.im->maybe_reclaim(*x.s);
  for (work& x : w)  // room taken for an insert that threw
    if (x.reserved) detail::keyed_internals::give(*x.im->budget, 1);
  decision out;
  if (reports && allowed) {
    std::vector<decision> each(n);
    for (std::size_t i = 0; i < n; ++i) each[i] = w[i].d;
    out = combine_reports(each);
  } else {
    out = combine(w, allowed);
  }
  if (refused) {
    out.retry_after = never;
    out.part = keyed_refused;
  }
  if (!per_check.empty())
    for (std::size_t i = 0; i < n; ++i) per_check[i] = w[i].d;
  if (!receipts.empty())
    for (std::size_t i = 0; i < n; ++i) receipts[i] = allowed && commit ? std::move(w[i].ticket) : receipt{};
  return out;
}

/// The refund by receipts (keyed.hpp, refund_all_at): under the same locks
/// and holds as a decision, each check's state as found is refunded on a
/// copy with the core `refund`, then written back (a compact cell from its
/// core state). A key without a state gets nothing: it is fresh already.
decision refund_all(std::span<const keyed_check> checks, tick now, std::span<receipt> receipts,
                    std::span<decision> per_check, std::span<std::int64_t> given,
                    keyed_limiter::impl* (*impl_of)(keyed_limiter*)) {
  const std::size_t n = checks.size();
  if (n == 0) throw std::invalid_argument("sluice::keyed_limiter::refund_all_at: no checks");
  if (receipts.size() < n || (!per_check.empty() && per_check.size() < n) || (!given.empty() && given.size() < n))
    throw std::invalid_argument("sluice::keyed_limiter::refund_all_at: a span is shorter than checks");
  std::vector<work> w(n);
  std::vector<shard*> shards(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (checks[i].limiter == nullptr)
      throw std::invalid_argument("sluice::keyed_limiter::refund_all_at: a check without a store");
    for (std::size_t j = 0; j < i; ++j)
      if (checks[j].limiter == checks[i].limiter && checks[j].key == checks[i].key)
        throw std::invalid_argument("sluice::keyed_limiter::refund_all_at: a (store, key) named twice");
    work& x = w[i];
    x.im = impl_of(checks[i].limiter);
    x.key = checks[i].key;
    const u64 h = x.im->hash(x.key);
    x.s = &x.im->shard_for(h);
    x.h21 = impl_t::h21_for(h);
    shards[i] = x.s;
  }
  std::vector<std::int64_t> back(n, 0);
  {
    const shard_locks locks(std::move(shards));
    const holds held(w);
    for (work& x : w) {
      const table* t = x.s->tab.load(std::memory_order_relaxed);
      x.r = t != nullptr ? find(t, x.h21, x.key) : nullptr;
      x.eff = x.r != nullptr ? now : impl_t::absent_at(*x.s, now);
      x.lo = 0;
      x.hi = static_cast<u64>(t_min);
      if (x.r != nullptr && x.im->m != mode::general) hold(x);
    }
    for (std::size_t i = 0; i < n; ++i) {
      work& x = w[i];
      impl_t& im = *x.im;
      receipt r(std::move(receipts[i]));
      if (x.r == nullptr) {  // fresh already: nothing to give back
        x.st = im.fresh;
        continue;
      }
      if (im.m != mode::general) {
        any_state st = im.cell_state(x.lo, x.hi);
        const std::int64_t g = refund(im.policy, st, std::move(r), now);
        // A GCRA's cell holds a debt ≥ 0, as its encodings do (gcra.hpp).
        if (auto* gs = std::get_if<gcra::state>(&st)) (void)portable::of<gcra>::settle(std::get<gcra>(im.policy), *gs);
        const auto cell = im.to_cell(st);
        x.st = im.cell_state(x.lo, x.hi);
        if (cell) {
          x.nlo = cell->first;
          x.nhi = cell->second;
          x.st = std::move(st);
          back[i] = g;
        } else {  // cannot be (a refund only lowers the state): keep the cell as it was
          x.nlo = x.lo;
          x.nhi = x.hi;
        }
        (void)cell_cas(x.r, held_lo, x.hi, x.nlo, x.nhi);
        x.held = false;
      } else {
        any_state st = *reinterpret_cast<const any_state*>(x.r->lo);
        back[i] = refund(im.policy, st, std::move(r), now);
        *reinterpret_cast<any_state*>(x.r->lo) = st;
        x.st = std::move(st);
      }
    }
  }
  // The figures after the refund, on the copies (a report's: as a decision
  // of cost 1 at `now` reads them).
  std::vector<decision> each(n);
  for (std::size_t i = 0; i < n; ++i) {
    work& x = w[i];
    any_state zero = *x.st;
    any_state one = *x.st;
    const decision z = rebase(decide(x.im->policy, zero, x.eff, 0), now, x.eff);
    const decision o = rebase(decide(x.im->policy, one, x.eff, 1), now, x.eff);
    each[i] = report_answer(z, o);
    if (!per_check.empty()) per_check[i] = each[i];
    if (!given.empty()) given[i] = back[i];
  }
  return combine_reports(each);
}

}  // namespace

decision keyed_limiter::try_acquire_all_at(std::span<const keyed_check> checks, tick now, std::int64_t cost,
                                           std::span<decision> per_check) {
  return decide_all(checks, now, cost, per_check, true, false, [](keyed_limiter* k) { return k->impl_.get(); });
}

decision keyed_limiter::admit_all_at(std::span<const keyed_check> checks, tick now, std::int64_t cost,
                                     std::span<decision> per_check, std::span<receipt> receipts) {
  if (receipts.size() < checks.size())
    throw std::invalid_argument("sluice::keyed_limiter::admit_all_at: receipts is shorter than checks");
  return decide_all(
      checks, now, cost, per_check, true, false, [](keyed_limiter* k) { return k->impl_.get(); }, receipts);
}

decision keyed_limiter::refund_all_at(std::span<const keyed_check> checks, tick now, std::span<receipt> receipts,
                                      std::span<decision> per_check, std::span<std::int64_t> given) {
  return refund_all(checks, now, receipts, per_check, given, [](keyed_limiter* k) { return k->impl_.get(); });
}

decision keyed_limiter::report_all_at(std::span<const keyed_check> checks, tick now, std::int64_t cost,
                                      std::span<decision> per_check) {
  return decide_all(checks, now, cost, per_check, true, true, [](keyed_limiter* k) { return k->impl_.get(); });
}

decision keyed_limiter::report_at(std::string_view key, tick now, std::int64_t cost) {
  if (cost < 1) return peek_at(key, now, cost);
  const keyed_check one{this, key, cost};
  decision own;
  const decision d = report_all_at(std::span<const keyed_check>(&one, 1), now, cost, std::span<decision>(&own, 1));
  return d.part == keyed_refused ? d : own;
}

decision keyed_limiter::peek_all_at(std::span<const keyed_check> checks, tick now, std::int64_t cost,
                                    std::span<decision> per_check) {
  return decide_all(checks, now, cost, per_check, false, false, [](keyed_limiter* k) { return k->impl_.get(); });
}

}  // namespace sluice
