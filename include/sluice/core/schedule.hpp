// Peeking: when would a request be admitted, without taking anything.
//
// `next_allowed_at(policy, state, now, cost)` is the earliest instant at or
// after `now` at which the same request would be admitted if nothing else
// happens, or `never`. It is exact for every algorithm and composite because
// each one's `retry_after` is exact and every algorithm only gets more
// permissive as time passes: admitted at the instant returned, denied at
// every instant from `now` up to one tick before it.
#pragma once

#include <concepts>
#include <cstdint>

#include "sluice/core/any.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/limiter.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// The instant a decision taken at `now` says the request is admitted at:
/// `now` when allowed, `never` when it never will be, else
/// `now + retry_after`, saturated at `never` (a wait that runs past the end
/// of representable time is `never`). Pure; thread-safe.
[[nodiscard]] constexpr tick admitted_at(const decision& d, tick now) noexcept {
  if (d.allowed) return now;
  if (d.retry_after == never) return never;
  if (now > never - d.retry_after) return never;
  return now + d.retry_after;
}

/// A policy type `P` whose step function takes states of type `S`.
template <typename P, typename S>
concept steppable = requires(const P& p, S& s, tick now, std::int64_t cost) {
  { decide(p, s, now, cost) } -> std::same_as<decision>;
};

/// The earliest instant ≥ `now` at which a request of `cost` would be
/// admitted by `p` in state `s`, or `never` (a cost above what `p` can ever
/// admit, L = 0, an always-deny part, or an instant past INT64_MAX). Takes
/// nothing: it decides on a copy of `s`.
///
/// Works for every algorithm, `all_of`/`any_of` (the largest / smallest of
/// the parts' instants) and `any_policy`. A `now` earlier than the state's
/// latest admit (a clock that stepped back) is read as that admit's time, as
/// by `decide`; the instant returned is then at least that time.
/// Costs a copy of the state: free for the trivially copyable states, one
/// allocation for a sliding log, sliding buckets or composite (which may
/// throw std::bad_alloc). Thread-safe for concurrent readers of `s`.
template <typename Policy, typename State>
requires steppable<Policy, State>
[[nodiscard]] tick next_allowed_at(const Policy& p, const State& s, tick now, std::int64_t cost) {
  State copy = s;
  return admitted_at(decide(p, copy, now, cost), now);
}

/// `next_allowed_at` for a limiter's own policy and state, at the explicit
/// instant `now` (on the limiter's clock). Takes nothing. Not thread-safe
/// against a concurrent `try_acquire` on the same limiter.
template <typename Policy, typename Clock>
[[nodiscard]] tick next_allowed_at(const limiter<Policy, Clock>& l, tick now, std::int64_t cost = 1) {
  return next_allowed_at(l.policy(), l.state(), now, cost);
}

}  // namespace sluice
