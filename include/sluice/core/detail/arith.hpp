// Exact integer helpers shared by every limiter's step function.
//
// Internal to sluice (included by the public headers so the step functions
// inline); not part of the API. Every quantity a user can reach is carried in
// 128 bits and clamped back to int64 at the edges, so no int64 input can
// overflow.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

namespace sluice::detail {

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

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

/// The greatest common divisor of a, b ≥ 0, in any integer type (128-bit
/// ones too, which std::gcd does not take).
template <typename T>
constexpr T gcd(T a, T b) noexcept {
  while (b != 0) {
    const T r = a % b;
    a = b;
    b = r;
  }
  return a;
}

/// Division by a divisor fixed when a policy is built (W, or L), with no
/// division instruction: a multiply by a precomputed reciprocal and two
/// shifts (Granlund & Montgomery, "Division by invariant integers using
/// multiplication", PLDI 1994, fig. 4.1, N = 64), exact for every dividend
/// below 2^64. A 128-bit division (`__divti3`) costs 25-50 instructions and
/// a call; this costs 5. Immutable; trivially copyable.
class divisor {
 public:
  /// Divides by 1.
  constexpr divisor() noexcept = default;
  /// Requires 1 <= d <= 2^62 (a validated W, or an L >= 1).
  constexpr explicit divisor(std::int64_t d) noexcept {
    const auto ud = static_cast<std::uint64_t>(d);
    const int l = static_cast<int>(std::bit_width(ud - 1));  // ceil(log2 d): 2^(l-1) < d <= 2^l
    // m = floor(2^64 (2^l - d) / d) + 1, below 2^64 since 2^l - d < d.
    m_ = static_cast<std::uint64_t>((static_cast<u128>((std::uint64_t{1} << l) - ud) << 64) / ud) + 1;
    sh1_ = l < 1 ? l : 1;
    sh2_ = l > 1 ? l - 1 : 0;
  }
  /// floor(n / d), for any n below 2^64.
  [[nodiscard]] constexpr std::uint64_t div(std::uint64_t n) const noexcept {
    const auto t = static_cast<std::uint64_t>((static_cast<u128>(m_) * n) >> 64);
    return (t + ((n - t) >> sh1_)) >> sh2_;
  }
  /// ceil(n / d), for 1 <= n < 2^64.
  [[nodiscard]] constexpr std::uint64_t ceil(std::uint64_t n) const noexcept { return div(n - 1) + 1; }

 private:
  std::uint64_t m_ = 1;
  int sh1_ = 0;
  int sh2_ = 0;
};

/// Splits instants into windows of W ticks starting at origin + kW (0 ≤
/// origin < W ≤ 2^62) without a 128-bit division: t + 2^63 is unsigned, so
/// floor((t − origin) / W) = floor((t + 2^63 − r0) / W) − q0 with
/// 2^63 + origin = q0·W + r0, one reciprocal division. Immutable.
class window_split {
 public:
  constexpr window_split() noexcept = default;
  constexpr explicit window_split(std::int64_t w, std::int64_t origin = 0) noexcept
      : per_(w),
        w_(static_cast<std::uint64_t>(w)),
        q0_(static_cast<std::uint64_t>(((u128{1} << 63) + static_cast<std::uint64_t>(origin)) / w_)),
        r0_(static_cast<std::uint64_t>(((u128{1} << 63) + static_cast<std::uint64_t>(origin)) % w_)) {}

  /// The window of an instant and the offset in it.
  struct at {
    std::int64_t k;        ///< floor((t − origin) / W)
    std::uint64_t offset;  ///< t − origin − kW, in [0, W)
  };
  [[nodiscard]] constexpr at operator()(std::int64_t t) const noexcept {
    const std::uint64_t u = static_cast<std::uint64_t>(t) ^ (std::uint64_t{1} << 63);  // t + 2^63
    if (u < r0_) return {static_cast<std::int64_t>(~q0_), u + w_ - r0_};               // within W of INT64_MIN
    const std::uint64_t q = per_.div(u - r0_);
    return {static_cast<std::int64_t>(q - q0_), u - r0_ - q * w_};
  }

 private:
  divisor per_;
  std::uint64_t w_ = 1;
  std::uint64_t q0_ = std::uint64_t{1} << 63;
  std::uint64_t r0_ = 0;
};

/// until(e + c, now) in 64-bit arithmetic, the same value, for c <= INT64_MAX.
constexpr std::int64_t until_after(std::int64_t e, std::uint64_t c, std::int64_t now) noexcept {
  std::int64_t at;
  if (__builtin_add_overflow(e, static_cast<std::int64_t>(c), &at)) return i64_max;  // past the end of time
  std::int64_t d;
  if (__builtin_sub_overflow(at, now, &d)) return at > now ? i64_max : 0;
  return d <= 0 ? 0 : d;
}

}  // namespace sluice::detail
