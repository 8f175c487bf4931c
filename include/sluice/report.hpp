// Reports: charging a cost after the fact, whatever the limit says.
//
// `report(policy, state, now, cost)` charges `cost` unconditionally — it is
// never denied — so a state may go past its limit (a debt), and later
// requests wait exactly as long as the debt takes to clear. Each algorithm's
// debt saturates at a bound semantics.md states ("Reports"), so nothing
// overflows. A report that `decide` would admit leaves exactly the state
// `decide` leaves.
//
// The answer has `allowed = true` and the figures read on the charged state:
// `remaining` (0 past the limit), `retry_after` (until a request of cost 1
// would be admitted), `reset_after`; `release_after` is 0.
// Thread safety: as for `decide`: the caller owns the state.
#pragma once

#include <cstdint>
#include <span>

#include "sluice/any.hpp"
#include "sluice/decision.hpp"
#include "sluice/time.hpp"

namespace sluice {

/// Charges `cost` at `now` (see the overview). A cost < 1 changes nothing
/// and answers as `decide` does for it. Pure apart from `s`.
decision report(const fixed_window& p, fixed_window::state& s, tick now, std::int64_t cost) noexcept;
/// See the fixed-window overload.
decision report(const sliding_log& p, sliding_log::state& s, tick now, std::int64_t cost) noexcept;
/// See the fixed-window overload.
decision report(const sliding_counter& p, sliding_counter::state& s, tick now, std::int64_t cost) noexcept;
/// See the fixed-window overload.
decision report(const sliding_buckets& p, sliding_buckets::state& s, tick now, std::int64_t cost) noexcept;
/// See the fixed-window overload.
decision report(const token_bucket& p, token_bucket::state& s, tick now, std::int64_t cost) noexcept;
/// See the fixed-window overload.
decision report(const gcra& p, gcra::state& s, tick now, std::int64_t cost) noexcept;
/// See the fixed-window overload.
decision report(const leaky_queue& p, leaky_queue::state& s, tick now, std::int64_t cost) noexcept;
/// See the fixed-window overload.
decision report(const quota& p, quota::state& s, tick now, std::int64_t cost) noexcept;
/// Charges nothing; remaining INT64_MAX, retry_after 0.
decision report(const always_allow& p, always_allow::state& s, tick now, std::int64_t cost) noexcept;
/// Charges nothing; retry_after `never`.
decision report(const always_deny& p, always_deny::state& s, tick now, std::int64_t cost) noexcept;
/// Charges every part `cost`; the figures combine as all_of's.
decision report(const all_of& p, all_of_state& s, tick now, std::int64_t cost) noexcept;
/// Charges the part `decide` would charge, else the first part.
decision report(const any_of& p, any_of_state& s, tick now, std::int64_t cost) noexcept;
/// Whichever algorithm `p` holds; requires `s` to hold its state type.
decision report(const any_policy& p, any_state& s, tick now, std::int64_t cost) noexcept;

/// The figures a report answers, read on `s` at `now` without changing it:
/// `allowed = true`, `remaining` and `reset_after` of the state as it is,
/// `retry_after` until a request of cost 1 would be admitted.
decision report_figures(const any_policy& p, const any_state& s, tick now) noexcept;

/// A store request's report answer from its checks' (each a report answer):
/// combined as all_of's (the smallest `remaining`, the largest `retry_after`
/// and `reset_after`; `part` the check that binds). `allowed = true`.
decision combine_reports(std::span<const decision> checks) noexcept;

}  // namespace sluice
