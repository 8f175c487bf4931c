// The memory store's overrides (semantics.md, "Overrides"): what
// memory_store.cpp keeps per policy and what src/keyed/overrides.cpp needs
// of its internals. Private to sluice::keyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "sluice/keyed.hpp"
#include "sluice/store/memory.hpp"

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

  /// The keyed store of `key`'s override, or null.
  [[nodiscard]] keyed_limiter* find(std::string_view key) const {
    if (count.load(std::memory_order_acquire) == 0) [[likely]]
      return nullptr;
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
