// Live reconfiguration: a new limit for a limiter that is already running,
// without resetting its clients.
//
// `reconfigure(from, state, to, now)` maps a state of policy `from` to a
// state of policy `to` (the same algorithm; L, W, S, Q, N, buckets or origin
// may change) at the instant `now`. Two rules hold for every algorithm:
//
// 1. Nothing the old state remembers is forgiven: every unit the old limiter
//    still counts at `now` is charged to the new one (as late as it may have
//    happened, rounded toward the stricter side), so a throttled client stays
//    throttled — a change never hands it a fresh bucket. Conversely a state
//    that is fresh under `from` maps to the fresh state of `to` (a keyed store
//    may have dropped it), except for a token bucket/GCRA whose rate drops
//    while its capacity grows (see below).
// 2. No window that spans the change lets through more than both limits
//    would: for the token bucket and GCRA, any interval [a, b] around the
//    change holds at most S + r_old·(now − a) + r_new·(b − now) units, with
//    S = S_new when the rate does not drop and min(S_old, S_new) when it
//    does — within the old bound S_old + r_old·(b − a) or the new one
//    S_new + r_new·(b − a). For the window algorithms every window of the new
//    policy that holds an admit made after the change holds at most L_new
//    units, counting the old units the old state still remembered.
//
// What each algorithm keeps:
//
// - token bucket, GCRA: the deficit D = S_old − tokens (in tokens, rescaled to
//   the new 1/W and rounded up): tokens' = S_new − D. When the rate drops
//   (L_new/W_new < L_old/W_old), also tokens' ≤ tokens (never more than it
//   had). tokens' may be negative (a debt the new rate pays off first) when
//   the capacity shrinks below what was just used. Why the deficit and not
//   the fraction or the absolute tokens: the deficit is what bounds the
//   units taken in the recent past (history ≤ S_old + r_old·x − tokens), so
//   charging it in full is what makes rule 2 hold; absolute tokens would
//   let a burst of S_old just before a shrink to S_new < S_old be followed
//   by S_new more, and the fraction would do the same.
// - fixed window: the count, if the old window holding it overlaps the new
//   window containing `now` (the units may be anywhere in it), else nothing.
// - sliding log: every entry still in the old window, re-windowed with W_new,
//   then only the units that can change a decision of `to`, as a report
//   leaves them: each entry holds at most L_new, and while the entries after
//   the oldest hold L_new or more the oldest is dropped (while it is in the
//   window they alone deny every request, and it leaves first). So a lower
//   limit keeps at most 2·L_new − 1 units, and every decision of `to` is the
//   one the whole log would give; L_new = 0 keeps none.
// - sliding window counter: the old windows' counts charged to every new
//   window (k − 1 or k) they overlap.
// - sliding window with buckets: unchanged when only L changes; otherwise the
//   units still in the old window are charged to the new sub-window of the
//   latest old sub-window (its sub-window counts are private to it). Then,
//   as for the sliding log, only the units that can change a decision of
//   `to`: each sub-window at most L_new, the oldest non-empty emptied while
//   the newer ones hold L_new or more.
// - leaky queue: the release time of the last queued unit is kept (its
//   units leave as promised); new units are spaced W_new/L_new after it and
//   the queue bound Q_new counts that wait in new slots.
// - quota: the units used (a smaller N may leave it exhausted).
// - concurrency: the leases, as they are.
// - all_of / any_of: part by part; the parts must match in number and kind.
//
// A limit of L = 0 keeps what it needs to change back: a GCRA with L = 0
// holds its deficit in `u`, a leaky queue its last release instant unscaled.
// Receipts and reservations made under `from` do not carry over.
// Thread safety: pure functions of their arguments.
#pragma once

#include "sluice/core/any.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// The state for `to` that continues `s` (a state of `from`) at `now`; see
/// the overview. Each single algorithm has its own overload, beside it in
/// its file pair. Pure.
///
/// A composite: part by part; the error names "parts" when the number or
/// the kinds of the parts differ.
[[nodiscard]] result<all_of_state> reconfigure(const all_of& from, const all_of_state& s, const all_of& to, tick now);
/// Part by part; the error names "parts" as for all_of.
[[nodiscard]] result<any_of_state> reconfigure(const any_of& from, const any_of_state& s, const any_of& to, tick now);
/// Whichever algorithm the policies hold; the error names "algorithm" when
/// `from` and `to` are different algorithms, "parts" for mismatched
/// composites. Requires `s` to hold `from`'s state type.
[[nodiscard]] result<any_state> reconfigure(const any_policy& from, const any_state& s, const any_policy& to, tick now);

}  // namespace sluice
