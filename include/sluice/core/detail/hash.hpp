// The key hash of sluice's stores: 64 bits from a byte string and a seed,
// in the manner of wyhash (multiply-fold mixing of 16 bytes a round), used
// by the keyed store (sluice::keyed) and the deny cache (sluice::remote).
// Decisions never depend on it; only speed and the spread over shards do.
// Internal to sluice (installed because two targets share it); not part of
// the API, may change between versions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sluice::keyed_detail {

__extension__ typedef unsigned __int128 u128;

/// The 64-bit fold of the 128-bit product a·b (high half xor low half).
inline std::uint64_t mum(std::uint64_t a, std::uint64_t b) noexcept {
  const u128 r = static_cast<u128>(a) * b;
  return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
}

/// The 8 bytes at `p`, unaligned, in the machine's byte order.
inline std::uint64_t read8(const unsigned char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

/// The 4 bytes at `p`, unaligned, in the machine's byte order.
inline std::uint64_t read4(const unsigned char* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

/// The mixing constants (wyhash's).
inline constexpr std::uint64_t hash_k0 = 0xa0761d6478bd642fULL;
inline constexpr std::uint64_t hash_k1 = 0xe7037ed1a0b428dbULL;
inline constexpr std::uint64_t hash_k2 = 0x8ebc6af09c88c6e3ULL;

/// A 64-bit hash of `n` bytes at `data` under `seed`; any `n`, 0 included.
inline std::uint64_t hash_bytes(const void* data, std::size_t n, std::uint64_t seed) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  seed ^= hash_k0;
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  if (n <= 16) {
    if (n >= 4) {
      const std::size_t off = (n >> 3) << 2;
      a = (read4(p) << 32) | read4(p + off);
      b = (read4(p + n - 4) << 32) | read4(p + n - 4 - off);
    } else if (n > 0) {
      a = (static_cast<std::uint64_t>(p[0]) << 16) | (static_cast<std::uint64_t>(p[n >> 1]) << 8) | p[n - 1];
    }
  } else {
    std::size_t i = n;
    if (i > 48) {
      std::uint64_t s1 = seed;
      std::uint64_t s2 = seed;
      do {
        seed = mum(read8(p) ^ hash_k1, read8(p + 8) ^ seed);
        s1 = mum(read8(p + 16) ^ hash_k2, read8(p + 24) ^ s1);
        s2 = mum(read8(p + 32) ^ hash_k1, read8(p + 40) ^ s2);
        p += 48;
        i -= 48;
      } while (i > 48);
      seed ^= s1 ^ s2;
    }
    while (i > 16) {
      seed = mum(read8(p) ^ hash_k1, read8(p + 8) ^ seed);
      i -= 16;
      p += 16;
    }
    a = read8(p + i - 16);
    b = read8(p + i - 8);
  }
  return mum(hash_k1 ^ n, mum(a ^ hash_k1, b ^ seed));
}

}  // namespace sluice::keyed_detail
