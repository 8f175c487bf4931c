// Private to sluice::core: what the two rates with a burst S, GCRA and the
// token bucket, share beyond their step (which differs: GCRA keeps a
// theoretical arrival time, the bucket the tokens spent): their worst
// case's traits, the figures of their limit, and when a change between two
// of their policies may leave a debt. Each algorithm's overload calls these.
#pragma once

#include <cstdint>

#include "sluice/core/algorithm.hpp"
#include "sluice/core/time.hpp"
#include "sluice/core/worst_case.hpp"

namespace sluice::detail {

/// Its closed form for `window2` and `granularity` (worst_case.hpp); it
/// refills when L > 0.
template <typename P>
worst_case_traits burst_worst_case_traits(const P& p, tick window2, tick granularity) {
  const std::int64_t c = worst_case(p, window2, granularity);
  return {.exact = c, .bound = c, .refills = p.limit().limit > 0};
}

/// L per W, and S at once.
template <typename P>
limit_figures burst_limit_figures(const P& p) noexcept {
  return {.per = p.limit(), .units = p.burst()};
}

/// A smaller burst, or a limit of 0 at either end, may carry a debt.
template <typename P>
bool burst_may_leave_debt(const P& from, const P& to) noexcept {
  return to.burst() < from.burst() || from.limit().limit == 0 || to.limit().limit == 0;
}

}  // namespace sluice::detail
