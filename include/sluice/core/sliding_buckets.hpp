// Sliding window with buckets: W split into N sub-windows of W/N; admits iff
// the N sub-windows ending with the current one, plus the cost, hold at most
// L. Between the fixed window (N = 1) and the sliding log (N = W).
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

/// The policy of the bucketed sliding window. Immutable once built.
class sliding_buckets {
 public:
  /// Its name on the command line and in policy expressions.
  static constexpr std::string_view name = "sliding-buckets";
  /// Whether its state owns memory (then `peek` reads it in place;
  /// otherwise a peek decides on a copy).
  static constexpr bool owns_memory = true;
  /// The options a policy expression may give it ("" for none).
  static constexpr std::string_view options = "buckets=N";

  /// The counts of the last N sub-windows, as a ring. Owns memory (N
  /// counts), so copyable but not trivially; fresh is `state{}`.
  class state {
   public:
    /// Units in the ring: the N sub-windows ending with `newest()`.
    [[nodiscard]] std::int64_t total() const noexcept { return total_; }
    /// The sub-window (floor(t / (W/N))) of the latest admit; meaningless
    /// while `total()` is 0.
    [[nodiscard]] std::int64_t newest() const noexcept { return newest_; }
    /// The ring: slot `j mod N` holds the units of sub-window j, for the N
    /// sub-windows ending with `newest()`. Empty until the first admit.
    [[nodiscard]] const std::vector<std::int64_t>& counts() const noexcept { return counts_; }
    friend bool operator==(const state& a, const state& b) noexcept {
      return a.total_ == b.total_ && (a.total_ == 0 || (a.newest_ == b.newest_ && a.counts_ == b.counts_));
    }

   private:
    friend class sliding_buckets;
    std::vector<std::int64_t> counts_;  // N slots, slot j mod N holds sub-window j
    std::int64_t newest_ = 0;           // sub-window of the latest admit
    std::int64_t total_ = 0;            // sum of the N slots
  };

  /// Builds the policy. Errors name "limit", "window" or "buckets"
  /// (1 to 65536, dividing W).
  static result<sliding_buckets> make(rate r, std::int64_t buckets);
  /// Builds the policy a spec describes (any.hpp: make_policy); the error
  /// names the field.
  static result<sliding_buckets> from_spec(const spec& s);

  [[nodiscard]] constexpr rate limit() const noexcept { return r_; }
  [[nodiscard]] constexpr std::int64_t buckets() const noexcept { return n_; }

  /// Decides one request of `cost` units at `now`.
  decision decide(state& s, tick now, std::int64_t cost) const noexcept;

  /// What `decide` would answer for the same request, without changing `s`
  /// (no copy, no allocation). Pure; thread-safe for concurrent readers.
  decision peek(const state& s, tick now, std::int64_t cost) const noexcept;

  /// Charges `cost` units at `now` whatever the limit says (a report:
  /// semantics.md, "Reports"), within the bounds the contract states.
  /// Used by `report` (report.hpp); a cost < 1 or L = 0 changes nothing.
  void charge(state& s, tick now, std::int64_t cost) const noexcept;

  /// The same decision computed the plain way, in 128-bit arithmetic with a
  /// division for every sub-window it visits: the reference the tests hold
  /// `decide` to.
  decision decide_wide(state& s, tick now, std::int64_t cost) const noexcept;

  /// Takes back up to `units` from sub-window `sub` while the ring still
  /// holds it (newest − N < sub ≤ newest), as if they had never been
  /// admitted; returns how many it took back (0 otherwise). What `refund`
  /// does with a receipt of this policy.
  std::int64_t give_back(state& s, std::int64_t sub, std::int64_t units) const noexcept;

 private:
  /// What a decision reads from a state before it changes anything.
  struct scan {
    std::int64_t j;            // now's sub-window, or the latest admit's if the clock stepped back
    std::uint64_t gap;         // j − newest: sub-windows that have pushed as many out
    std::int64_t in_window;    // units in the N sub-windows ending with j
    std::size_t after_newest;  // the slot of sub-window newest + 1 (when in_window > 0)
  };
  scan scan_of(const state& s, tick now) const noexcept;
  decision answer(const state& s, const scan& sc, tick now, std::int64_t cost) const noexcept;
  /// detail::count_answer (src/detail/count_answer.hpp) for `cost` in
  /// sub-window `j`, the window holding `in_window` units.
  bool count_answer(decision& d, const state& s, std::int64_t j, std::int64_t in_window, std::int64_t cost,
                    tick now) const noexcept;
  /// Adds an admit of `cost` in sub-window `j` (its slot `slot`) to the
  /// `in_window` units the window holds: the ring emptied when it holds
  /// none, else the slots of the sub-windows after the newest up to j
  /// cleared by `clear_gap()`.
  template <typename ClearGap>
  void add_admit(state& s, std::int64_t j, std::size_t slot, std::int64_t in_window, std::int64_t cost,
                 ClearGap clear_gap) const noexcept;
  std::size_t slot_of(std::int64_t sub) const noexcept {
    const std::int64_t r = sub % n_;
    return static_cast<std::size_t>(r < 0 ? r + n_ : r);
  }
  std::size_t next_slot(std::size_t k) const noexcept { return k + 1 == static_cast<std::size_t>(n_) ? 0 : k + 1; }

