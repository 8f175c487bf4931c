// What several algorithms' Redis leaves share (portable.hpp: `redis_plan`
// and `redis_args`): the bounds a plan checks against what the Lua library's
// numbers hold exactly (below 2^53; a mixed number's quotient below 2^52),
// a count's mode, and the leaves that several algorithms share: a rate with
// a burst's (GCRA, token bucket), a count in a window's plan (portable.hpp:
// burst_leaf, window_leaf; each algorithm's source instantiates its own).
// The other leaves are in their algorithm's source.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "sluice/core/detail/arith.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/report_bound.hpp"
#include "sluice/core/result.hpp"

namespace sluice::detail::redis_leaf {

inline constexpr i128 p52 = i128{1} << 52;
inline constexpr i128 p53 = i128{1} << 53;

inline std::string text(i128 v) { return std::to_string(static_cast<long long>(v)); }

/// "must be below 2^53 (9007199254740992) for the Redis store (got N)".
inline error bound_error(std::string field, const std::string& what, const std::string& bound, i128 got) {
  return error{std::move(field), what + " must be " + bound + " for the Redis store, whose Lua numbers are exact " +
                                     "only below 2^53 (got " + text(got) + ")"};
}

inline std::optional<error> below53(const char* field, i128 v) {
  if (v >= p53) return bound_error(field, field, "below 2^53 (9007199254740992)", v);
  return std::nullopt;
}

/// A count in a window: L and W below 2^53.
inline std::optional<error> window_plan(rate r) {
  if (auto e = below53("limit", r.limit)) return e;
  return below53("window", r.window);
}

/// A rate with a capacity C (a burst S, a queue Q): C·W and W as mixed
/// numbers modulo L ≥ 1 with the tolerance below 2^52 ticks and L at most
/// 2^52, and the report bound K (report_debt_bound over `normal`, the most
/// debt an admit leaves). A limit of 0 never admits, but keeps what a
/// reconfiguration carries to it (a deficit of up to C·W, reconfigure.hpp):
/// C·W below 2^52.
inline std::optional<error> capacity_plan(rate r, std::int64_t capacity, const char* field, i128 normal,
                                          portable::redis_constants& k) {
  const i128 cw = static_cast<i128>(capacity) * r.window;
  if (r.limit == 0) {
    k.sq = p52 - 1;  // the bound the library checks a stored deficit against
    if (cw >= p52)
      return bound_error(field, std::string(field) + "·window (with a limit of 0)", "below 2^52 (4503599627370496)",
                         cw);
    return std::nullopt;
  }
  k.sq = cw / r.limit;
  k.sr = cw % r.limit;
  k.wq = r.window / r.limit;
  k.wr = r.window % r.limit;
  if (k.sq >= p52)
    return bound_error(field, std::string(field) + "·window/limit (the tolerance, in ticks)",
                       "below 2^52 (4503599627370496)", k.sq);
  if (r.limit > p52) return bound_error("limit", "limit", "at most 2^52 (4503599627370496)", r.limit);
  // K as a mixed number: kq < 2^52 whenever the checks above hold.
  const i128 bound = report_debt_bound(r.limit, normal);
  k.kq = bound / r.limit;
  k.kr = bound % r.limit;
  return std::nullopt;
}

/// A report's cost (mode 2) saturated just past the library's bound, so
/// every sum stays below 2^53 and the saturation is the core's.
constexpr i128 saturated(i128 v, i128 bound) noexcept { return v > bound + 1 ? bound + 1 : v; }

/// The mode a leaf's Lua step reads: 2 a report that charges, 1 a cost that
/// may be admitted, 0 neither.
constexpr int mode(bool charge, bool can) noexcept { return charge ? 2 : can ? 1 : 0; }

/// A count's request for a limit of `units` (mode 2: a report that
/// charges, 1: a cost that may be admitted, 0: neither), its mode written
/// first; the cost as it is sent (saturated past `bound` for a report).
inline i128 count_mode(std::int64_t units, i128 bound, const portable::redis_call& c,
                       portable::redis_numbers& out) noexcept {
  const bool charge = c.report && units > 0 && c.cost >= 1;
  const bool can = c.cost >= 1 && c.cost <= units;
  out.number(mode(charge, can));
  return charge ? saturated(c.cost, bound) : can ? c.cost : 0;
}

}  // namespace sluice::detail::redis_leaf

namespace sluice::portable {

template <typename P>
std::optional<error> burst_leaf<P>::redis_plan(const P& p, redis_constants& k) {
  return detail::redis_leaf::capacity_plan(p.limit(), p.burst(), "burst",
                                           static_cast<detail::i128>(p.burst()) * p.limit().window, k);
}

// cw = c·W, the cost's debt.
template <typename P>
void burst_leaf<P>::redis_args(const P& p, const redis_constants& k, const redis_call& c, redis_numbers& out) noexcept {
  using detail::i128;
  const rate r = p.limit();
  const std::int64_t l = r.limit;
  const bool charge = c.report && l > 0 && c.cost >= 1;
  const bool can = charge || (l > 0 && c.cost >= 1 && c.cost <= p.burst());
  i128 cw = can ? static_cast<i128>(c.cost) * r.window : 0;
  if (charge) cw = detail::redis_leaf::saturated(cw, k.kq * l + k.kr);
  out.number(detail::redis_leaf::mode(charge, can));
  out.number(l > 0 ? l : 1);
  out.number(can ? cw / l : 0);
  out.number(can ? cw % l : 0);
  out.number(k.sq);
  out.number(k.sr);
  out.number(k.kq);
  out.number(k.kr);
}

template <typename P>
std::optional<error> window_leaf<P>::redis_plan(const P& p, redis_constants&) {
  return detail::redis_leaf::window_plan(p.limit());
}

}  // namespace sluice::portable
