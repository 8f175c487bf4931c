// The keyed store's public functions over its internals (keyed_impl.hpp).
#include "keyed_impl.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace sluice {

// ---- keyed_limiter ----

namespace {
tick read_unix(const void*) noexcept { return unix_clock::now(); }
}  // namespace

keyed_limiter::keyed_limiter(any_policy policy, keyed_options options)
    : impl_(std::make_unique<impl>(std::move(policy), options)) {
  impl_->clock_fn = read_unix;
}

keyed_limiter::keyed_limiter(any_policy policy, keyed_options options, const manual_clock& clock)
    : impl_(std::make_unique<impl>(std::move(policy), options)) {
  impl_->clock_fn = read_manual;
  impl_->clock_ctx = &clock;
}

keyed_limiter::~keyed_limiter() = default;

tick keyed_limiter::now() const noexcept { return impl_->clock_fn(impl_->clock_ctx); }

decision keyed_limiter::try_acquire_at(std::string_view key, tick now, std::int64_t cost) {
  return impl_->acquire(key, cost, now);
}

decision keyed_limiter::try_acquire(std::string_view key, std::int64_t cost) {
  // The clock is read first, before the key's memory is touched: reading
  // it waits for every earlier instruction, so read after the lookup it
  // would keep the next request's cache misses from overlapping this one's.
  const tick now = impl_->clock_fn(impl_->clock_ctx);
  return impl_->acquire(key, cost, now);
}

void keyed_limiter::try_acquire_many_at(std::span<const keyed_request> requests, std::span<decision> out) {
  if (out.size() < requests.size())
    throw std::invalid_argument("sluice::keyed_limiter::try_acquire_many_at: out is shorter than requests");
  impl_->acquire_many(
      requests.size(), [&](std::size_t i) -> const keyed_request& { return requests[i]; },
      [&](std::size_t i, const decision& d) { out[i] = d; });
}

void keyed_limiter::try_acquire_many(std::span<const std::string_view> keys, std::span<decision> out,
                                     std::int64_t cost) {
  if (out.size() < keys.size())
    throw std::invalid_argument("sluice::keyed_limiter::try_acquire_many: out is shorter than keys");
  const tick now = impl_->clock_fn(impl_->clock_ctx);
  keyed_request r{.key = {}, .now = now, .cost = cost};
  impl_->acquire_many(
      keys.size(),
      [&](std::size_t i) -> const keyed_request& {
        r.key = keys[i];
        return r;
      },
      [&](std::size_t i, const decision& d) { out[i] = d; });
}

decision keyed_limiter::peek_at(std::string_view key, tick now, std::int64_t cost) const {
  return impl_->peek(key, now, cost);
}

std::size_t keyed_limiter::purge(tick now, std::size_t slice) {
  impl_->raise_horizon(now);
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < impl_->nshards; ++i)
    dropped += impl_->purge_shard(impl_->shards[i], now, std::max<std::size_t>(slice, 1));
  return dropped;
}

std::size_t keyed_limiter::purge_step(tick now, std::size_t max_slots) {
  impl_->raise_horizon(now);
  shard& s = impl_->shards[impl_->step_next.fetch_add(1, std::memory_order_relaxed) % impl_->nshards];
  std::size_t dropped = 0;
  {
    std::lock_guard lock(s.mu);
    dropped = impl_->sweep(s, now, max_slots, max_slots, false).dropped;
  }
  impl_->maybe_reclaim(s);
  return dropped;
}

tick keyed_limiter::horizon() const noexcept { return impl_->horizon.load(std::memory_order_acquire); }

tick keyed_limiter::drop_bound(std::string_view key) const {
  shard& s = impl_->shard_for(impl_->hash(key));
  std::lock_guard lock(s.mu);
  return s.bound;
}

keyed_stats keyed_limiter::stats() const noexcept {
  keyed_stats out;
  for (std::size_t i = 0; i < impl_->nshards; ++i) {
    const shard& s = impl_->shards[i];
    out.keys += s.size.load(std::memory_order_relaxed);
    out.purged += s.purged.load(std::memory_order_relaxed);
    out.evicted += s.evicted.load(std::memory_order_relaxed);
    out.units_forgiven += s.forgiven.load(std::memory_order_relaxed);
    out.refused += s.refused.load(std::memory_order_relaxed);
    out.bytes += s.bytes.load(std::memory_order_relaxed);
  }
  if (impl_->m == mode::general) out.bytes += out.keys * sizeof(any_state);
  return out;
}

