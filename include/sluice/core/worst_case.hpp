// The worst case of every algorithm and composite, with a witness.
//
// `worst_case(policy, W′, g)` answers: over every trace whose requests (of
// cost 1) fall on multiples of `g` ticks, what is the most that can get
// admitted in some W′ consecutive ticks? analysis.hpp has the closed forms
// for the fixed window, sliding log, token bucket and GCRA; this header adds
// the rest (quota, leaky queue, always-allow, always-deny in closed form;
// the sliding window counter, the bucketed window and the composites by an
// exact search over greedy traces), a run-time `any_policy` entry point, and
// `worst_case_witness`, which also returns one trace that reaches the number.
//
// How (docs/worst-case.md has the proofs):
//  - A fresh state is the most permissive start, and for every single
//    algorithm admitting as much as possible at every grid point from a
//    fresh state (greedy) is optimal once the window's start is fixed: each
//    admits "earlier is never worse" (exchange argument). The same holds for
//    all_of over such parts, and for any_of over parts of that kind (each
//    part gets its own greedy trace and no part can do better).
//  - So the answer is the best greedy count over the alignments of the
//    window's start against the parts' window boundaries: one joint period
//    of alignments is tried (only the last grid point before each boundary
//    when no part refills continuously).
//  - An all_of that holds an any_of is not covered by that proof (greedy is
//    not always optimal there): its answer is an upper bound (the least of
//    the parts' worst cases), exact only when a greedy trace reaches it.
//  - When the search would need more work than `worst_case_limits` allows,
//    the answer is an upper bound too, and says so.
// Integers only; results saturate at INT64_MAX. Thread-safe (pure).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sluice/core/analysis.hpp"
#include "sluice/core/any.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// A worst case that is either exact or only an upper bound.
struct worst_case_bound {
  /// The most requests of cost 1 admitted in any `window2` ticks; when
  /// `exact` is false, an upper bound: no trace gets more, and some trace may
  /// get less. INT64_MAX when unbounded (always-allow) or saturated.
  std::int64_t value = 0;
  /// Whether `value` is reached by some trace (proven, not estimated).
  bool exact = true;
  friend constexpr bool operator==(const worst_case_bound&, const worst_case_bound&) = default;
};

/// What the worst case of a single algorithm, for one window2 and grid,
/// needs of it: each algorithm answers with its own `worst_case_traits_of`
/// (beside it, src/<name>.cpp), and the search over any policy combines
/// its parts' answers.
struct worst_case_traits {
  /// Its exact worst case in closed form, when it has one for this window
  /// and grid.
  std::optional<std::int64_t> exact{};
  /// An upper bound from its structure alone: `exact` when there is one.
  std::int64_t bound = 0;
  /// The boundaries of the windows it counts in, origin + k·period (period
  /// 0: none, or a limit of 0, which admits nothing).
  tick period = 0;
  tick origin = 0;
  /// Whether its room grows continuously (a bucket, GCRA, a log, a queue
  /// with L > 0): then every grid point is a start worth trying.
  bool refills = false;
};

/// How much work a worst-case search may do before it settles for a bound.
struct worst_case_limits {
  /// Grid instants simulated in all, over every alignment tried (each costs
  /// one step of every part). The default takes well under a second.
  std::int64_t max_steps = std::int64_t{1} << 22;
  /// Alignments of the window against the parts' boundaries tried.
  std::int64_t max_alignments = std::int64_t{1} << 16;
  /// Points of the witness kept (the count `reached` is still complete).
  std::int64_t max_witness_points = std::int64_t{1} << 20;
};

/// One instant of a witness trace: `count` requests of cost 1 at `at`, all
/// admitted.
struct witness_point {
  tick at = 0;             ///< ticks
  std::int64_t count = 0;  ///< ≥ 1
  friend constexpr bool operator==(const witness_point&, const witness_point&) = default;
};

/// A worst case and one trace that shows it.
struct worst_case_report {
  /// The worst case, as `worst_case` gives it (exact or an upper bound).
  std::int64_t value = 0;
  /// Whether `value` is exact (see worst_case_bound).
  bool exact = true;
  /// What the witness gets admitted in [start, start + window2): equal to
  /// `value` when `exact` and `complete`; otherwise a lower bound for the
  /// true answer (which lies between `reached` and `value`).
  std::int64_t reached = 0;
  /// The first instant of the window the witness fills; 0 if there is none.
  tick start = 0;
  /// The witness: from a fresh state, request `count` times at `at`, in
  /// order; every request is admitted and lies in [start, start + window2).
  /// At most `max_witness_points` points.
  std::vector<witness_point> witness;
  /// False when the witness does not show the whole answer: it was cut
  /// short (`max_witness_points`, or the run reached `max_steps`; `reached`
  /// then counts only what the run saw), or, for an exact answer, no start
  /// that reaches it was found among those representable (window periods
  /// beyond 2^62 ticks against the grid).
  bool complete = true;
};

