// Random configurations at the edges of the Redis store's exact range, and
// adaptive traces that reach every rule: starts at 0, at ±2^40, in ns since
// 1970, at ±2^53, at 32-bit limb edges and near INT64_MIN/MAX; steps of 0,
// one emission interval, one window, long idle gaps up to 2^62, limb
// crossings, 2^32 windows, clock steps back; and boundary probes that repeat
// a denied cost at retry − 1, retry and retry + 1 (the core's own answer
// guides them). Ported from research/redis-lab/harness.py.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "sluice/sluice.hpp"

namespace sluice::redis_test {

__extension__ typedef __int128 i128;
using rng_t = std::mt19937_64;

inline constexpr std::int64_t p52 = std::int64_t{1} << 52;
inline constexpr std::int64_t p53 = std::int64_t{1} << 53;
inline constexpr std::int64_t p32 = std::int64_t{1} << 32;

inline std::int64_t uniform(rng_t& r, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(r);
}
/// 1 .. 2^(random bits in [lo_bits, hi_bits]).
inline std::int64_t log_uniform(rng_t& r, int lo_bits, int hi_bits) {
  const int b = static_cast<int>(uniform(r, lo_bits, hi_bits));
  return uniform(r, 1, std::int64_t{1} << b);
}

inline tick clamp_tick(i128 v) {
  if (v > std::numeric_limits<tick>::max()) return std::numeric_limits<tick>::max();
  if (v < std::numeric_limits<tick>::min()) return std::numeric_limits<tick>::min();
  return static_cast<tick>(v);
}

/// A start that stresses limbs and the 2^53 edge.
inline tick pick_start(rng_t& r, i128 span) {
  const std::int64_t s = static_cast<std::int64_t>(std::min<i128>(span, std::int64_t{1} << 55));
  switch (uniform(r, 0, 8)) {
    case 0:
      return 0;
    case 1:
      return uniform(r, -(std::int64_t{1} << 40), std::int64_t{1} << 40);
    case 2:
      return 1'800'000'000'000'000'000 + uniform(r, 0, 1'000'000'000'000);
    case 3:
      return clamp_tick(static_cast<i128>(p53) + uniform(r, -s, s));
    case 4:
      return clamp_tick(-static_cast<i128>(p53) + uniform(r, -s, s));
    case 5:
      return clamp_tick(static_cast<i128>(uniform(r, -(std::int64_t{1} << 31), std::int64_t{1} << 31)) * p32 -
                        uniform(r, 0, s));
    case 6:
      return clamp_tick(static_cast<i128>(std::numeric_limits<tick>::max()) - uniform(r, 0, s) * 200);
    case 7:
      return clamp_tick(static_cast<i128>(std::numeric_limits<tick>::min()) + uniform(r, 0, s) * 200);
    default:
      return uniform(r, std::numeric_limits<tick>::min() / 2, std::numeric_limits<tick>::max() / 2);
  }
}

/// One request of a trace, with the core's answer to it.
struct step {
  tick t = 0;
  std::int64_t cost = 1;
  decision want;
};

/// An adaptive trace of `n` requests through `p`, decided by the core as it
/// goes. `unit` is the emission interval (or W), `big` a long step.
inline std::vector<step> walk(rng_t& r, const any_policy& p, int n, tick unit, tick big,
                              const std::function<std::int64_t(rng_t&)>& costs, bool monotone = false) {
  unit = std::max<tick>(unit, 1);
  big = std::max<tick>(big, 1);
  tick t = pick_start(r, static_cast<i128>(std::max(unit, big)) * 4);
  any_state s = fresh_state(p);
  std::vector<step> out;
  for (int i = 0; i < n; ++i) {
    const std::int64_t ch = uniform(r, 0, 99);
    i128 d = 0;
    const bool probe = ch >= 70 && !out.empty() && !out.back().want.allowed;
    if (ch < 25) {
      d = 0;
    } else if (ch < 40) {
      d = uniform(r, 1, unit);
    } else if (ch < 50) {
      d = unit;
    } else if (ch < 58) {
      d = uniform(r, 0, big);
    } else if (ch < 64) {
      d = monotone ? 0 : -uniform(r, 1, unit);
    } else if (ch < 67) {
      d = log_uniform(r, 1, 62);
    } else if (ch < 69) {
      d = p32 - (static_cast<std::int64_t>(static_cast<std::uint64_t>(t) & 0xFFFFFFFFULL));
    } else if (ch < 70) {
      d = static_cast<i128>(unit) * p32 * uniform(r, 1, 2);
    } else if (probe && out.back().want.retry_after != never) {
      const tick ra = out.back().want.retry_after;
      const std::int64_t pick = uniform(r, 0, 4);
      d = ra > 0 ? static_cast<i128>(ra) + (pick < 2 ? -1 : pick < 4 ? 0 : 1) : 0;
    } else {
      d = uniform(r, 0, unit);
    }
    t = clamp_tick(static_cast<i128>(t) + d);
    const std::int64_t c = probe ? out.back().cost : costs(r);
    step st;
    st.t = t;
    st.cost = c;
    st.want = decide(p, s, t, c);
    out.push_back(st);
  }
  return out;
}

/// A drawn configuration: the policy, its emission interval and a long step,
/// and how its costs are drawn.
struct drawn {
  any_policy policy{always_allow{}};
  tick unit = 1;
  tick big = 1;
  std::function<std::int64_t(rng_t&)> costs;
};

/// Costs around a capacity: mostly 1, some up to it, it, and past it.
inline std::function<std::int64_t(rng_t&)> costs_around(std::int64_t cap) {
  cap = std::max<std::int64_t>(cap, 1);
  return [cap](rng_t& r) -> std::int64_t {
    const std::int64_t x = uniform(r, 0, 9);
    if (x < 6) return 1;
    if (x < 8) return uniform(r, 1, cap);
    if (x < 9) return cap;
    return cap + uniform(r, 1, 3);
  };
}

/// The algorithms the generator draws.
enum class gen_algo {
  gcra,
  token_bucket,
  leaky_queue,
  fixed_window,
  sliding_counter,
  sliding_log,
  sliding_buckets,
  quota
};

inline std::string name_of(gen_algo a) {
  switch (a) {
    case gen_algo::gcra:
      return "gcra";
    case gen_algo::token_bucket:
      return "token-bucket";
    case gen_algo::leaky_queue:
      return "leaky-queue";
    case gen_algo::fixed_window:
      return "fixed-window";
    case gen_algo::sliding_counter:
      return "sliding-counter";
    case gen_algo::sliding_log:
      return "sliding-log";
    case gen_algo::sliding_buckets:
      return "sliding-buckets";
    case gen_algo::quota:
      return "quota";
  }
  return "?";
}

/// Draws a configuration of `a` in regime `regime` (0 bar, 1 tiny, 2 big,
/// 3 edge, 4 tie, 5 near); `in_range` says whether the Redis store takes it
/// (the draw repeats until it does).
inline drawn draw(rng_t& r, gen_algo a, int regime, const std::function<bool(const any_policy&)>& in_range) {
  for (;;) {
    std::int64_t L = 1;
    tick W = 1;
    std::int64_t S = 1;
    const bool bucketish = a == gen_algo::gcra || a == gen_algo::token_bucket || a == gen_algo::leaky_queue;
    switch (bucketish ? regime % 4 : regime) {
      case 0:
        L = uniform(r, bucketish ? 0 : 0, 12);
        W = std::vector<tick>{1, 2, 5, 10, 60}[static_cast<std::size_t>(uniform(r, 0, 4))] * 1'000'000'000;
        S = uniform(r, 1, L + 3);
        break;
      case 1:
        L = uniform(r, 1, 10);
        W = uniform(r, 1, 10);
        S = uniform(r, 1, 10);
        break;
      case 2:
        if (bucketish) {
          L = log_uniform(r, 1, 62);
          W = log_uniform(r, 1, 62);
          S = log_uniform(r, 0, 45);
        } else {
          L = log_uniform(r, 1, 52);
          W = log_uniform(r, 1, 52);
        }
        break;
      case 3:
        if (bucketish) {
          if (uniform(r, 0, 1) == 0) {
            L = p52 - uniform(r, 0, 1000);
            W = uniform(r, p52 / 4, p52);
            S = uniform(r, 1, 1 << 20);
          } else {
            L = uniform(r, 1, 4);
            W = (p52 - 1) / uniform(r, 1, 3) - uniform(r, 0, 1000);
            S = uniform(r, 1, 3);
          }
        } else {
          L = p53 - 1 - uniform(r, 0, 1000);
          W = p53 - 1 - uniform(r, 0, 1000);
        }
        break;
      case 4:  // powers of two: prev·(W − o) == R·W exactly
        L = std::int64_t{1} << uniform(r, 1, 40);
        W = std::int64_t{1} << uniform(r, 20, 52);
        break;
      default:  // near-ties that doubles would round wrongly
        L = uniform(r, std::int64_t{1} << 30, std::int64_t{1} << 45);
        W = uniform(r, std::int64_t{1} << 50, p53 - 1);
        break;
    }
    const rate rt{L, W};
    result<any_policy> p = error{"", ""};
    switch (a) {
      case gen_algo::gcra:
        p = any_policy{gcra::make(rt, S).value()};
        break;
      case gen_algo::token_bucket:
        p = any_policy{token_bucket::make(rt, S).value()};
        break;
      case gen_algo::leaky_queue:
        p = any_policy{leaky_queue::make(rt, std::min<std::int64_t>(S, regime % 4 == 0 ? 8 : S)).value()};
        break;
      case gen_algo::fixed_window: {
        const tick origin =
            uniform(r, 0, 3) == 0 ? uniform(r, std::numeric_limits<tick>::min(), std::numeric_limits<tick>::max()) : 0;
        p = any_policy{fixed_window::make(rt, origin).value()};
        break;
      }
      case gen_algo::sliding_counter:
        p = any_policy{sliding_counter::make(rt).value()};
        break;
      case gen_algo::sliding_log:
        p = any_policy{sliding_log::make(rt).value()};
        break;
      case gen_algo::sliding_buckets: {
        const std::int64_t n = uniform(r, 0, 9) == 0 ? uniform(r, 100, 400) : uniform(r, 1, 12);
        const tick w = std::max<tick>(n, W - W % n);
        if (w >= p53) continue;
        p = any_policy{sliding_buckets::make(rate{L, w}, n).value()};
        W = w;
        break;
      }
      case gen_algo::quota: {
        const std::int64_t n = regime == 3 ? p53 - 1 - uniform(r, 0, 1000) : regime == 2 ? log_uniform(r, 1, 52) : L;
        p = any_policy{quota::make(n).value()};
        L = n;
        break;
      }
    }
    if (!in_range(p.value())) continue;
    drawn d;
    d.policy = p.value();
    if (bucketish) {
      d.unit = L > 0 ? std::max<tick>(1, W / L) : W;
      d.big = L > 0 ? static_cast<tick>(std::min<i128>(static_cast<i128>(S) * W / L, std::int64_t{1} << 60)) : W;
      d.costs = costs_around(a == gen_algo::leaky_queue ? std::get<leaky_queue>(d.policy).queue() : S);
    } else {
      d.unit = W;
      d.big = W;
      d.costs = costs_around(L);
    }
    return d;
  }
}

}  // namespace sluice::redis_test
