// The floor of the keyed steady-state scenario on this machine: the least
// any keyed store can do per decision on 1M keys visited in shuffled order.
// One open-addressing table whose 32-byte slot holds the key (up to 15
// bytes, inline) and a 16-byte cell, found by linear probing and updated
// with one 16-byte compare-and-swap: one cache line per key, no pointer to
// follow, no decision to compute, no deletion, no resize. The harness's own
// key fetch is paid as by every store. What remains is memory latency, so
// a store's figure is fairly read against this one, not against the
// cache-resident single-key figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string_view>
#include <vector>

namespace sluice_bench {

class floor_table {
 public:
  explicit floor_table(std::size_t keys) : slots_(keys + keys / 4 + 1) {}

  /// Requires a key of 1 to 15 bytes, not yet present.
  void insert(std::string_view key) {
    std::size_t i = home(key);
    while (slots_[i].len != 0) i = next(i);
    slots_[i].len = static_cast<unsigned char>(key.size());
    std::memcpy(slots_[i].key, key.data(), key.size());
  }

  /// Finds `key` and adds one to its cell with a compare-and-swap.
  bool visit(std::string_view key) { return visit_at(home(key), key); }

  /// The same in batches: hash every key and prefetch its home slot, then
  /// visit each (the table's answer to try_acquire_many).
  std::size_t visit_many(const std::string_view* keys, std::size_t n) {
    std::size_t homes[64];
    std::size_t found = 0;
    for (std::size_t b = 0; b < n; b += 64) {
      const std::size_t m = n - b < 64 ? n - b : 64;
      for (std::size_t j = 0; j < m; ++j) {
        homes[j] = home(keys[b + j]);
        __builtin_prefetch(&slots_[homes[j]], 1);
      }
      for (std::size_t j = 0; j < m; ++j) found += visit_at(homes[j], keys[b + j]) ? 1 : 0;
    }
    return found;
  }

 private:
  __extension__ typedef unsigned __int128 u128;
  struct alignas(32) slot {
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    unsigned char len = 0;
    char key[15] = {};
  };

  std::size_t home(std::string_view key) const noexcept {
    const std::uint64_t h = std::hash<std::string_view>{}(key);
    return static_cast<std::size_t>((static_cast<u128>(h) * slots_.size()) >> 64);
  }
  std::size_t next(std::size_t i) const noexcept { return i + 1 == slots_.size() ? 0 : i + 1; }

  bool visit_at(std::size_t i, std::string_view key) {
    for (;;) {
      slot& s = slots_[i];
      if (s.len == 0) return false;
      if (s.len == key.size() && std::memcmp(s.key, key.data(), key.size()) == 0) {
        auto* cell = reinterpret_cast<u128*>(&s);
        const u128 seen = (static_cast<u128>(s.hi) << 64) | s.lo;
        (void)__sync_val_compare_and_swap(cell, seen, seen + 1);
        return true;
      }
      i = next(i);
    }
  }

  std::vector<slot> slots_;
};

}  // namespace sluice_bench
