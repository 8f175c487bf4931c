// Sliding window counter (the weighted estimate): fixed windows of W, and at
// offset o into window k the estimate prev·(W − o)/W + curr, compared without
// division: admit iff prev·(W − o) + (curr + c)·W ≤ L·W.
#pragma once

#include <cstdint>

#include "sluice/decision.hpp"
#include "sluice/detail/arith.hpp"
#include "sluice/rate.hpp"
#include "sluice/result.hpp"
#include "sluice/time.hpp"

namespace sluice {

/// The policy of the sliding window counter. Immutable once built.
class sliding_counter {
 public:
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

  [[nodiscard]] constexpr rate limit() const noexcept { return r_; }

 private:
  constexpr explicit sliding_counter(rate r) noexcept : r_(r) {}
  rate r_;
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
}  // namespace detail

/// Decides one request of `cost` units at `now`.
constexpr decision decide(const sliding_counter& p, sliding_counter::state& s, tick now, std::int64_t cost) noexcept {
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

}  // namespace sluice
