// Private to sluice::core: how a limiter that counts the units in its
// window (the sliding log, the bucketed sliding window) answers before it
// looks for when a denied request fits: the figures of the units held, a
// cost outside [1, L] denied for ever, a cost that fits admitted.
#pragma once

#include <cstdint>

#include "sluice/core/decision.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/time.hpp"

namespace sluice::detail {

/// Fills `d` for `cost` units against a limit of `limit` with `in_window`
/// held at `now`: `held_reset()` is when the held units have all left
/// (called only when some are held), `admit_reset()` when the units held
/// after an admit have. True when `d` is the answer; false when the request
/// is denied for now and the caller sets its `retry_after`.
template <typename HeldReset, typename AdmitReset>
constexpr bool count_answer(decision& d, std::int64_t limit, std::int64_t in_window, std::int64_t cost, tick now,
                            HeldReset held_reset, AdmitReset admit_reset) noexcept {
  d.remaining = max64(0, limit - in_window);
  d.reset_after = in_window > 0 ? until(held_reset(), now) : 0;
  if (cost < 1 || cost > limit) {
    d.retry_after = never;
    return true;
  }
  if (cost <= limit - in_window) {  // not in_window + cost: both may be 2^62
    d.allowed = true;
    d.remaining = limit - in_window - cost;
    d.reset_after = until(admit_reset(), now);
    return true;
  }
  return false;
}

}  // namespace sluice::detail
