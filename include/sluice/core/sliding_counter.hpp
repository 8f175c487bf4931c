// Sliding window counter (the weighted estimate): fixed windows of W, and at
// offset o into window k the estimate prev·(W − o)/W + curr, compared without
// division: admit iff prev·(W − o) + (curr + c)·W ≤ L·W.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/decision.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/report_bound.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

struct spec;
class receipt;
struct limit_figures;
struct worst_case_traits;

/// The policy of the sliding window counter. Immutable once built.
class sliding_counter {
 public:
  /// Its name on the command line and in policy expressions.
  static constexpr std::string_view name = "sliding-counter";
  /// Whether its state owns memory (then `peek` reads it in place;
  /// otherwise a peek decides on a copy).
  static constexpr bool owns_memory = false;
  /// The options a policy expression may give it ("" for none).
  static constexpr std::string_view options = "";

  /// Counts of the window of the latest admit and the one before it.
  /// Trivially copyable; fresh is `state{}`.
  struct state {
    std::int64_t window = 0;      ///< k of the latest admit
    std::int64_t prev = 0;        ///< units admitted in window k − 1
    std::int64_t curr = 0;        ///< units admitted in window k
    tick last = detail::i64_min;  ///< instant of the latest admit
    friend constexpr bool operator==(const state&, const state&) = default;
  };

  /// Builds the policy. Errors name "limit" or "window".
  static result<sliding_counter> make(rate r);
  /// Builds the policy a spec describes (any.hpp: make_policy); the error
  /// names the field.
  static result<sliding_counter> from_spec(const spec& s);

  [[nodiscard]] constexpr rate limit() const noexcept { return r_; }

 private:
  constexpr explicit sliding_counter(rate r) noexcept
      : r_(r),
        per_window_(r.window),
        split_(r.window),
        narrow_(r.limit >= 1 && static_cast<detail::i128>(r.limit) * r.window <= (detail::i128{1} << 61)) {}
  friend constexpr decision decide(const sliding_counter& p, state& s, tick now, std::int64_t cost) noexcept;

  rate r_;
  detail::divisor per_window_;  // W
  detail::window_split split_;  // e's window without a 128-bit division
  bool narrow_;                 // L >= 1 and L·W <= 2^61: decide() can work in 64 bits
};

namespace detail {
/// The earliest offset o in [from, W) of a window whose previous window
/// holds `prev` at which prev·(W − o) ≤ room·W, or W if none.
constexpr i128 counter_offset(i128 prev, i128 room, i128 w, i128 from) noexcept {
  if (room < 0) return w;
  if (prev == 0) return from;
  i128 o = w - (room * w) / prev;  // prev·(W − o) ≤ room·W  ⇔  W − o ≤ floor(room·W / prev)
  if (o < from) o = from;
  return o;
}

/// decide() for any policy and any state, in 128-bit arithmetic.
constexpr decision decide_wide(const sliding_counter& p, sliding_counter::state& s, tick now,
                               std::int64_t cost) noexcept {
  using detail::i128;
  const rate r = p.limit();
  const i128 w = r.window;
  const tick e = detail::max64(now, s.last);
  const i128 k = detail::floor_div(e, w);
  const i128 off = e - k * w;
  i128 prev = 0;
  i128 curr = 0;
  if (k == s.window) {
    prev = s.prev;
    curr = s.curr;
  } else if (k == static_cast<i128>(s.window) + 1) {
    prev = s.curr;
  }
  const i128 lw = static_cast<i128>(r.limit) * w;
  const i128 used = prev * (w - off) + curr * w;  // the estimate, times W
  decision d;
  d.remaining = detail::clamp_count(detail::floor_div(lw - used, w));
  d.reset_after = curr > 0 ? detail::until((k + 2) * w, now) : prev > 0 ? detail::until((k + 1) * w, now) : 0;
  if (cost < 1 || cost > r.limit) {
    d.retry_after = never;
    return d;
  }
  if (used + static_cast<i128>(cost) * w <= lw) {
    s.window = static_cast<std::int64_t>(k);
    s.prev = static_cast<std::int64_t>(prev);
    s.curr = static_cast<std::int64_t>(curr + cost);
    s.last = e;
    d.allowed = true;
    const i128 after = used + static_cast<i128>(cost) * w;
    d.remaining = detail::clamp_count((lw - after) / w);
    d.reset_after = detail::until((k + 2) * w, now);
    return d;
  }
  // The earliest instant the estimate leaves room for `cost`: later in this
  // window, in the next (prev = curr), or at the start of the one after.
  i128 at = (k + 2) * w;
  const i128 here = detail::counter_offset(prev, r.limit - curr - cost, w, off);
  if (here < w) {
    at = k * w + here;
  } else {
    const i128 next = detail::counter_offset(curr, r.limit - cost, w, 0);
    if (next < w) at = (k + 1) * w + next;
  }
  d.retry_after = detail::until(at, now);
  return d;
}

/// counter_offset in 64 bits, for 0 ≤ prev ≤ L, room ≤ L and L·W ≤ 2^61.
constexpr std::uint64_t counter_offset64(std::int64_t prev, std::int64_t room, std::uint64_t w,
                                         std::uint64_t from) noexcept {
  if (room < 0) return w;
  if (prev == 0) return from;
  const std::uint64_t q = static_cast<std::uint64_t>(room) * w / static_cast<std::uint64_t>(prev);
  return q >= w || w - q < from ? from : w - q;
}
}  // namespace detail

