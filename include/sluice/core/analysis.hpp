// Analysis: what a limiter really lets through in a window of time.
//
// `busiest` measures a trace that has already run: the most admitted
// requests in any W consecutive ticks. `worst_case` answers the same
// question for every possible trace at once, exactly and in closed form:
// the most requests of cost 1 that any trace can get admitted in some W′
// consecutive ticks (fixed window: 2L at a boundary; sliding log: L; token
// bucket and GCRA: start full, then every token as it refills, capped at S).
// Integers only; results saturate at INT64_MAX.
#pragma once

#include <cstdint>
#include <span>

#include "sluice/core/fixed_window.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/sliding_log.hpp"
#include "sluice/core/time.hpp"
#include "sluice/core/token_bucket.hpp"

namespace sluice {

/// The busiest window of a trace: how many admitted requests it holds and
/// where it starts.
struct busiest_window {
  /// The most admitted requests in any `window` consecutive ticks; 0 if
  /// none was admitted.
  std::int64_t most = 0;
  /// The earliest start `s` of a window [s, s + window) holding `most`:
  /// always the instant of the first admitted request in it. `never`
  /// (INT64_MAX) when `most` is 0 — check `most` first, since a real
  /// request may sit at any instant.
  tick start = never;
  friend constexpr bool operator==(const busiest_window&, const busiest_window&) = default;
};

/// The most admitted requests in any `window` consecutive ticks
/// [s, s + window), and the earliest such `s`.
///
/// `times[i]` is the instant of request i and `admitted[i]` whether it went
/// through. Requires `times` non-decreasing (as a limiter sees them); on
/// unsorted input the answer is unspecified but the call is still safe.
/// Spans of different lengths are read up to the shorter one. A `window`
/// below 1 holds nothing: `{0, never}`. Two pointers over the admitted
/// instants: O(n) time, O(1) extra memory; differences of instants are taken
/// in 128 bits, so any int64 instants work. Thread-safe (pure).
[[nodiscard]] busiest_window busiest(std::span<const tick> times, std::span<const bool> admitted, tick window) noexcept;

/// The most requests of cost 1 that any trace can get admitted by a fixed
/// window in some `window2` consecutive ticks, when every request time is a
/// multiple of `granularity` (ticks).
///
/// Exact, O(1): L per fixed window, times the most fixed windows that one
/// run of grid points spanning D = m·granularity ticks can touch, with
/// m = floor((window2 − 1) / granularity): m + 1 when the grid is coarser
/// than W, else ceil(D / W) + 1 — 2L for `window2 = W` at granularity 1.
/// The origin of the windows never changes the answer.
/// `window2 < 1` gives 0; a `granularity` below 1 is read as 1 (the finest
/// grid, so the bound is never too low). L = 0 gives 0. Saturates at
/// INT64_MAX. Thread-safe (pure).
[[nodiscard]] std::int64_t worst_case(const fixed_window& p, tick window2, tick granularity) noexcept;

/// The same bound for a sliding log: L for each stretch of
/// ceil(W / granularity)·granularity ticks that `window2` ticks can start,
/// i.e. L·(floor((window2 − 1) / h) + 1) with h that stretch — L when
/// `window2 ≤ W`. Edge cases as for the fixed window.
[[nodiscard]] std::int64_t worst_case(const sliding_log& p, tick window2, tick granularity) noexcept;

/// The same bound for a token bucket: start full and spend S at once, then
/// spend every whole token as it refills, one grid step (`granularity`
/// ticks) at a time, over the m = floor((window2 − 1) / granularity) steps
/// that still fall in the window; refill that would overflow the bucket is
/// lost. With Lg = L·granularity: if Lg ≤ (S − 1)·W nothing is ever lost and
/// the answer is S + floor(m·Lg / W); otherwise, with d = Lg − (S − 1)·W, it
/// is S·(m + 1) when d ≥ W, else S + m·(S − 1) + floor(m / ceil(W / d)).
/// L = 0 gives 0 (not even the first burst passes). Edge cases as for the
/// fixed window.
[[nodiscard]] std::int64_t worst_case(const token_bucket& p, tick window2, tick granularity) noexcept;

/// The same bound for GCRA, which decides exactly as the token bucket with
/// the same L, W and S: the token bucket's answer.
[[nodiscard]] std::int64_t worst_case(const gcra& p, tick window2, tick granularity) noexcept;

}  // namespace sluice
