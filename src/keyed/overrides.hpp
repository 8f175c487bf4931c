// The memory store's overrides (semantics.md, "Overrides"): what
// memory_store.cpp keeps per policy and what src/keyed/overrides.cpp needs
// of its internals. Private to sluice::keyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::keyed_detail {

/// A hash for std::string keys that also finds by std::string_view.
struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

/// One policy's overrides: each overridden key's state lives in a keyed
/// store of its own, under the override (`states->policy()`).
struct override_table {
  /// The overrides held: a decision looks a key up only when it is not 0.
  std::atomic<std::size_t> count{0};
  /// Changed only while the policy's gate is closed and no decision is in
  /// flight on it (after a grace period), under its redefinition lock; read
  /// in a store read section with the gate open, or under that lock.
  std::unordered_map<std::string, std::unique_ptr<keyed_limiter>, string_hash, std::equal_to<>> map;
  /// A filter of the keys in `map` (a bit per `slot_of`), changed with it:
  /// a key whose bit is clear has no override, found without hashing it.
  std::uint64_t filter[64] = {};

  /// The filter's bit of `key`: its length and three of its bytes, a few
  /// instructions (no pass over the key).
  static std::size_t slot_of(std::string_view key) noexcept {
    const std::size_t n = key.size();
    if (n == 0) return 0;
    const auto b = [&](std::size_t i) { return static_cast<std::size_t>(static_cast<unsigned char>(key[i])); };
    return (n * 7 + b(0) + b(n / 2) * 31 + b(n - 1) * 131) & 4095;
  }
  /// Sets the filter from `map`.
  void refilter() noexcept {
    for (auto& w : filter) w = 0;
    for (const auto& kv : map) {
      const std::size_t s = slot_of(kv.first);
      filter[s >> 6] |= std::uint64_t{1} << (s & 63);
    }
  }

  /// The keyed store of `key`'s override, or null.
  [[nodiscard]] keyed_limiter* find(std::string_view key) const {
    if (count.load(std::memory_order_acquire) == 0) [[likely]]
      return nullptr;
    return find_held(key);
  }

  /// As `find`, for a caller that has seen `count` above 0.
  [[nodiscard]] keyed_limiter* find_held(std::string_view key) const {
    const std::size_t s = slot_of(key);
    if ((filter[s >> 6] >> (s & 63) & 1U) == 0) return nullptr;
    const auto it = map.find(key);
    return it == map.end() ? nullptr : it->second.get();
  }
};

/// Calls `fn(table, configured)` for policy `id` under its redefinition
/// lock (no redefinition, carry slice or other override change meanwhile),
/// decisions going on. With `closed`, the policy's gate is closed around
/// `fn` and every decision in flight on it has ended before it runs, and
/// `key` (if any) has been carried over from any earlier configuration first: `fn`
/// may then move `key`'s state and change the table. False for an unknown
/// policy.
bool with_overrides(memory_store& m, policy_id id, bool closed, std::optional<std::string_view> key,
                    const std::function<void(override_table&, keyed_limiter& configured)>& fn);

/// The overrides held over every policy (the bound counts them).
std::atomic<std::size_t>& override_total(memory_store& m) noexcept;

/// The store's options (its bound on overrides, its keyed options).
const memory_store_options& options_of(memory_store& m) noexcept;

}  // namespace sluice::keyed_detail
