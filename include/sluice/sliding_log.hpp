// Sliding log: keeps the instants of admitted units; a unit admitted at t is
// in the window at `now` iff now − W < t ≤ now. Exact (no window ever holds
// more than L) at the price of memory: up to L entries per key.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sluice/decision.hpp"
#include "sluice/detail/arith.hpp"
#include "sluice/portable.hpp"
#include "sluice/rate.hpp"
#include "sluice/result.hpp"
#include "sluice/time.hpp"

namespace sluice {

/// The policy of the sliding log. Immutable once built.
class sliding_log {
 public:
  /// One run of units admitted at the same instant.
  struct entry {
    tick at = 0;
    std::int64_t units = 0;
    friend constexpr bool operator==(const entry&, const entry&) = default;
  };

  /// The admitted units still possibly in the window, oldest first, as a
  /// ring of runs (units admitted at one instant share an entry), so it
  /// holds at most min(L, distinct instants in a window) entries. Unlike the
  /// other states it owns memory, so it is copyable but not trivially;
  /// fresh is `state{}`.
  class state {
   public:
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    /// The i-th oldest entry, i < size().
    [[nodiscard]] const entry& at(std::size_t i) const noexcept { return ring_[(head_ + i) & (ring_.size() - 1)]; }
    /// Sum of units over all entries held (expired ones included until pruned).
    [[nodiscard]] std::int64_t units() const noexcept { return units_; }
    [[nodiscard]] tick last() const noexcept { return last_; }

    /// Equal iff the same entries in the same order (capacity ignored).
    friend bool operator==(const state& a, const state& b) noexcept {
      if (a.size_ != b.size_ || a.units_ != b.units_ || a.last_ != b.last_) return false;
      for (std::size_t i = 0; i < a.size_; ++i)
        if (!(a.at(i) == b.at(i))) return false;
      return true;
    }

   private:
    friend class sliding_log;
    void pop_front() noexcept {
      units_ -= ring_[head_].units;
      head_ = (head_ + 1) & (ring_.size() - 1);
      --size_;
    }
    void push_back(entry e);

    std::vector<entry> ring_;  // capacity a power of two
    std::size_t head_ = 0;
    std::size_t size_ = 0;
    std::int64_t units_ = 0;
    tick last_ = detail::i64_min;
  };

  /// Builds the policy. Errors name "limit" or "window".
  static result<sliding_log> make(rate r);

  [[nodiscard]] constexpr rate limit() const noexcept { return r_; }

  /// Decides one request of `cost` units at `now`. Allocates only when the
  /// log grows past its current capacity.
  decision decide(state& s, tick now, std::int64_t cost) const noexcept;

  /// What `decide` would answer for the same request, without changing `s`
  /// (no copy, no allocation). Pure; thread-safe for concurrent readers.
  decision peek(const state& s, tick now, std::int64_t cost) const noexcept;

  /// Charges `cost` units at `now` whatever the limit says (a report:
  /// semantics.md, "Reports"), within the bounds the contract states.
  /// Used by `report` (report.hpp); a cost < 1 or L = 0 changes nothing.
  void charge(state& s, tick now, std::int64_t cost) const noexcept;

 private:
  /// What a decision reads from a state before it changes anything.
  struct scan {
    tick e;                  // now, or the latest admit if the clock stepped back
    std::size_t first;       // entries at or before e − W (they have left the window)
    std::int64_t in_window;  // units still in the window at e
  };
  scan scan_of(const state& s, tick now) const noexcept;
  decision answer(const state& s, const scan& sc, tick now, std::int64_t cost) const noexcept;

  constexpr explicit sliding_log(rate r) noexcept : r_(r) {}
  rate r_;
};

/// Decides one request: admits iff the units in (now − W, now] plus `cost`
/// stay within L.
inline decision decide(const sliding_log& p, sliding_log::state& s, tick now, std::int64_t cost) noexcept {
  return p.decide(s, now, cost);
}

/// The sliding log's encodings (portable.hpp): a state of variable size (its
/// runs), encoded by each codec's `variable_state` hook.
template <>
struct portable::of<sliding_log> {
  static constexpr char letter = 's';
  static constexpr std::array params{limit_param<sliding_log>, window_param<sliding_log>};
  static result<sliding_log> make(const std::array<std::int64_t, 2>& v) { return sliding_log::make(rate{v[0], v[1]}); }
};

}  // namespace sluice