/// Decides one request of `cost` units at `now`.
constexpr decision decide(const sliding_counter& p, sliding_counter::state& s, tick now, std::int64_t cost) noexcept {
  // The common case in 64 bits: L·W ≤ 2^61, a cost the limit allows, and a
  // state decide() can reach (counts in [0, L], an estimate within L·W).
  // The window and offset of e come from e + 2^63 (unsigned) by one
  // reciprocal division; every instant is e plus an offset below 2W.
  // Anything else, and every decision's reference, is decide_wide().
  const rate r = p.limit();
  const std::int64_t l = r.limit;
  if (!p.narrow_ || cost < 1 || cost > l) [[unlikely]]
    return detail::decide_wide(p, s, now, cost);
  const tick e = detail::max64(now, s.last);
  const auto w = static_cast<std::uint64_t>(r.window);
  const auto [k, off] = p.split_(e);
  std::int64_t prev = 0;
  std::int64_t curr = 0;
  if (k == s.window) {
    prev = s.prev;
    curr = s.curr;
  } else if (k != detail::i64_min && k - 1 == s.window) {
    prev = s.curr;
  }
  if (prev < 0 || prev > l || curr < 0 || curr > l) [[unlikely]]
    return detail::decide_wide(p, s, now, cost);
  const std::uint64_t lw = static_cast<std::uint64_t>(l) * w;
  const std::uint64_t used = static_cast<std::uint64_t>(prev) * (w - off) + static_cast<std::uint64_t>(curr) * w;
  if (used > lw) [[unlikely]]
    return detail::decide_wide(p, s, now, cost);
  decision d;
  const std::uint64_t after = used + static_cast<std::uint64_t>(cost) * w;
  if (after <= lw) {
    s.window = k;
    s.prev = prev;
    s.curr = curr + cost;
    s.last = e;
    d.allowed = true;
    d.remaining = static_cast<std::int64_t>(p.per_window_.div(lw - after));
    d.reset_after = detail::until_after(e, 2 * w - off, now);  // the end of window k + 1
    return d;
  }
  d.remaining = static_cast<std::int64_t>(p.per_window_.div(lw - used));
  d.reset_after = curr > 0   ? detail::until_after(e, 2 * w - off, now)
                  : prev > 0 ? detail::until_after(e, w - off, now)
                             : 0;
  // The earliest instant the estimate leaves room for `cost`: later in this
  // window, in the next (prev = curr), or at the start of the one after.
  std::uint64_t at = 2 * w - off;  // from e
  if (const std::uint64_t here = detail::counter_offset64(prev, l - curr - cost, w, off); here < w) {
    at = here - off;
  } else if (const std::uint64_t next = detail::counter_offset64(curr, l - cost, w, 0); next < w) {
    at = w - off + next;
  }
  d.retry_after = detail::until_after(e, at, now);
  return d;
}

// ---- sliding_counter: its part of the operations over any policy (src/core/sliding_counter.cpp) ----

