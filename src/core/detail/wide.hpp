// Private to sluice::core: rescaling a 128-bit quantity by a ratio of two
// policy quantities (a·b/c with b, c ≤ 2^62), which the product a·b could
// overflow. Used when a reconfiguration changes the scale of a state
// (tokens in 1/W token, times scaled by L).
#pragma once

#include "sluice/core/detail/arith.hpp"

namespace sluice::detail {

/// The bound every rescaled quantity is saturated to: ±2^126, as far from
/// i128's edge as `minus_infinity`, and past any state a step can reach.
inline constexpr i128 wide_bound = static_cast<i128>(1) << 126;

constexpr i128 clamp_wide(i128 v) noexcept {
  if (v > wide_bound) return wide_bound;
  if (v < -wide_bound) return -wide_bound;
  return v;
}

/// floor(a·b / c), requires |a| ≤ 2^126 and 1 ≤ b, c ≤ 2^62. Exact when the
/// result lies within ±2^126, saturated to ±2^126 otherwise. Splits a = q·c + r
/// (0 ≤ r < c) so that only q·b can grow, and that product is checked.
constexpr i128 muldiv_floor(i128 a, i128 b, i128 c) noexcept {
  const i128 q = floor_div(a, c);
  const i128 r = a - q * c;  // [0, c): r·b < 2^124
  const i128 limit = wide_bound / b;
  if (q > limit) return wide_bound;
  if (q < -limit) return -wide_bound;
  return clamp_wide(q * b + floor_div(r * b, c));
}

/// ceil(a·b / c), under the same requirements.
constexpr i128 muldiv_ceil(i128 a, i128 b, i128 c) noexcept { return -muldiv_floor(-a, b, c); }

}  // namespace sluice::detail
