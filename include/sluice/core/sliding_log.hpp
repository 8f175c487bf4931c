// Sliding log: keeps the instants of admitted units; a unit admitted at t is
// in the window at `now` iff now − W < t ≤ now. Exact (no window ever holds
// more than L) at the price of memory: up to L entries per key.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/decision.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

struct spec;
class receipt;
struct limit_figures;
struct worst_case_traits;

/// The policy of the sliding log. Immutable once built.
class sliding_log {
 public:
  /// Its name on the command line and in policy expressions.
  static constexpr std::string_view name = "sliding-log";
  /// Whether its state owns memory (then `peek` reads it in place;
  /// otherwise a peek decides on a copy).
  static constexpr bool owns_memory = true;
  /// The options a policy expression may give it ("" for none).
  static constexpr std::string_view options = "";

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
  /// Builds the policy a spec describes (any.hpp: make_policy); the error
  /// names the field.
  static result<sliding_log> from_spec(const spec& s);

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

/// What `decide` would answer, without changing `s` (read in place: no
/// copy, no allocation). Pure; thread-safe for concurrent readers.
inline decision peek(const sliding_log& p, const sliding_log::state& s, tick now, std::int64_t cost) noexcept {
  return p.peek(s, now, cost);
}

// ---- sliding_log: its part of the operations over any policy (src/core/sliding_log.cpp) ----

/// Charges `cost` at `now` whatever the limit says (report.hpp); a cost
/// < 1 or L = 0 changes nothing.
inline void charge(const sliding_log& p, sliding_log::state& s, tick now, std::int64_t cost) noexcept {
  p.charge(s, now, cost);
}
/// The receipt of an admit of `cost` at `now`, read on the state before
/// the step (refund.hpp: `admit`).
receipt receipt_before(const sliding_log& p, const sliding_log::state& s, tick now, std::int64_t cost) noexcept;
/// Completes an admit's receipt from the state the step left.
void receipt_after(receipt& r, const sliding_log& p, const sliding_log::state& s) noexcept;
/// Rebuilds the log without the refunded units: allocates (may throw
/// std::bad_alloc). If the latest entry goes, a clock that later steps back
/// behind it is read as the latest remaining entry (never more permissive).
std::int64_t refund(const sliding_log& p, sliding_log::state& s, receipt&& r, tick now);
/// Allocates the new log (may throw std::bad_alloc).
[[nodiscard]] sliding_log::state reconfigure(const sliding_log& from, const sliding_log::state& s,
                                             const sliding_log& to, tick now);
/// Whether a sliding-log state answers as a fresh one from `now` on: its
/// newest unit has left the window (t ≤ now − W). Pure; no allocation.
inline bool is_fresh(const sliding_log& p, const sliding_log::state& s, tick now) noexcept {
  if (s.empty()) return true;
  return static_cast<detail::i128>(s.at(s.size() - 1).at) <= static_cast<detail::i128>(now) - p.limit().window;
}
/// Its policy as a policy expression writes it (policy_expr.hpp).
std::string policy_text(const sliding_log& p);
/// What its worst case needs of it for `window2` and `granularity` ≥ 1
/// (worst_case.hpp).
worst_case_traits worst_case_traits_of(const sliding_log& p, tick window2, tick granularity);
/// The figures of its limit that the wire advertises, and what the command
/// asks of it (algorithm.hpp).
limit_figures limit_of(const sliding_log& p) noexcept;
/// Whether carrying a state of `from` over to `to` may leave it below
/// empty (a debt), which only a non-compact keyed store can hold.
bool may_leave_debt(const sliding_log& from, const sliding_log& to) noexcept;

/// The sliding log's encodings (portable.hpp): a state of variable size (its
/// runs), encoded by each codec's `variable_state` hook.
template <>
struct portable::of<sliding_log> : portable::window_leaf<sliding_log> {
  static constexpr std::uint8_t tag = 1;
  static constexpr bool aligned_windows = false;
  static constexpr char letter = 's';
  /// Its Redis leaf's arguments (portable.hpp; src/redis/lua/, its `--! leaf` line).
  static void redis_args(const sliding_log& p, const redis_constants& k, const redis_call& c,
                         redis_numbers& out) noexcept;
  static constexpr std::array params{limit_param<sliding_log>, window_param<sliding_log>};
  static result<sliding_log> make(const std::array<std::int64_t, 2>& v) { return sliding_log::make(rate{v[0], v[1]}); }
};

}  // namespace sluice
