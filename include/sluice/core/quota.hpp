// Quota: N units in all, never refilled. Also the always-allow and
// always-deny limiters, the identity elements of composition.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/decision.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

struct spec;
class receipt;
struct limit_figures;
struct worst_case_traits;

struct spec;
class receipt;

/// A budget of N units that is never refilled.
class quota {
 public:
  /// Its name on the command line and in policy expressions.
  static constexpr std::string_view name = "quota";
  /// Whether its state owns memory (then `peek` reads it in place;
  /// otherwise a peek decides on a copy).
  static constexpr bool owns_memory = false;
  /// The options a policy expression may give it ("" for none).
  static constexpr std::string_view options = "";

  /// Units used so far. Trivially copyable; fresh is `state{}`.
  struct state {
    std::int64_t used = 0;
    friend constexpr bool operator==(const state&, const state&) = default;
  };

  /// Builds the policy; N from 0 to 2^62. Errors name "quota".
  static result<quota> make(std::int64_t units);
  /// Builds the policy a spec describes (any.hpp: make_policy); the error
  /// names the field.
  static result<quota> from_spec(const spec& s);

  [[nodiscard]] constexpr std::int64_t units() const noexcept { return units_; }

 private:
  constexpr explicit quota(std::int64_t units) noexcept : units_(units) {}
  std::int64_t units_;
};

/// Admits iff used + cost ≤ N; a denial is always `never`.
constexpr decision decide(const quota& p, quota::state& s, tick /*now*/, std::int64_t cost) noexcept {
  decision d;
  if (cost >= 1 && cost <= p.units() - s.used) {
    s.used += cost;
    d.allowed = true;
  } else {
    d.retry_after = never;
  }
  d.remaining = detail::max64(0, p.units() - s.used);
  d.reset_after = s.used > 0 ? never : 0;
  return d;
}

/// Admits every request (cost ≥ 1). Stateless.
struct always_allow {
  /// Its policy; a spec has nothing to check.
  static result<always_allow> from_spec(const spec& s);
  static constexpr std::string_view name = "always-allow";
  static constexpr bool owns_memory = false;
  /// The options a policy expression may give it ("" for none).
  static constexpr std::string_view options = "";
  struct state {
    friend constexpr bool operator==(const state&, const state&) = default;
  };
};

/// Denies every request, `never`. Stateless.
struct always_deny {
  /// Its policy; a spec has nothing to check.
  static result<always_deny> from_spec(const spec& s);
  static constexpr std::string_view name = "always-deny";
  static constexpr bool owns_memory = false;
  /// The options a policy expression may give it ("" for none).
  static constexpr std::string_view options = "";
  struct state {
    friend constexpr bool operator==(const state&, const state&) = default;
  };
};

constexpr decision decide(const always_allow&, always_allow::state&, tick, std::int64_t cost) noexcept {
  decision d;
  d.allowed = cost >= 1;
  d.remaining = detail::i64_max;
  d.retry_after = d.allowed ? 0 : never;
  return d;
}

constexpr decision decide(const always_deny&, always_deny::state&, tick, std::int64_t) noexcept {
  decision d;
  d.retry_after = never;
  return d;
}

// ---- quota: its part of the operations over any policy (src/core/quota.cpp) ----

/// Charges `cost` at `now` whatever the limit says (report.hpp), within
/// the bounds semantics.md states ("Reports"); a cost < 1 changes nothing.
void charge(const quota& p, quota::state& s, tick now, std::int64_t cost) noexcept;
/// The receipt of an admit of `cost` at `now`, read on the state before
/// the step (refund.hpp: `admit`).
receipt receipt_before(const quota& p, const quota::state& s, tick now, std::int64_t cost) noexcept;
/// Completes an admit's receipt from the state the step left.
void receipt_after(receipt& r, const quota& p, const quota::state& s) noexcept;
/// Gives back what `r` took, as refund.hpp says for this algorithm, and
/// uses `r` up; returns the units given back.
std::int64_t refund(const quota& p, quota::state& s, receipt&& r, tick now) noexcept;
/// The state for `to` that continues `s` (a state of `from`) at `now`
/// (reconfigure.hpp). Pure.
[[nodiscard]] quota::state reconfigure(const quota& from, const quota::state& s, const quota& to, tick now) noexcept;
/// Whether a quota is unused. A quota never refills, so once used it is
/// never fresh again (a keyed store keeps it for ever). `now` is ignored.
constexpr bool is_fresh(const quota&, const quota::state& s, tick /*now*/) noexcept { return s.used == 0; }
/// Its policy as a policy expression writes it (policy_expr.hpp).
std::string policy_text(const quota& p);
/// What its worst case needs of it for `window2` and `granularity` ≥ 1
/// (worst_case.hpp).
worst_case_traits worst_case_traits_of(const quota& p, tick window2, tick granularity);
/// The figures of its limit that the wire advertises, and what the command
/// asks of it (algorithm.hpp).
limit_figures limit_of(const quota& p) noexcept;
/// Whether carrying a state of `from` over to `to` may leave it below
/// empty (a debt), which only a non-compact keyed store can hold.
bool may_leave_debt(const quota& from, const quota& to) noexcept;

