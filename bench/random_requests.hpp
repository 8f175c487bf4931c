// Random requests for differential checks of step functions (trace_digest):
// policies of every magnitude, instants anywhere in int64 (forwards by about
// the emission interval, sometimes the same, backwards, or a huge jump),
// costs in and out of range, and states fresh, arbitrary or on the edge of
// what decide() can reach. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <random>

#include "sluice/core/gcra.hpp"
#include "sluice/core/token_bucket.hpp"

namespace sluice_bench::random_requests {

using sluice::tick;
using sluice::detail::i128;
using sluice::detail::i64_max;
using sluice::detail::i64_min;

inline constexpr std::int64_t q_max = sluice::max_quantity;  // 2^62

inline std::mt19937_64 rng;

inline std::uint64_t bits() { return rng(); }
inline std::int64_t between(std::int64_t lo, std::int64_t hi) {  // inclusive
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}
inline bool chance(int percent) { return between(1, 100) <= percent; }

/// A positive quantity in [1, 2^62], spread over every magnitude, with
/// powers of two and their neighbours, 1 and 2^62 well represented.
inline std::int64_t quantity() {
  switch (between(0, 5)) {
    case 0:
      return between(1, 10);
    case 1: {
      const std::int64_t p = std::int64_t{1} << between(0, 62);
      const std::int64_t v = p + between(-1, 1);
      return v < 1 ? 1 : (v > q_max ? q_max : v);
    }
    case 2:
      return q_max - between(0, 3);
    case 3:
      return between(1, 1'000'000'000);
    default: {
      const int width = static_cast<int>(between(1, 62));
      const std::int64_t v = static_cast<std::int64_t>(bits() >> (64 - width));
      return v < 1 ? 1 : v;
    }
  }
}

inline std::int64_t a_limit() { return chance(5) ? 0 : quantity(); }

inline std::int64_t add_sat(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? i64_max : i64_min;
  return r;
}

/// The first instant of a trace: anywhere, often near 0 or a clock's values.
inline tick first_instant() {
  switch (between(0, 4)) {
    case 0:
      return 0;
    case 1:
      return between(0, 1'000'000'000'000'000);  // a steady clock in ns
    case 2:
      return static_cast<std::int64_t>(bits());
    case 3:
      return i64_max - between(0, 1'000'000);
    default:
      return i64_min + between(0, 1'000'000);
  }
}

/// The next instant: mostly forward by about the emission interval W/L,
/// sometimes the same, backwards, or a huge jump.
inline tick next_instant(tick now, std::int64_t limit, std::int64_t window) {
  const std::int64_t interval = limit == 0 ? window : (window / limit > 0 ? window / limit : 1);
  switch (between(0, 9)) {
    case 0:
      return now;
    case 1:
      return add_sat(now, -between(0, interval <= i64_max / 2 ? interval * 2 : i64_max));
    case 2:
      return add_sat(now, static_cast<std::int64_t>(bits() >> between(1, 63)));
    case 3:
      return add_sat(now, -static_cast<std::int64_t>(bits() >> between(1, 63)));
    case 4:
      return add_sat(now, between(0, 3));
    default:
      return add_sat(now, between(0, interval < i64_max / 3 ? interval * 3 : i64_max));
  }
}

inline std::int64_t a_cost(std::int64_t burst) {
  switch (between(0, 9)) {
    case 0:
      return between(-2, 0);
    case 1:
      return add_sat(burst, between(0, 2));
    case 2:
      return between(1, burst);
    case 3:
      return chance(50) ? i64_max : i64_min;
    default:
      return 1;
  }
}

/// A state a store might hold: fresh, or arbitrary but within the range the
/// step functions' 128-bit arithmetic is written for (|u| ≤ 2^126).
inline sluice::gcra::state a_gcra_state(const sluice::gcra& p, tick now) {
  sluice::gcra::state s;
  if (chance(60)) return s;
  if (chance(25)) {  // on the edge of what decide() can reach: b − now·L = S·W + {−2..2}
    s.last = now;
    s.u = static_cast<i128>(now) * p.limit().limit + p.tolerance() + between(-2, 2);
    return s;
  }
  s.u = static_cast<i128>(static_cast<std::int64_t>(bits())) * static_cast<std::int64_t>(bits() >> 2);
  s.last = chance(30) ? i64_min : static_cast<std::int64_t>(bits());
  return s;
}
inline sluice::token_bucket::state a_bucket_state(i128 capacity, tick now) {
  sluice::token_bucket::state s;
  if (chance(60)) return s;
  if (chance(25)) {  // on the edge of what decide() can reach: spent = S·W + {−2..2}
    s.last = now;
    s.spent = capacity + between(-2, 2);
    return s;
  }
  const auto f = static_cast<std::int64_t>(bits() >> 1);
  s.spent = chance(80) ? capacity / 1000 * (f % 1001) : static_cast<i128>(f) * static_cast<std::int64_t>(bits() >> 3);
  s.last = chance(30) ? i64_min : static_cast<std::int64_t>(bits());
  return s;
}

/// A limit L per W and a burst S: half the time any magnitudes, half the
/// time the kind people configure with a nanosecond clock (L up to 10^6, W
/// from a millisecond to a day, S up to 10^4).
inline void a_policy(sluice::rate& r, std::int64_t& burst) {
  if (chance(50)) {
    r = {a_limit(), quantity()};
    burst = quantity();
    return;
  }
  constexpr std::int64_t windows[] = {1'000'000, 1'000'000'000, 60'000'000'000, 3'600'000'000'000, 86'400'000'000'000};
  r = {chance(3) ? 0 : between(1, chance(50) ? 100 : 1'000'000), windows[between(0, 4)]};
  burst = chance(30) ? (r.limit > 0 ? r.limit : 1) : between(1, 10'000);
}

}  // namespace sluice_bench::random_requests
