// Private to sluice::core: the rules that several algorithms' carry-over
// to a new policy share (each algorithm's own is in src/<name>.cpp; the
// rules and why they hold are in reconfigure.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "detail/wide.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/rate.hpp"

namespace sluice::detail {

/// min(v, 2^62) for a count that is then held in an int64 state field: any
/// count of 2^62 already blocks every limit sluice accepts.
inline std::int64_t clamp_units(i128 v) noexcept {
  if (v < 0) return 0;
  return v > max_quantity ? max_quantity : static_cast<std::int64_t>(v);
}

/// The token-bucket rule (also GCRA's): the new tokens in 1/W_new token from
/// the old tokens `held` in 1/W_old token (may be negative: a debt).
inline i128 new_tokens(i128 held, rate from, std::int64_t s_from, rate to, std::int64_t s_to) noexcept {
  const i128 cap_from = static_cast<i128>(s_from) * from.window;
  const i128 cap_to = static_cast<i128>(s_to) * to.window;
  // Keep the deficit, rounded up in the new unit: S_new·W_new − ceil(D·W_new/W_old).
  i128 tokens = cap_to - detail::muldiv_ceil(cap_from - held, to.window, from.window);
  const bool rate_drops = static_cast<i128>(to.limit) * from.window < static_cast<i128>(from.limit) * to.window;
  if (rate_drops) tokens = std::min(tokens, detail::muldiv_floor(held, to.window, from.window));
  return std::min(tokens, cap_to);
}

/// Whether [a0, a1) and [b0, b1) share an instant.
inline bool overlaps(i128 a0, i128 a1, i128 b0, i128 b1) noexcept { return a0 < b1 && b0 < a1; }

/// Keeps, of runs of units oldest first, only those that can change a
/// decision of a window of limit `l` (semantics.md, "Reconfiguration"), as
/// a report leaves them: each run holds at most `l`, and while the runs
/// after the oldest hold `l` or more the oldest is dropped (it leaves the
/// window before any of them, and while it is in it they alone deny every
/// request). Nothing when `l` is 0 (a limit of 0 admits nothing, whatever
/// it counts). What is kept holds at most 2l − 1 units: what a window's
/// admits and reports leave, and all a Redis store holds.
template <class Run, class Units>
void keep_decisive(std::vector<Run>& runs, std::int64_t l, Units units) {
  if (l <= 0) {
    runs.clear();
    return;
  }
  i128 total = 0;
  for (Run& r : runs) {
    units(r) = std::min(units(r), l);
    total += units(r);
  }
  std::size_t first = 0;
  while (first + 1 < runs.size() && total - units(runs[first]) >= l) total -= units(runs[first++]);
  runs.erase(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(first));
}

}  // namespace sluice::detail
