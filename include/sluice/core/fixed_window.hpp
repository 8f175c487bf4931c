// Fixed window: at most L units in each window [origin + kW, origin + (k+1)W).
//
// Cheap and easy to explain, but a burst just before a boundary and another
// just after both get through: up to 2L in two ticks. See semantics.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

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

/// The policy of a fixed-window counter. Immutable once built.
class fixed_window {
 public:
  /// Its name on the command line and in policy expressions.
  static constexpr std::string_view name = "fixed-window";
  /// Whether its state owns memory (then `peek` reads it in place;
  /// otherwise a peek decides on a copy).
  static constexpr bool owns_memory = false;
  /// The options a policy expression may give it ("" for none).
  static constexpr std::string_view options = "origin=DURATION";

  /// The per-key state: the window of the latest admit and its count.
  /// Trivially copyable; fresh is `state{}`.
  struct state {
    std::int64_t window = 0;  ///< k of the latest admit (meaningless while count == 0)
    std::int64_t count = 0;   ///< units admitted in window k
    friend constexpr bool operator==(const state&, const state&) = default;
  };

  /// Builds the policy; windows start at `origin + kW`. Errors name "limit"
  /// or "window".
  static result<fixed_window> make(rate r, tick origin = 0);
  /// Builds the policy a spec describes (any.hpp: make_policy); the error
  /// names the field.
  static result<fixed_window> from_spec(const spec& s);

  [[nodiscard]] constexpr rate limit() const noexcept { return r_; }
  [[nodiscard]] constexpr tick origin() const noexcept { return origin_; }

  /// The window index k of an instant.
  [[nodiscard]] constexpr std::int64_t window_of(tick t) const noexcept {
    return static_cast<std::int64_t>(detail::floor_div(static_cast<detail::i128>(t) - origin_, r_.window));
  }
  /// The first instant of window k (may lie past INT64_MAX, hence 128 bits).
  [[nodiscard]] constexpr detail::i128 start_of(detail::i128 k) const noexcept { return k * r_.window + origin_; }

 private:
  constexpr fixed_window(rate r, tick origin) noexcept : r_(r), origin_(origin), split_(r.window, origin) {}
  friend constexpr decision decide(const fixed_window& p, state& s, tick now, std::int64_t cost) noexcept;

  rate r_;
  tick origin_;                 // normalised to [0, W): the same windows, and k fits in int64
  detail::window_split split_;  // now's window without a 128-bit division
};

namespace detail {
/// decide() for any state, in 128-bit arithmetic.
constexpr decision decide_wide(const fixed_window& p, fixed_window::state& s, tick now, std::int64_t cost) noexcept {
  const std::int64_t limit = p.limit().limit;
  std::int64_t k = p.window_of(now);
  if (s.count > 0 && k < s.window) k = s.window;  // a clock that steps back is read as the latest admit
  const std::int64_t count = (s.count > 0 && k == s.window) ? s.count : 0;
  decision d;
  if (cost < 1 || cost > limit) {
    d.remaining = detail::max64(0, limit - count);
    d.retry_after = never;
    d.reset_after = count > 0 ? detail::until(p.start_of(static_cast<detail::i128>(k) + 1), now) : 0;
    return d;
  }
  const detail::i128 next = p.start_of(static_cast<detail::i128>(k) + 1);
  if (cost <= limit - count) {  // not count + cost: both may be 2^62
    s.window = k;
    s.count = count + cost;
    d.allowed = true;
    d.remaining = detail::max64(0, limit - s.count);
    d.reset_after = detail::until(next, now);
    return d;
  }
  d.remaining = detail::max64(0, limit - count);
  d.retry_after = detail::until(next, now);
  d.reset_after = d.retry_after;
  return d;
}
}  // namespace detail

/// Decides one request of `cost` units at `now`; admits iff the window's
/// count plus `cost` stays within L. Pure except for `s` on admit.
constexpr decision decide(const fixed_window& p, fixed_window::state& s, tick now, std::int64_t cost) noexcept {
  // The common case without a 128-bit division: now's window k and offset
  // come from now + 2^63 by one reciprocal division, and the next window
  // starts W − offset after now. A clock that stepped back behind the
  // latest admit's window, and a cost out of range, go to decide_wide().
  const std::int64_t limit = p.r_.limit;
  const auto w = static_cast<std::uint64_t>(p.r_.window);
  const auto [k, off] = p.split_(now);
  if (cost < 1 || cost > limit || (s.count > 0 && k < s.window)) [[unlikely]]
    return detail::decide_wide(p, s, now, cost);
  const std::int64_t count = (s.count > 0 && k == s.window) ? s.count : 0;
  const std::int64_t next =
      detail::until_after(now, w - off, now);  // until the next window (never past the end of time)
  decision d;
  if (cost <= limit - count) {  // not count + cost: both may be 2^62
    s.window = k;
    s.count = count + cost;
    d.allowed = true;
    d.remaining = limit - s.count;
    d.reset_after = next;
    return d;
  }
  d.remaining = detail::max64(0, limit - count);
  d.retry_after = next;
  d.reset_after = next;
  return d;
}

