// The keyed store's memory layout (keyed_impl.hpp builds on it): slots,
// records that never move, open-addressing tables, and the shards that own
// them with their arenas. Private: not installed.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "sluice/core/detail/arith.hpp"
#include "sluice/core/detail/hash.hpp"
#include "sluice/core/time.hpp"

namespace sluice {
namespace keyed_detail {

using detail::i128;
using u64 = std::uint64_t;
__extension__ typedef unsigned __int128 u128;
typedef u128 __attribute__((may_alias)) u128_alias;

constexpr tick t_min = std::numeric_limits<tick>::min();
constexpr tick t_max = std::numeric_limits<tick>::max();

// ---- slots ----
// A slot is 0 (empty) or (h21 << 43) | (record address >> 4): 21 bits of the
// key's hash, which decide its home slot (so a resize never reads a key),
// and the record's address (16-aligned, below 2^47).
constexpr int hash_bits = 21;
constexpr int addr_bits = 43;
constexpr u64 addr_mask = (u64{1} << addr_bits) - 1;
constexpr u64 h21_mask = (u64{1} << hash_bits) - 1;

// ---- records ----
// [lo, hi: the 16-byte cell][1 length byte, or 255 and 4 length bytes][key]
// padded to 16 bytes. Compact policies keep {debt, last} in the cell; the
// general mode keeps an any_state* in `lo`. A dropped compact state is
// first marked dead (lo = tomb_lo, hi unchanged) by one compare-and-swap, so
// a lock-free decision racing with the drop fails its own and retries.
struct alignas(16) record {
  u64 lo;
  u64 hi;
};
constexpr u64 tomb_lo = ~u64{0};
// A compact cell that a multi-key decision holds (lo = held_lo, hi
// unchanged; multi.cpp): it is only ever held under its shard's lock, and
// let go before that lock is released. A lock-free decision that meets it
// takes the shard's lock instead, and so waits for the multi-key decision
// to finish. Neither marker is a valid `lo`: debts and spent tokens are at
// most S·W < 2^63.
constexpr u64 held_lo = ~u64{0} - 1;
constexpr std::size_t batch_distance = 8;     // a batch's prefetch distance, in requests
constexpr std::size_t max_small_units = 256;  // records up to 4 KiB come from the shard's arena

inline unsigned char* tail_of(record* r) noexcept { return reinterpret_cast<unsigned char*>(r) + sizeof(record); }
inline const unsigned char* tail_of(const record* r) noexcept {
  return reinterpret_cast<const unsigned char*>(r) + sizeof(record);
}

inline std::size_t record_units(std::size_t n) noexcept { return (sizeof(record) + (n < 255 ? 1 : 5) + n + 15) / 16; }

inline std::string_view key_of(const record* r) noexcept {
  const unsigned char* t = tail_of(r);
  if (t[0] != 255) return {reinterpret_cast<const char*>(t + 1), t[0]};
  std::uint32_t n;
  std::memcpy(&n, t + 1, 4);
  return {reinterpret_cast<const char*>(t + 5), n};
}

/// Equal bytes, without a call for keys of up to 16 bytes (two overlapping
/// loads on each side, never past either end).
inline bool bytes_eq(const unsigned char* a, const char* b, std::size_t n) noexcept {
  if (n >= 8 && n <= 16) {
    std::uint64_t a0, a1, b0, b1;
    std::memcpy(&a0, a, 8);
    std::memcpy(&b0, b, 8);
    std::memcpy(&a1, a + n - 8, 8);
    std::memcpy(&b1, b + n - 8, 8);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
  }
  if (n >= 4 && n < 8) {
    std::uint32_t a0, a1, b0, b1;
    std::memcpy(&a0, a, 4);
    std::memcpy(&b0, b, 4);
    std::memcpy(&a1, a + n - 4, 4);
    std::memcpy(&b1, b + n - 4, 4);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
  }
  return n == 0 || std::memcmp(a, b, n) == 0;  // an empty key's data() may be null
}

inline bool key_eq(const record* r, std::string_view key) noexcept {
  const unsigned char* t = tail_of(r);
  if (t[0] != 255) return t[0] == key.size() && bytes_eq(t + 1, key.data(), key.size());
  std::uint32_t n;
  std::memcpy(&n, t + 1, 4);
  return n == key.size() && std::memcmp(t + 5, key.data(), key.size()) == 0;
}

inline void write_key(record* r, std::string_view key) noexcept {
  unsigned char* t = tail_of(r);
  if (key.empty()) {  // data() may be null
    t[0] = 0;
  } else if (key.size() < 255) {
    t[0] = static_cast<unsigned char>(key.size());
    std::memcpy(t + 1, key.data(), key.size());
  } else {
    t[0] = 255;
    const auto n = static_cast<std::uint32_t>(key.size());
    std::memcpy(t + 1, &n, 4);
    std::memcpy(t + 5, key.data(), key.size());
  }
}

/// An atomic reading of a live cell. `hi` (the latest admit, or unused) never
/// decreases while a record is reachable and a drop keeps it, so a `lo` read
/// between two equal readings of `hi` was the cell's value at that moment.
inline void cell_load(const record* r, u64& lo, u64& hi) noexcept {
  for (;;) {
    const u64 h1 = __atomic_load_n(&r->hi, __ATOMIC_ACQUIRE);
    lo = __atomic_load_n(&r->lo, __ATOMIC_ACQUIRE);
    hi = __atomic_load_n(&r->hi, __ATOMIC_ACQUIRE);
    if (h1 == hi) return;
  }
}

/// One 16-byte compare-and-swap (lock cmpxchg16b). Returns the cell's value
/// before: equal to the expected one iff the swap happened.
inline u128 cell_cas(record* r, u64 elo, u64 ehi, u64 nlo, u64 nhi) noexcept {
  const u128 e = (static_cast<u128>(ehi) << 64) | elo;
  const u128 n = (static_cast<u128>(nhi) << 64) | nlo;
  return __sync_val_compare_and_swap(reinterpret_cast<u128_alias*>(r), e, n);
}

inline u128 pack(u64 lo, u64 hi) noexcept { return (static_cast<u128>(hi) << 64) | lo; }

// ---- tables ----
struct alignas(64) table {
  std::size_t cap = 0;
  std::size_t threshold = 0;  // grow past this many keys (85% load)
  std::atomic<u64>* slots = nullptr;
};

inline table* new_table(std::size_t cap) {
  void* mem = ::operator new (sizeof(table) + cap * sizeof(std::atomic<u64>), std::align_val_t{64});
  auto* t = new (mem) table;
  t->cap = cap;
  t->threshold = std::min(cap - 1, cap * 85 / 100);
  t->slots = reinterpret_cast<std::atomic<u64>*>(static_cast<unsigned char*>(mem) + sizeof(table));
  for (std::size_t i = 0; i < cap; ++i) new (&t->slots[i]) std::atomic<u64>(0);
  return t;
}

inline void free_table(table* t) noexcept {
  if (t == nullptr) return;
  t->~table();
  ::operator delete (static_cast<void*>(t), std::align_val_t{64});
}

inline std::size_t home_of(u64 h21, std::size_t cap) noexcept {
  return static_cast<std::size_t>((h21 * static_cast<u64>(cap)) >> hash_bits);
}
inline u64 h21_of_slot(u64 m) noexcept { return m >> addr_bits; }
inline record* record_of(u64 m) noexcept { return reinterpret_cast<record*>((m & addr_mask) << 4); }
inline u64 slot_of(u64 h21, const record* r) noexcept { return (h21 << addr_bits) | (reinterpret_cast<u64>(r) >> 4); }

/// Finds `key` by linear probing. Lock-free readers may miss a key that a
/// concurrent erase is shifting (they then take the shard's lock and look
/// again); they never see a slot that points at a freed record.
inline record* find(const table* t, u64 h21, std::string_view key) noexcept {
  const std::size_t cap = t->cap;
  std::size_t i = home_of(h21, cap);
  for (;;) {
    const u64 m = t->slots[i].load(std::memory_order_acquire);
    if (m == 0) return nullptr;
    if (h21_of_slot(m) == h21) {
      record* r = record_of(m);
      if (key_eq(r, key)) return r;
    }
    if (++i == cap) i = 0;
  }
}

/// Puts slot value `m` in the first empty slot from its home. Requires the
/// shard lock and a table that is not full.
inline void place(table* t, u64 m) noexcept {
  std::size_t i = home_of(h21_of_slot(m), t->cap);
  while (t->slots[i].load(std::memory_order_relaxed) != 0)
    if (++i == t->cap) i = 0;
  t->slots[i].store(m, std::memory_order_release);
}

/// Removes the slot at `i` by shifting the rest of its cluster back (no
/// tombstones). Each slot is overwritten in one store, so a reader sees
/// either entry, never a torn one. Requires the shard lock. Returns how
/// many slots it looked at: the rest of the cluster, which a sweep counts
/// against its slice (dropping a long cluster key by key costs its length
/// each time).
inline std::size_t erase_at(table* t, std::size_t i) noexcept {
  const std::size_t cap = t->cap;
  std::size_t hole = i;
  std::size_t j = i;
  std::size_t looked = 1;
  for (;; ++looked) {
    if (++j == cap) j = 0;
    const u64 m = t->slots[j].load(std::memory_order_relaxed);
    if (m == 0) break;
    const std::size_t k = home_of(h21_of_slot(m), cap);
    // The entry at j stays iff its home lies cyclically in (hole, j].
    const bool stays = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j);
    if (stays) continue;
    t->slots[hole].store(m, std::memory_order_release);
    hole = j;
  }
  t->slots[hole].store(0, std::memory_order_release);
  return looked;
}

inline std::size_t find_slot(const table* t, u64 m) noexcept {
  std::size_t i = home_of(h21_of_slot(m), t->cap);
  while (t->slots[i].load(std::memory_order_relaxed) != m)
    if (++i == t->cap) i = 0;
  return i;
}

// ---- shards ----
struct alignas(64) shard {
  // Read by lock-free readers; written under `mu` (rarely: on a resize).
  std::atomic<table*> tab{nullptr};
  alignas(64) std::mutex mu;
  std::atomic<std::size_t> size{0};
  std::size_t limit = std::numeric_limits<std::size_t>::max();
  std::size_t cursor = 0;  // where the next sweep starts
  // Threads waiting for `mu` in a take (a decision carrying its key over):
  // take_some leaves the shard to them (keyed.cpp).
  std::atomic<std::uint32_t> takers{0};
  // The drop bound: the latest instant at which this shard dropped or
  // evicted a state. A request on a key without a state here is read as at
  // least this (semantics.md, "Keys"), so a dropped state's key never sees
  // time before the instant its state was judged at.
  tick bound = std::numeric_limits<tick>::min();
  // The arena: records never move; freed ones are reused by size.
  std::vector<void*> chunks;
  unsigned char* bump = nullptr;
  std::size_t bump_left = 0;
  std::size_t next_chunk = 4096;
  std::vector<record*> free_heads = std::vector<record*>(max_small_units + 1, nullptr);
  // Unlinked but maybe still seen by lock-free readers: reused after a grace period.
  std::vector<record*> limbo;
  std::vector<table*> limbo_tables;
  std::atomic<u64> purged{0};
  std::atomic<u64> evicted{0};
  std::atomic<u64> forgiven{0};
  std::atomic<u64> refused{0};
  // Bytes of this shard's tables and arena (written under `mu`).
  std::atomic<std::size_t> bytes{0};
};

inline void add_bytes(shard& s, std::size_t n) noexcept {
  s.bytes.store(s.bytes.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
inline void sub_bytes(shard& s, std::size_t n) noexcept {
  s.bytes.store(s.bytes.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
}
inline std::size_t table_bytes(const table* t) noexcept { return sizeof(table) + t->cap * sizeof(std::atomic<u64>); }

inline record* alloc_record(shard& s, std::size_t key_size) {
  if (key_size > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("sluice::keyed_limiter: a key is longer than 4 GiB");
  const std::size_t units = record_units(key_size);
  void* p = nullptr;
  if (units > max_small_units) {
    p = ::operator new (units * 16, std::align_val_t{16});
    add_bytes(s, units * 16);
  } else if (record* f = s.free_heads[units]; f != nullptr) {
    s.free_heads[units] = reinterpret_cast<record*>(f->lo);
    p = f;
  } else {
    const std::size_t bytes = units * 16;
    if (s.bump_left < bytes) {
      const std::size_t size = std::max(s.next_chunk, bytes);
      void* c = ::operator new (size, std::align_val_t{64});
      s.chunks.push_back(c);
      add_bytes(s, size);
      s.bump = static_cast<unsigned char*>(c);
      s.bump_left = size;
      s.next_chunk = std::min<std::size_t>(s.next_chunk * 2, 16384);  // small: the last chunk of each shard is slack
    }
    p = s.bump;
    s.bump += bytes;
    s.bump_left -= bytes;
  }
  if (reinterpret_cast<u64>(p) >> (addr_bits + 4) != 0) throw std::bad_alloc();  // cannot happen below 2^47
  return static_cast<record*>(p);
}

/// Puts a record whose grace period is over back for reuse.
inline void release_record(shard& s, record* r) noexcept {
  const std::size_t units = record_units(key_of(r).size());
  if (units > max_small_units) {
    ::operator delete (static_cast<void*>(r), std::align_val_t{16});
    sub_bytes(s, units * 16);
    return;
  }
  r->lo = reinterpret_cast<u64>(s.free_heads[units]);
  s.free_heads[units] = r;
}

}  // namespace keyed_detail
}  // namespace sluice
