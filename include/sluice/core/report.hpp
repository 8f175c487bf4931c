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
#include <variant>

#include "sluice/core/any.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/lease.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/report_bound.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// Charges every part `cost`; the figures combine as all_of's.
decision report(const all_of& p, all_of_state& s, tick now, std::int64_t cost) noexcept;
/// Charges the part `decide` would charge, else the first part.
decision report(const any_of& p, any_of_state& s, tick now, std::int64_t cost) noexcept;
namespace detail {
/// The rest of `report` (below), out of line. `report_full`: `p` (not an
/// any_of) admitted a report to its last unit, leaving `remaining` and
/// `reset_after` (its decision's `part`): the figures of that state.
decision report_full(const any_policy& p, const any_state& s, tick now, std::int64_t remaining, tick reset_after,
                     std::int32_t part) noexcept;
/// `report_charge`: a report that no decision took (denied, an any_of, a
/// cost below 1): the charge by the algorithm's rule, and its figures.
decision report_charge(const any_policy& p, any_state& s, tick now, std::int64_t cost) noexcept;
}  // namespace detail

/// Whichever algorithm `p` holds; requires `s` to hold its state type.
inline decision report(const any_policy& p, any_state& s, tick now, std::int64_t cost) noexcept {
  // A report that fits is a decision (the same state change), and when it
  // leaves room for a unit its figures are the decision's: `remaining` and
  // `reset_after` read after the charge, no wait for a cost of 1. Not for a
  // top-level any_of, whose `part` names the part a unit would go to, which
  // need not be the one that paid. Inline, as `decide` is, and with no
  // decision object shared by the paths (one copied through memory cost as
  // much as the decision: report_bench).
  // Nor for a concurrency limit, which a report charges nothing (a decision
  // would take a lease: semantics.md, "Leases").
  if (cost >= 1 && !std::holds_alternative<any_of>(p) && !std::holds_alternative<concurrency>(p) &&
      (!std::holds_alternative<all_of>(p) || !holds_concurrency(p))) {
    const decision d = decide(p, s, now, cost);
    if (d.allowed && d.remaining >= 1) return decision{true, d.remaining, 0, d.reset_after, 0, d.part};
    if (d.allowed) return detail::report_full(p, s, now, d.remaining, d.reset_after, d.part);
  }
  return detail::report_charge(p, s, now, cost);
}

/// The figures a report answers, read on `s` at `now` without changing it:
/// `allowed = true`, `remaining` and `reset_after` of the state as it is,
/// `retry_after` until a request of cost 1 would be admitted.
decision report_figures(const any_policy& p, const any_state& s, tick now) noexcept;

/// A report's answer from two reads of the state after the charge: `zero`,
/// a decision of cost 0 (its room and reset), and `one`, of cost 1 (the
/// wait). The one place the keyed store's compact cells and the core build it.
constexpr decision report_answer(const decision& zero, const decision& one) noexcept {
  decision d;
  d.allowed = true;
  d.remaining = zero.remaining;
  d.reset_after = zero.reset_after;
  d.retry_after = one.allowed ? 0 : one.retry_after;
  return d;
}

/// Charges `cost` at `now` (see the overview) with a single algorithm: its
/// own `charge` (beside it, in its file pair), then the figures read on the
/// charged state. A cost < 1 changes nothing and answers as `decide` does
/// for it. Pure apart from `s`.
template <typename P>
requires requires { P::owns_memory; }
decision report(const P& p, typename P::state& s, tick now, std::int64_t cost) noexcept {
  if (cost < 1) return peek(p, s, now, cost);
  charge(p, s, now, cost);
  return report_answer(peek(p, s, now, 0), peek(p, s, now, 1));
}

/// A store request's report answer from its checks' (each a report answer):
/// combined as all_of's (the smallest `remaining`, the largest `retry_after`
/// and `reset_after`; `part` the check that binds). `allowed = true`.
decision combine_reports(std::span<const decision> checks) noexcept;

}  // namespace sluice
