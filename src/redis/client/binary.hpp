// The Redis store's numbers on the wire (private to sluice::redis): every
// integer the Lua library reads or writes travels as an IEEE-754 double,
// little-endian, 8 bytes (the `struct` library's '<d'), exact for
// magnitudes below 2^53. The conversions here use integer operations only
// (no floating point), and reading is strict: a double that is not an
// integer below 2^53 in magnitude (a fraction, NaN, an infinity, a
// subnormal) is refused. -0 reads as 0, as it does in Lua.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sluice::redis {

/// 2^53: every integer the library handles is below it in magnitude.
inline constexpr std::int64_t p53 = std::int64_t{1} << 53;

/// The IEEE-754 bits of the double equal to `v`. Requires |v| < 2^53.
constexpr std::uint64_t double_bits(std::int64_t v) noexcept {
  if (v == 0) return 0;
  const std::uint64_t sign = v < 0 ? std::uint64_t{1} << 63 : 0;
  std::uint64_t m = v < 0 ? static_cast<std::uint64_t>(-v) : static_cast<std::uint64_t>(v);
  const int top = static_cast<int>(std::bit_width(m)) - 1;  // the highest set bit, 0..52
  m <<= 52 - top;                                           // the significand, its leading 1 at bit 52
  const std::uint64_t exponent = static_cast<std::uint64_t>(top + 1023);
  return sign | exponent << 52 | (m & ((std::uint64_t{1} << 52) - 1));
}

/// The integer a double's bits hold, if it is one of magnitude below 2^53.
constexpr bool integer_of(std::uint64_t bits, std::int64_t& out) noexcept {
  const std::uint64_t exponent = bits >> 52 & 0x7ff;
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  if (exponent == 0) {  // ±0, or a subnormal (a fraction)
    out = 0;
    return fraction == 0;
  }
  if (exponent == 0x7ff) return false;                  // infinity, NaN
  const int shift = static_cast<int>(exponent) - 1075;  // value = significand · 2^shift
  if (shift > 0 || shift < -52) return false;           // ≥ 2^53, or below 1
  const std::uint64_t significand = fraction | std::uint64_t{1} << 52;
  if (shift < 0 && (significand & ((std::uint64_t{1} << -shift) - 1)) != 0) return false;  // a fraction
  const auto magnitude = static_cast<std::int64_t>(significand >> -shift);
  out = bits >> 63 ? -magnitude : magnitude;
  return true;
}

/// Appends `v` (|v| < 2^53) as 8 little-endian bytes.
inline void put_number(std::string& out, std::int64_t v) {
  std::uint64_t b = double_bits(v);
  char bytes[8];
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(bytes, &b, 8);
  } else {
    for (char& c : bytes) {
      c = static_cast<char>(b & 0xff);
      b >>= 8;
    }
  }
  out.append(bytes, 8);
}

/// Reads the integer at `p` (8 little-endian bytes); false if the double
/// there is not an integer below 2^53 in magnitude.
inline bool get_number(const char* p, std::int64_t& out) noexcept {
  std::uint64_t b = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&b, p, 8);
  } else {
    for (int i = 7; i >= 0; --i) b = b << 8 | static_cast<unsigned char>(p[i]);
  }
  return integer_of(b, out);
}

}  // namespace sluice::redis