std::size_t keyed_limiter::size() const noexcept { return static_cast<std::size_t>(stats().keys); }

bool keyed_limiter::lock_free() const noexcept { return impl_->m != mode::general; }

const any_policy& keyed_limiter::policy() const noexcept { return impl_->policy; }

std::size_t keyed_limiter::shard_count() const noexcept { return impl_->nshards; }

std::optional<any_state> keyed_limiter::state_of(std::string_view key) const {
  const u64 h = impl_->hash(key);
  shard& s = impl_->shard_for(h);
  std::lock_guard lock(s.mu);
  const table* t = s.tab.load(std::memory_order_relaxed);
  const record* r = t != nullptr ? find(t, impl::h21_for(h), key) : nullptr;
  if (r == nullptr) return std::nullopt;
  return impl_->state_copy(r);
}

void keyed_limiter::for_each(const std::function<void(std::string_view, const any_state&)>& fn) const {
  for (std::size_t i = 0; i < impl_->nshards; ++i) {
    shard& s = impl_->shards[i];
    std::lock_guard lock(s.mu);
    const table* t = s.tab.load(std::memory_order_relaxed);
    if (t == nullptr) continue;
    for (std::size_t j = 0; j < t->cap; ++j) {
      const u64 v = t->slots[j].load(std::memory_order_relaxed);
      if (v == 0) continue;
      const record* r = record_of(v);
      if (auto st = impl_->state_copy(r)) fn(key_of(r), *st);
    }
  }
}

void keyed_limiter::restore(const std::vector<std::pair<std::string, any_state>>& entries) {
  impl& im = *impl_;
  const std::size_t want = im.policy.index();
  // Check everything first: a bad entry changes nothing.
  std::vector<std::vector<std::size_t>> by_shard(im.nshards);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const any_state& st = entries[i].second;
    if (st.index() != want) throw std::invalid_argument("sluice::keyed_limiter::restore: a state of another algorithm");
    if (im.m != mode::general && !im.to_cell(st))
      throw std::invalid_argument("sluice::keyed_limiter::restore: a state out of range for this policy");
    const u64 h = im.hash(entries[i].first);
    by_shard[im.shard_shift >= 64 ? 0 : h >> im.shard_shift].push_back(i);
  }
  const tick at = im.horizon.load(std::memory_order_relaxed);
  for (std::size_t si = 0; si < im.nshards; ++si) {
    shard& s = im.shards[si];
    {
      std::lock_guard lock(s.mu);
      im.clear_shard_locked(s);
      for (const std::size_t i : by_shard[si]) {
        const auto& [key, st] = entries[i];
        if (st == im.fresh) continue;
        const u64 h21 = impl::h21_for(im.hash(key));
        const table* t = s.tab.load(std::memory_order_relaxed);
        if (t != nullptr && find(t, h21, key) != nullptr) continue;  // a repeated key: the first one wins
        if (im.m == mode::general) {
          auto owned = std::make_unique<any_state>(st);
          im.insert(s, h21, key, reinterpret_cast<u64>(owned.get()), 0, at);
          owned.release();  // NOLINT: the record owns it now
        } else {
          const auto cell = *im.to_cell(st);
          im.insert(s, h21, key, cell.first, cell.second, at);
        }
        if (im.budget != nullptr) detail::keyed_internals::add(*im.budget, 1);  // restored whatever the bound
      }
    }
    if (im.m != mode::general) im.reclaim(s);
  }
}

namespace {
/// Unlinks record `r` (at slot value `v` of `s`'s table) and retires it.
/// Requires the shard lock; a compact cell is made a tombstone first, so a
/// lock-free reader that still reaches it decides nothing on it.
void unlink_locked(keyed_limiter::impl& im, shard& s, record* r, std::size_t at) {
  if (im.m != mode::general) {
    u64 lo;
    u64 hi;
    cell_load(r, lo, hi);
    while (cell_cas(r, lo, hi, tomb_lo, hi) != pack(lo, hi)) cell_load(r, lo, hi);
  }
  (void)erase_at(s.tab.load(std::memory_order_relaxed), at);
  im.retire(s, r);
  im.count_drop(s);  // gives its room in the budget back: the state moves to another store
}
}  // namespace

