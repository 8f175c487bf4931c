// Private to sluice::core: a receipt's fields, for the algorithms' own
// receipts and refunds (each in src/<name>.cpp) and the composites'
// (src/core/refund.cpp). The rules are in refund.hpp; the reasoning for the
// token bucket and GCRA is here, beside the rule they share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/detail/receipt_fields.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/refund.hpp"

namespace sluice::detail {

/// The only way into a receipt's fields (refund.hpp keeps them private).
struct receipt_access {
  static algorithm& algo(receipt& r) noexcept { return r.algo_; }
  static tick& at(receipt& r) noexcept { return r.at_; }
  static std::int64_t& cost(receipt& r) noexcept { return r.cost_; }
  static std::int64_t& key(receipt& r) noexcept { return r.key_; }
  static i128& before(receipt& r) noexcept { return r.before_; }
  static i128& after(receipt& r) noexcept { return r.after_; }
  static std::int64_t& p1(receipt& r) noexcept { return r.p1_; }
  static std::int64_t& p2(receipt& r) noexcept { return r.p2_; }
  static std::int64_t& p3(receipt& r) noexcept { return r.p3_; }
  static std::int32_t& part(receipt& r) noexcept { return r.part_; }
  static std::vector<receipt>& parts(receipt& r) noexcept { return r.parts_; }
  static const i128& before(const receipt& r) noexcept { return r.before_; }
  static const i128& after(const receipt& r) noexcept { return r.after_; }
  static tick at(const receipt& r) noexcept { return r.at_; }
  static std::int64_t cost(const receipt& r) noexcept { return r.cost_; }
  static std::int64_t key(const receipt& r) noexcept { return r.key_; }
  static algorithm algo(const receipt& r) noexcept { return r.algo_; }
  static receipt_fields fields(const receipt& r) noexcept {
    return {r.algo_, r.at_, r.cost_, r.key_, r.before_, r.after_, r.p1_, r.p2_, r.p3_, r.part_};
  }
};

/// A policy's parameters as a receipt records them (L or N; W; S, Q, N or
/// origin; for a composite the number of parts), checked on refund: a
/// receipt from another policy refunds nothing.
struct receipt_stamp {
  algorithm algo;
  std::int64_t p1 = 0;
  std::int64_t p2 = 0;
  std::int64_t p3 = 0;
};

/// The index of alternative P in any_policy.
template <typename P, std::size_t I = 0>
constexpr std::size_t alternative_index() noexcept {
  if constexpr (std::is_same_v<std::variant_alternative_t<I, any_policy>, P>) {
    return I;
  } else {
    return alternative_index<P, I + 1>();
  }
}

/// The stamp of policy `p` of algorithm P: its algorithm and its
/// parameters in its description's order (portable.hpp), 0 past them.
template <typename P>
receipt_stamp stamp_of(const P& p) noexcept {
  static_assert(portable::of<P>::params.size() <= 3, "a receipt holds three parameters");
  std::int64_t v[3] = {};
  std::size_t i = 0;
  for (const auto& param : portable::of<P>::params) v[i++] = param.get(p);
  return {static_cast<algorithm>(alternative_index<P>()), v[0], v[1], v[2]};
}

/// A receipt stamped with `st`, for an admit of `cost` at `at`.
inline receipt new_receipt(const receipt_stamp& st, tick at, std::int64_t cost) noexcept {
  using ra = receipt_access;
  receipt r;
  ra::algo(r) = st.algo;
  ra::p1(r) = st.p1;
  ra::p2(r) = st.p2;
  ra::p3(r) = st.p3;
  ra::at(r) = at;
  ra::cost(r) = cost;
  return r;
}

/// The receipt of a state of one quantity that a refund moves back (a
/// GCRA's u, a token bucket's TAT, a leaky queue's release R) and its
/// `last`: the quantity before the step, `before`, read on the state before
/// it...
template <typename P>
receipt one_value_receipt(const P& p, const typename P::state& s, tick now, std::int64_t cost, i128 before) noexcept {
  receipt r = new_receipt(stamp_of(p), max64(now, s.last), cost);
  receipt_access::before(r) = before;
  return r;
}
/// ...and completed with the quantity after it, `after`, and the state's
/// `last`.
template <typename State>
void one_value_receipt_after(receipt& r, const State& s, i128 after) noexcept {
  receipt_access::after(r) = after;
  receipt_access::at(r) = s.last;
}

/// Whether `r` is not empty and was stamped with `st`.
inline bool matches(receipt& r, const receipt_stamp& st) noexcept {
  using ra = receipt_access;
  return !r.empty() && ra::algo(r) == st.algo && ra::p1(r) == st.p1 && ra::p2(r) == st.p2 && ra::p3(r) == st.p3;
}

/// The token bucket's and GCRA's rule on the theoretical arrival time u (in
/// 1/L tick; a debt of max(0, u − t·L) in 1/W token at t), given the latest
/// admit's instant `last`. Returns the new u, or `u` itself for no refund.
///
/// Why it is safe. Let K be the admits not refunded and mp(K) the arrival
/// time a GCRA would have after exactly K, in time order:
/// mp(K) = max over i of (t_i·L + W·Σ_{j ≥ i} c_j). Every step keeps the
/// invariant u ≥ mp(K) (an admit at t ≥ every t_i adds the same c·W to both
/// sides, at least), and u ≥ mp(K) is exactly what makes every admit of the
/// real GCRA conform with K — so K plus any later admit is a trace a fresh
/// limiter admits in full. Refunding r (at t_r, cost c) must keep
/// u' ≥ mp(K \ {r}):
/// - r still the latest admit (u = u_after, last = t_r): u' = u_before, the
///   state before r, which bounded mp of the admits before r (and anything
///   at t_r after r added to u, so there is none left).
/// - otherwise u' = u − ρ with ρ = c·W − L·(last − t_r): every later term of
///   mp is at most last·L + (their units) ≤ u − ρ, and the earlier ones drop
///   by c·W ≥ ρ.
inline i128 refunded_tat(i128 u, tick last, const receipt& r, std::int64_t limit, std::int64_t window) noexcept {
  using ra = receipt_access;
  if (u == ra::after(r) && last == ra::at(r)) return ra::before(r);
  const i128 rho =
      static_cast<i128>(ra::cost(r)) * window - static_cast<i128>(limit) * (static_cast<i128>(last) - ra::at(r));
  if (rho <= 0) return u;
  return u - rho;
}

/// The whole tokens in `gained` (1/W token), at most `cost`.
inline std::int64_t whole_units(i128 gained, std::int64_t window, std::int64_t cost) noexcept {
  if (gained <= 0) return 0;
  const i128 units = gained / window;
  return units > cost ? cost : static_cast<std::int64_t>(units);
}

}  // namespace sluice::detail
