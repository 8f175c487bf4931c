// Exact integer helpers shared by every limiter's step function.
//
// Internal to sluice (included by the public headers so the step functions
// inline); not part of the API. Every quantity a user can reach is carried in
// 128 bits and clamped back to int64 at the edges, so no int64 input can
// overflow.
#pragma once

#include <cstdint>
#include <limits>

namespace sluice::detail {

__extension__ typedef __int128 i128;

inline constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();
inline constexpr std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();

/// A scaled time earlier than any real one (`-inf` for GCRA's and the leaky
/// queue's fresh state): below `INT64_MIN * 2^62`, yet far from i128's edge.
inline constexpr i128 minus_infinity = -(static_cast<i128>(1) << 126);

/// floor(a / b) for b > 0.
constexpr i128 floor_div(i128 a, i128 b) noexcept {
  i128 q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

/// ceil(a / b) for b > 0.
constexpr i128 ceil_div(i128 a, i128 b) noexcept {
  i128 q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}

/// a mod b in [0, b) for b > 0.
constexpr i128 floor_mod(i128 a, i128 b) noexcept {
  i128 r = a % b;
  return r < 0 ? r + b : r;
}

/// Clamps to [0, INT64_MAX].
constexpr std::int64_t clamp_count(i128 v) noexcept {
  if (v < 0) return 0;
  if (v > i64_max) return i64_max;
  return static_cast<std::int64_t>(v);
}

/// The duration from `now` to the instant `at`, saturated: an instant past
/// the end of representable time, or a duration that does not fit, gives
/// INT64_MAX (`never`); an instant not after `now` gives 0.
constexpr std::int64_t until(i128 at, std::int64_t now) noexcept {
  if (at > i64_max) return i64_max;
  i128 d = at - now;
  if (d <= 0) return 0;
  if (d >= i64_max) return i64_max;
  return static_cast<std::int64_t>(d);
}

constexpr std::int64_t max64(std::int64_t a, std::int64_t b) noexcept { return a < b ? b : a; }

}  // namespace sluice::detail
