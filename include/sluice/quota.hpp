// Quota: N units in all, never refilled. Also the always-allow and
// always-deny limiters, the identity elements of composition.
#pragma once

#include <array>
#include <cstdint>

#include "sluice/decision.hpp"
#include "sluice/detail/arith.hpp"
#include "sluice/portable.hpp"
#include "sluice/result.hpp"
#include "sluice/time.hpp"

namespace sluice {

/// A budget of N units that is never refilled.
class quota {
 public:
  /// Units used so far. Trivially copyable; fresh is `state{}`.
  struct state {
    std::int64_t used = 0;
    friend constexpr bool operator==(const state&, const state&) = default;
  };

  /// Builds the policy; N from 0 to 2^62. Errors name "quota".
  static result<quota> make(std::int64_t units);

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
  struct state {
    friend constexpr bool operator==(const state&, const state&) = default;
  };
};

/// Denies every request, `never`. Stateless.
struct always_deny {
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

/// The quota's encodings (portable.hpp): its state is the units used.
template <>
struct portable::of<quota> {
  static constexpr char letter = 'u';
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
  static constexpr std::array<param<always_allow>, 0> params{};
  static result<always_allow> make(const std::array<std::int64_t, 0>&) { return always_allow{}; }
};
template <>
struct portable::of<always_deny> {
  static constexpr std::array<param<always_deny>, 0> params{};
  static result<always_deny> make(const std::array<std::int64_t, 0>&) { return always_deny{}; }
};

}  // namespace sluice