/// Charges `cost` at `now` whatever the limit says (report.hpp), within
/// the bounds semantics.md states ("Reports"); a cost < 1 changes nothing.
void charge(const sliding_counter& p, sliding_counter::state& s, tick now, std::int64_t cost) noexcept;
/// The receipt of an admit of `cost` at `now`, read on the state before
/// the step (refund.hpp: `admit`).
receipt receipt_before(const sliding_counter& p, const sliding_counter::state& s, tick now, std::int64_t cost) noexcept;
/// Completes an admit's receipt from the state the step left.
void receipt_after(receipt& r, const sliding_counter& p, const sliding_counter::state& s) noexcept;
/// Gives back what `r` took, as refund.hpp says for this algorithm, and
/// uses `r` up; returns the units given back.
std::int64_t refund(const sliding_counter& p, sliding_counter::state& s, receipt&& r, tick now) noexcept;
/// The state for `to` that continues `s` (a state of `from`) at `now`
/// (reconfigure.hpp). Pure.
[[nodiscard]] sliding_counter::state reconfigure(const sliding_counter& from, const sliding_counter::state& s,
                                                 const sliding_counter& to, tick now) noexcept;
/// Whether a sliding-counter state answers as a fresh one from `now` on:
/// nothing admitted, or `now` lies two or more windows after the latest
/// admit's window (both counts have left). Pure.
constexpr bool is_fresh(const sliding_counter& p, const sliding_counter::state& s, tick now) noexcept {
  if (s.curr == 0 && s.prev == 0) return true;
  return detail::floor_div(now, p.limit().window) >= static_cast<detail::i128>(s.window) + 2;
}
/// Its policy as a policy expression writes it (policy_expr.hpp).
std::string policy_text(const sliding_counter& p);
/// What its worst case needs of it for `window2` and `granularity` ≥ 1
/// (worst_case.hpp).
worst_case_traits worst_case_traits_of(const sliding_counter& p, tick window2, tick granularity);
/// The figures of its limit that the wire advertises, and what the command
/// asks of it (algorithm.hpp).
limit_figures limit_of(const sliding_counter& p) noexcept;
/// Whether carrying a state of `from` over to `to` may leave it below
/// empty (a debt), which only a non-compact keyed store can hold.
bool may_leave_debt(const sliding_counter& from, const sliding_counter& to) noexcept;

/// The sliding counter's encodings (portable.hpp): its state is the latest
/// admit (whose window is the state's) and the two windows' counts, each at
/// most report_count_bound (a Redis value's `prev` may hold a larger
/// limit's units, carried over).
template <>
struct portable::of<sliding_counter> : portable::window_leaf<sliding_counter> {
  static constexpr std::uint8_t tag = 2;
  static constexpr bool aligned_windows = true;
  static constexpr char letter = 'c';
  /// Its Redis leaf's arguments (portable.hpp; src/redis/lua/, its `--! leaf` line).
  static void redis_args(const sliding_counter& p, const redis_constants& k, const redis_call& c,
                         redis_numbers& out) noexcept;
  static constexpr std::array params{limit_param<sliding_counter>, window_param<sliding_counter>};
  static result<sliding_counter> make(const std::array<std::int64_t, 2>& v) {
    return sliding_counter::make(rate{v[0], v[1]});
  }

  struct fields {
    detail::i128 last = 0;
    detail::i128 prev = 0;
    detail::i128 curr = 0;
  };
  static constexpr bool empty(const sliding_counter::state& s) noexcept { return s.curr == 0 && s.prev == 0; }
  static constexpr fields to(const sliding_counter&, const sliding_counter::state& s, encoding) noexcept {
    return {s.last, s.prev, s.curr};
  }
  static constexpr sliding_counter::state from(const sliding_counter& p, const fields& f, encoding) noexcept {
    return {static_cast<std::int64_t>(detail::floor_div(f.last, p.limit().window)), static_cast<std::int64_t>(f.prev),
            static_cast<std::int64_t>(f.curr), static_cast<tick>(f.last)};
  }
  static constexpr range counts(const sliding_counter& p) noexcept { return {0, report_count_bound(p.limit())}; }
  static constexpr std::array layout{
      field<sliding_counter, fields>{&fields::last, kind::windowed},
      field<sliding_counter, fields>{&fields::prev, kind::count, "sliding-counter counts", counts, true},
      field<sliding_counter, fields>{&fields::curr, kind::count, "sliding-counter counts",
                                     [](const sliding_counter& p) {
                                       return range{1, counts(p).hi};
                                     }}};
  static constexpr std::array<std::size_t, 3> redis_order{0, 1, 2};
};

}  // namespace sluice