// ---- fixed_window: its part of the operations over any policy (src/core/fixed_window.cpp) ----

/// Charges `cost` at `now` whatever the limit says (report.hpp), within
/// the bounds semantics.md states ("Reports"); a cost < 1 changes nothing.
void charge(const fixed_window& p, fixed_window::state& s, tick now, std::int64_t cost) noexcept;
/// The receipt of an admit of `cost` at `now`, read on the state before
/// the step (refund.hpp: `admit`).
receipt receipt_before(const fixed_window& p, const fixed_window::state& s, tick now, std::int64_t cost) noexcept;
/// Completes an admit's receipt from the state the step left.
void receipt_after(receipt& r, const fixed_window& p, const fixed_window::state& s) noexcept;
/// Gives back what `r` took while the state still holds the admit's
/// window, and uses `r` up; returns the units given back (refund.hpp).
std::int64_t refund(const fixed_window& p, fixed_window::state& s, receipt&& r, tick now) noexcept;
/// The state for `to` that continues `s` (a state of `from`) at `now`
/// (reconfigure.hpp). Pure.
[[nodiscard]] fixed_window::state reconfigure(const fixed_window& from, const fixed_window::state& s,
                                              const fixed_window& to, tick now) noexcept;
/// Whether a fixed-window state answers as a fresh one from `now` on. Pure,
/// no allocation; thread-safe for concurrent readers.
constexpr bool is_fresh(const fixed_window& p, const fixed_window::state& s, tick now) noexcept {
  return s.count == 0 || p.window_of(now) > s.window;
}
/// Its policy as a policy expression writes it (policy_expr.hpp).
std::string policy_text(const fixed_window& p);
/// What its worst case needs of it for `window2` and `granularity` ≥ 1
/// (worst_case.hpp).
worst_case_traits worst_case_traits_of(const fixed_window& p, tick window2, tick granularity);
/// The figures of its limit that the wire advertises, and what the command
/// asks of it (algorithm.hpp).
limit_figures limit_of(const fixed_window& p) noexcept;
/// Whether carrying a state of `from` over to `to` may leave it below
/// empty (a debt), which only a non-compact keyed store can hold.
bool may_leave_debt(const fixed_window& from, const fixed_window& to) noexcept;

/// The fixed window's encodings (portable.hpp): its state is the window of
/// the latest admit and its count.
template <>
struct portable::of<fixed_window> : portable::window_leaf<fixed_window> {
  static constexpr std::uint8_t tag = 0;
  static constexpr bool aligned_windows = true;
  static constexpr char letter = 'f';
  /// Its Redis leaf's arguments (portable.hpp; src/redis/lua/, its `--! leaf` line).
  static void redis_args(const fixed_window& p, const redis_constants& k, const redis_call& c,
                         redis_numbers& out) noexcept;
  static constexpr std::array params{limit_param<fixed_window>, window_param<fixed_window>,
                                     param<fixed_window>{"origin", [](const fixed_window& p) { return p.origin(); }}};
  static result<fixed_window> make(const std::array<std::int64_t, 3>& v) {
    return fixed_window::make(rate{v[0], v[1]}, v[2]);
  }

  struct fields {
    detail::i128 window = 0;
    detail::i128 count = 0;
  };
  static constexpr bool empty(const fixed_window::state& s) noexcept { return s.count == 0; }
  static constexpr fields to(const fixed_window&, const fixed_window::state& s, encoding) noexcept {
    return {s.window, s.count};
  }
  static constexpr fixed_window::state from(const fixed_window&, const fields& f, encoding) noexcept {
    return {static_cast<std::int64_t>(f.window), static_cast<std::int64_t>(f.count)};
  }
  static constexpr std::array layout{field<fixed_window, fields>{&fields::window, kind::window},
                                     field<fixed_window, fields>{&fields::count, kind::count, "fixed-window count",
                                                                 [](const fixed_window& p) {
                                                                   return range{1, p.limit().limit};
                                                                 },
                                                                 true}};
  static constexpr std::array<std::size_t, 2> redis_order{0, 1};
};

}  // namespace sluice