  constexpr sliding_buckets(rate r, std::int64_t n) noexcept
      : r_(r), n_(n), width_(r.window / n), split_(r.window / n) {}
  rate r_;
  std::int64_t n_;
  tick width_;
  detail::window_split split_;  // sub-windows of W/N without a 128-bit division
};

inline decision decide(const sliding_buckets& p, sliding_buckets::state& s, tick now, std::int64_t cost) noexcept {
  return p.decide(s, now, cost);
}

namespace detail {
inline decision decide_wide(const sliding_buckets& p, sliding_buckets::state& s, tick now, std::int64_t cost) noexcept {
  return p.decide_wide(s, now, cost);
}
}  // namespace detail

/// What `decide` would answer, without changing `s` (read in place: no
/// copy, no allocation). Pure; thread-safe for concurrent readers.
inline decision peek(const sliding_buckets& p, const sliding_buckets::state& s, tick now, std::int64_t cost) noexcept {
  return p.peek(s, now, cost);
}

// ---- sliding_buckets: its part of the operations over any policy (src/core/sliding_buckets.cpp) ----

/// Charges `cost` at `now` whatever the limit says (report.hpp); a cost
/// < 1 or L = 0 changes nothing.
inline void charge(const sliding_buckets& p, sliding_buckets::state& s, tick now, std::int64_t cost) noexcept {
  p.charge(s, now, cost);
}
/// The receipt of an admit of `cost` at `now`, read on the state before
/// the step (refund.hpp: `admit`).
receipt receipt_before(const sliding_buckets& p, const sliding_buckets::state& s, tick now, std::int64_t cost) noexcept;
/// Completes an admit's receipt from the state the step left.
void receipt_after(receipt& r, const sliding_buckets& p, const sliding_buckets::state& s) noexcept;
/// Gives back what `r` took, as refund.hpp says for this algorithm, and
/// uses `r` up; returns the units given back.
std::int64_t refund(const sliding_buckets& p, sliding_buckets::state& s, receipt&& r, tick now) noexcept;
/// Allocates the new counts (may throw std::bad_alloc).
[[nodiscard]] sliding_buckets::state reconfigure(const sliding_buckets& from, const sliding_buckets::state& s,
                                                 const sliding_buckets& to, tick now);
/// Whether a bucketed sliding-window state answers as a fresh one from `now`
/// on: no unit left in the N sub-windows ending with `now`'s (a clock behind
/// the latest admit is read as it, so then it is not fresh). Costs O(N) in
/// the worst case; no allocation. Pure.
inline bool is_fresh(const sliding_buckets& p, const sliding_buckets::state& s, tick now) noexcept {
  if (s.total() == 0) return true;
  // A request of cost 0 is denied `never`, and its `remaining` is L minus
  // the units in the window at `now`.
  return p.peek(s, now, 0).remaining == p.limit().limit;
}
/// Its policy as a policy expression writes it (policy_expr.hpp).
std::string policy_text(const sliding_buckets& p);
/// What its worst case needs of it for `window2` and `granularity` ≥ 1
/// (worst_case.hpp).
worst_case_traits worst_case_traits_of(const sliding_buckets& p, tick window2, tick granularity);
/// The figures of its limit that the wire advertises, and what the command
/// asks of it (algorithm.hpp).
limit_figures limit_of(const sliding_buckets& p) noexcept;
/// Whether carrying a state of `from` over to `to` may leave it below
/// empty (a debt), which only a non-compact keyed store can hold.
bool may_leave_debt(const sliding_buckets& from, const sliding_buckets& to) noexcept;

/// The sliding buckets' encodings (portable.hpp): a state of variable size
/// (a count per sub-window), encoded by each codec's `variable_state` hook.
template <>
struct portable::of<sliding_buckets> : portable::window_leaf<sliding_buckets> {
  static constexpr std::uint8_t tag = 3;
  static constexpr bool aligned_windows = true;
  static constexpr char letter = 'b';
  /// Its Redis leaf's arguments (portable.hpp; src/redis/lua/, its `--! leaf` line).
  static void redis_args(const sliding_buckets& p, const redis_constants& k, const redis_call& c,
                         redis_numbers& out) noexcept;
  static constexpr std::array params{
      limit_param<sliding_buckets>, window_param<sliding_buckets>,
      param<sliding_buckets>{"buckets", [](const sliding_buckets& p) { return p.buckets(); }}};
  static result<sliding_buckets> make(const std::array<std::int64_t, 3>& v) {
    return sliding_buckets::make(rate{v[0], v[1]}, v[2]);
  }
};

}  // namespace sluice