/// A quota admits its N units at once, then nothing: N for any `window2 ≥ 1`,
/// whatever the grid. `window2 < 1` gives 0.
[[nodiscard]] std::int64_t worst_case(const quota& p, tick window2, tick granularity) noexcept;

/// Always-allow has no bound: INT64_MAX (saturated) for `window2 ≥ 1`, else 0.
[[nodiscard]] std::int64_t worst_case(const always_allow& p, tick window2, tick granularity) noexcept;

/// The concurrency limit, admits only (no release: with releases there is no
/// bound): N at once, then N again each time the leases expire, so
/// N·(floor((window2 − 1) / P) + 1) with P = ceil(D / g)·g, the first grid
/// instant at which an admit's lease has expired. Exact; saturates at
/// INT64_MAX; `window2 < 1` gives 0; `granularity < 1` is read as 1.
[[nodiscard]] std::int64_t worst_case(const concurrency& p, tick window2, tick granularity) noexcept;

/// Always-deny admits nothing: 0.
[[nodiscard]] std::int64_t worst_case(const always_deny& p, tick window2, tick granularity) noexcept;

/// The leaky queue, exactly, O(1): with m = floor((window2 − 1) / g) grid
/// steps after the first point, min(Q·(m + 1), Q + ceil(m·g·L / W)). Every
/// unit admitted in the window either is still queued at its last point (at
/// most Q) or has left before it (at most one per W/L ticks); filling the
/// queue at every point reaches both. L = 0 gives 0; `granularity < 1` is
/// read as 1; `window2 < 1` gives 0. Saturates at INT64_MAX.
[[nodiscard]] std::int64_t worst_case(const leaky_queue& p, tick window2, tick granularity) noexcept;

/// The sliding window counter: the best greedy trace over every alignment of
/// the window's start against the counter's windows (the last grid point
/// before each boundary in one period lcm(g, W): min(g, W)/gcd(g, W) of
/// them). Exact, unless that needs more than the default limits; then the
/// fixed window's count (at most L per window touched), marked not exact.
[[nodiscard]] worst_case_bound worst_case(const sliding_counter& p, tick window2, tick granularity);

/// The bucketed sliding window: at most L per N sub-windows, so with w = W/N
/// and m as above, L·(1 + floor(ceil(m·g / w) / N)) (L if m = 0): exact when
/// the grid is no coarser than a sub-window (g ≤ w); otherwise the best
/// greedy trace over every alignment, exact within the default limits.
[[nodiscard]] worst_case_bound worst_case(const sliding_buckets& p, tick window2, tick granularity);

/// A composite: exact when every part's worst case can be combined by the
/// greedy argument (an all_of of plain limiters and all_ofs; an any_of of
/// those and of any_ofs) and the alignment search fits the default limits;
/// otherwise an upper bound (all_of: the least of the parts' worst cases;
/// any_of: their sum), exact only if a greedy trace reaches it.
[[nodiscard]] worst_case_bound worst_case(const all_of& p, tick window2, tick granularity);
[[nodiscard]] worst_case_bound worst_case(const any_of& p, tick window2, tick granularity);

/// No generic `worst_case`: every single algorithm has its own closed form
/// (here or in analysis.hpp) or its own search traits. Without this a new
/// algorithm's policy would convert to any_policy and call the overload
/// below, which asks the algorithm's `worst_case_traits_of`, which may call
/// this again; with it, such a call fails to compile.
template <typename Policy>
worst_case_bound worst_case(const Policy&, tick, tick) = delete;

/// Any policy: the closed form where there is one (exact), else as above.
[[nodiscard]] worst_case_bound worst_case(const any_policy& p, tick window2, tick granularity);

/// The worst case of `p` and one trace that reaches it (see
/// `worst_case_report`). `window2 < 1` gives 0 and an empty witness; a
/// `granularity` below 1 is read as 1. Witness instants are chosen at or
/// before 0 where possible, so that start + window2 stays representable.
[[nodiscard]] worst_case_report worst_case_witness(const any_policy& p, tick window2, tick granularity,
                                                   const worst_case_limits& limits = {});

}  // namespace sluice