// ---- always_allow and always_deny: their part of the operations over any policy (src/core/quota.cpp) ----

/// The constant answers, which keep no state: their operations are alike
/// but for the figures of their limit and their text.
template <typename P>
concept constant_answer = std::same_as<P, always_allow> || std::same_as<P, always_deny>;

/// Charges nothing (a report answers as the decision would: always-allow
/// remaining INT64_MAX and retry_after 0, always-deny retry_after `never`).
constexpr void charge(const always_allow&, always_allow::state&, tick, std::int64_t) noexcept {}
constexpr void charge(const always_deny&, always_deny::state&, tick, std::int64_t) noexcept {}
/// Always true: no state.
constexpr bool is_fresh(const always_allow&, const always_allow::state&, tick) noexcept { return true; }
constexpr bool is_fresh(const always_deny&, const always_deny::state&, tick) noexcept { return true; }
/// Its policy as a policy expression writes it (policy_expr.hpp).
std::string policy_text(const always_allow& p);
std::string policy_text(const always_deny& p);
/// The figures of its limit that the wire advertises, and what the command
/// asks of it (algorithm.hpp): always-allow admits without bound.
limit_figures limit_of(const always_allow& p) noexcept;
limit_figures limit_of(const always_deny& p) noexcept;

/// The receipt of an admit of `cost` at `now` (refund.hpp: `admit`).
template <constant_answer P>
receipt receipt_before(const P& p, const typename P::state& s, tick now, std::int64_t cost) noexcept;
/// Completes an admit's receipt: nothing to add.
template <constant_answer P>
constexpr void receipt_after(receipt&, const P&, const typename P::state&) noexcept {}
/// Always 0.
template <constant_answer P>
std::int64_t refund(const P& p, typename P::state& s, receipt&& r, tick now) noexcept;
/// Stateless: the fresh state.
template <constant_answer P>
[[nodiscard]] constexpr typename P::state reconfigure(const P&, const typename P::state&, const P&, tick) noexcept {
  return {};
}
/// Its closed form for `window2` and `granularity` ≥ 1 (worst_case.hpp).
template <constant_answer P>
worst_case_traits worst_case_traits_of(const P& p, tick window2, tick granularity);
/// Never: it has no state to carry.
template <constant_answer P>
constexpr bool may_leave_debt(const P&, const P&) noexcept {
  return false;
}

/// The quota's encodings (portable.hpp): its state is the units used.
template <>
struct portable::of<quota> {
  static constexpr std::uint8_t tag = 7;
  static constexpr bool aligned_windows = false;
  static constexpr char letter = 'u';
  /// Its Redis leaf (portable.hpp; src/redis/lua/, its `--! leaf` line).
  static std::optional<error> redis_plan(const quota& p, redis_constants& k);
  static void redis_args(const quota& p, const redis_constants& k, const redis_call& c, redis_numbers& out) noexcept;
  static constexpr std::array params{param<quota>{"units", [](const quota& p) { return p.units(); }}};
  static result<quota> make(const std::array<std::int64_t, 1>& v) { return quota::make(v[0]); }

  struct fields {
    detail::i128 used = 0;
  };
  static constexpr bool empty(const quota::state& s) noexcept { return s.used == 0; }
  static constexpr fields to(const quota&, const quota::state& s, encoding) noexcept { return {s.used}; }
  static constexpr quota::state from(const quota&, const fields& f, encoding) noexcept {
    return {static_cast<std::int64_t>(f.used)};
  }
  static constexpr std::array layout{field<quota, fields>{&fields::used, kind::count, "quota use",
                                                          [](const quota& p) {
                                                            return range{1, p.units()};
                                                          },
                                                          true}};
  static constexpr std::array<std::size_t, 1> redis_order{0};
};

/// Always-allow's and always-deny's encodings: no parameters, no state.
template <>
struct portable::of<always_allow> {
  static constexpr std::uint8_t tag = 8;
  static constexpr bool aligned_windows = false;
  static constexpr std::array<param<always_allow>, 0> params{};
  static result<always_allow> make(const std::array<std::int64_t, 0>&) { return always_allow{}; }
};
template <>
struct portable::of<always_deny> {
  static constexpr std::uint8_t tag = 9;
  static constexpr bool aligned_windows = false;
  static constexpr std::array<param<always_deny>, 0> params{};
  static result<always_deny> make(const std::array<std::int64_t, 0>&) { return always_deny{}; }
};

}  // namespace sluice
