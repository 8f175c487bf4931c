// The answer every limiter gives: may this request go through now, and if
// not, until when must it wait.
#pragma once

#include <cstdint>

#include "sluice/core/time.hpp"

namespace sluice {

/// The outcome of one request. A denied request changes no limiter state.
struct [[nodiscard]] decision {
  /// Whether the request was admitted (and its cost consumed).
  bool allowed = false;
  /// The largest cost that would be admitted at the same instant right after
  /// this decision; 0 if none. INT64_MAX for a limiter without a bound.
  std::int64_t remaining = 0;
  /// Ticks from the caller's `now` until this same request would be admitted
  /// if nothing else happens: 0 when admitted, `never` when it never will be.
  /// Exact: at `now + retry_after` it is admitted, one tick earlier it is not.
  tick retry_after = 0;
  /// Ticks from `now` until the limiter is back to its fresh state (`never`
  /// for a spent quota).
  tick reset_after = 0;
  /// Leaky queue only: ticks from `now` until the request's last unit leaves
  /// the queue; 0 for every other limiter and for denials.
  tick release_after = 0;
  /// Composites only: the index of the part that decided (see all_of and
  /// any_of); -1 for a plain limiter.
  std::int32_t part = -1;

  /// "Not now": denied, but a later retry can succeed.
  [[nodiscard]] constexpr bool retry_later() const noexcept { return !allowed && retry_after != never; }
  /// "Never": denied, and no retry of this request will ever succeed.
  [[nodiscard]] constexpr bool never_allowed() const noexcept { return !allowed && retry_after == never; }

  friend constexpr bool operator==(const decision&, const decision&) = default;
};

}  // namespace sluice
