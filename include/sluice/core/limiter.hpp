// A policy with its own state and clock: the everyday object for one
// limited thing (one client, one outbound quota). For many keys, use a keyed
// store; for composition, combine policies.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "sluice/core/any.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/report.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// One limiter: an immutable policy, its state, and the clock it reads.
///
/// `Policy` is any algorithm (`token_bucket`, `gcra`, ...), composite
/// (`all_of`, `any_of`) or `any_policy`.
/// `Clock` has `tick now()`; an empty clock type (`steady_clock`) is
/// default-constructed, any other (`manual_clock`) is held by reference and
/// must outlive the limiter. Not thread-safe: one thread at a time.
template <typename Policy, typename Clock = steady_clock>
class limiter {
 public:
  using state_type = typename detail::state_of<Policy>::type;

  /// A limiter with a fresh state on an empty clock type.
  explicit limiter(Policy p) requires std::is_empty_v<Clock> : policy_(std::move(p)), state_(fresh()) {}
  /// A limiter reading `clock`, which must outlive it.
  limiter(Policy p, const Clock& clock) : policy_(std::move(p)), state_(fresh()), clock_(&clock) {}

  /// Decides a request of `cost` (≥ 1) units at the explicit instant `now`.
  decision try_acquire_at(tick now, std::int64_t cost = 1) noexcept { return decide(policy_, state_, now, cost); }

  /// Decides a request of `cost` units now, reading the clock once.
  decision try_acquire(std::int64_t cost = 1) noexcept { return try_acquire_at(read_clock(), cost); }

  /// Charges `cost` units spent at `now`, whatever the limit says (a
  /// report: never denied, so the state may go into a debt that later
  /// requests wait out; see report.hpp). A cost < 1 charges nothing.
  decision report_at(tick now, std::int64_t cost) noexcept { return sluice::report(policy_, state_, now, cost); }

  /// `report_at` now, reading the clock once.
  decision report(std::int64_t cost) noexcept { return report_at(read_clock(), cost); }

  [[nodiscard]] const Policy& policy() const noexcept { return policy_; }
  [[nodiscard]] const state_type& state() const noexcept { return state_; }
  /// Forgets everything: back to the fresh state.
  void reset() { state_ = fresh(); }

 private:
  state_type fresh() const { return detail::fresh_state_of(policy_); }
  tick read_clock() const noexcept { return detail::read_clock(clock_); }

  Policy policy_;
  state_type state_;
  const Clock* clock_ = nullptr;
};

}  // namespace sluice
