// Building a sliding-log state with given entries: shared by the core
// (refund, reconfigure) and the Redis store (values it reads back).
// Internal to sluice (installed because two targets share it); not part of
// the API, may change between versions.
//
// The log's ring is private to sliding_log, so a changed log (a refund that
// removes units, a reconfiguration that changes W) is built the only way the
// public interface allows: by admitting the entries again, in time order,
// through a policy with the same window and the largest limit. Each admit
// appends (or merges into the entry at the same instant) and prunes entries
// older than the window, exactly as the real log would.
#pragma once

#include <cstdint>
#include <vector>

#include "sluice/core/rate.hpp"
#include "sluice/core/sliding_log.hpp"

namespace sluice::detail {

/// The log of a `window`-tick sliding log holding `entries`. Requires the
/// instants nondecreasing, every `units` ≥ 1, and the units of any `window`
/// ticks to sum to at most 2^62 (true of every log a limiter built: they sum
/// to at most its L). Allocates.
inline sliding_log::state rebuild_log(tick window, const std::vector<sliding_log::entry>& entries) {
  const sliding_log big = sliding_log::make(rate{max_quantity, window}).value();
  sliding_log::state s;
  for (const sliding_log::entry& e : entries) (void)decide(big, s, e.at, e.units);
  return s;
}

}  // namespace sluice::detail