bool keyed_limiter::take(std::string_view key, const std::function<void(any_state&&)>& fn) {
  impl& im = *impl_;
  const u64 h = im.hash(key);
  shard& s = im.shard_for(h);
  {
    s.takers.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(s.mu);
    s.takers.fetch_sub(1, std::memory_order_relaxed);
    const table* t = s.tab.load(std::memory_order_relaxed);
    const u64 h21 = impl::h21_for(h);
    record* r = t != nullptr ? find(t, h21, key) : nullptr;
    if (r == nullptr) return false;
    std::optional<any_state> st = im.state_copy(r);
    if (!st) return false;
    fn(std::move(*st));
    unlink_locked(im, s, r, find_slot(t, slot_of(h21, r)));
  }
  // The record waits in the shard's limbo for the next reclaim (an insert's)
  // or the store's end: a take never waits for readers.
  return true;
}

std::size_t keyed_limiter::take_some(std::size_t max, const std::function<void(std::string_view, any_state&&)>& fn) {
  impl& im = *impl_;
  // The shard of the last call while it holds states and no take waits for
  // its lock, else the next one: glibc's mutex lets the thread that unlocks
  // take it again before a waiter wakes, so slice after slice on one shard
  // kept a decision carrying its key over waiting through hundreds of them
  // (a reload of 1M states: decisions of up to 135 ms). A shard with a
  // waiting take is passed over on the first round only.
  const std::size_t first = im.take_next.load(std::memory_order_relaxed);
  for (std::size_t k = 0; k < 2 * im.nshards; ++k) {
    const std::size_t si = (first + k) % im.nshards;
    shard& s = im.shards[si];
    if (k < im.nshards && s.takers.load(std::memory_order_relaxed) != 0) continue;
    std::size_t moved = 0;
    {
      std::lock_guard lock(s.mu);
      const table* t = s.tab.load(std::memory_order_relaxed);
      if (t == nullptr) continue;
      // From where the last call stopped, once round: a removal's backward
      // shift (or a take) may leave an entry before the cursor.
      std::size_t i = s.cursor % t->cap;
      std::size_t seen = 0;
      while (seen < t->cap && moved < max && s.size.load(std::memory_order_relaxed) > 0) {
        const u64 v = t->slots[i].load(std::memory_order_relaxed);
        if (v == 0) {
          ++seen;
          if (++i == t->cap) i = 0;
          continue;
        }
        record* r = record_of(v);
        std::optional<any_state> st = im.state_copy(r);
        if (st) fn(key_of(r), std::move(*st));
        unlink_locked(im, s, r, i);  // slot i now holds the next entry of its cluster: look at it again
        ++moved;
      }
      s.cursor = i;
    }
    // As for take: the records wait in limbo, freed without waiting here.
    if (moved > 0) {
      im.take_next.store(si, std::memory_order_relaxed);
      return moved;
    }
  }
  return 0;
}

bool keyed_limiter::put(std::string_view key, const any_state& st) {
  impl& im = *impl_;
  if (st.index() != im.policy.index())
    throw std::invalid_argument("sluice::keyed_limiter::put: a state of another algorithm");
  std::optional<std::pair<u64, u64>> cell;
  if (im.m != mode::general) {
    cell = im.to_cell(st);
    if (!cell) throw std::invalid_argument("sluice::keyed_limiter::put: a state out of range for this policy");
  }
  if (st == im.fresh) return false;
  const u64 h = im.hash(key);
  shard& s = im.shard_for(h);
  const u64 h21 = impl::h21_for(h);
  {
    std::lock_guard lock(s.mu);
    const table* t = s.tab.load(std::memory_order_relaxed);
    if (t != nullptr && find(t, h21, key) != nullptr) return false;
    // A state carried over is never refused for room: it takes its place in
    // the budget whatever the bound (take gave the old store's room back).
    if (im.budget != nullptr) detail::keyed_internals::add(*im.budget, 1);
    const tick at = im.horizon.load(std::memory_order_acquire);
    if (im.m == mode::general) {
      auto owned = std::make_unique<any_state>(st);
      im.insert(s, h21, key, reinterpret_cast<u64>(owned.get()), 0, at);
      owned.release();  // NOLINT: the record owns it now
    } else {
      im.insert(s, h21, key, cell->first, cell->second, at);
    }
  }
  if (im.m != mode::general) im.maybe_reclaim(s);
  return true;
}

void keyed_limiter::clear() {
  for (std::size_t i = 0; i < impl_->nshards; ++i) {
    shard& s = impl_->shards[i];
    {
      std::lock_guard lock(s.mu);
      impl_->clear_shard_locked(s);
    }
    if (impl_->m != mode::general) impl_->reclaim(s);
  }
}

}  // namespace sluice
