// Receipts (what an admit took) and refunds (giving it back without letting
// anything extra through). The rules, per algorithm, are in refund.hpp; the
// reasoning for the token bucket and GCRA is here.
#include "sluice/refund.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "detail/compose.hpp"
#include "sluice/detail/log_rebuild.hpp"
#include "sluice/detail/receipt_fields.hpp"

namespace sluice {

namespace detail {

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
  static receipt_fields fields(const receipt& r) noexcept {
    return {r.algo_, r.at_, r.cost_, r.key_, r.before_, r.after_, r.p1_, r.p2_, r.p3_, r.part_};
  }
};

receipt_fields fields_of(const receipt& r) noexcept { return receipt_access::fields(r); }

receipt receipt_of(const receipt_fields& f, std::vector<receipt> parts) {
  receipt r;
  receipt_access::algo(r) = f.algo;
  receipt_access::at(r) = f.at;
  receipt_access::cost(r) = f.cost;
  receipt_access::key(r) = f.key;
  receipt_access::before(r) = f.before;
  receipt_access::after(r) = f.after;
  receipt_access::p1(r) = f.p1;
  receipt_access::p2(r) = f.p2;
  receipt_access::p3(r) = f.p3;
  receipt_access::part(r) = f.part;
  receipt_access::parts(r) = std::move(parts);
  return r;
}

}  // namespace detail

namespace {

using detail::i128;
using ra = detail::receipt_access;

// ---- the policy's parameters, stamped into a receipt and checked on refund ----

void stamp(receipt& r, algorithm a, std::int64_t p1, std::int64_t p2, std::int64_t p3) noexcept {
  ra::algo(r) = a;
  ra::p1(r) = p1;
  ra::p2(r) = p2;
  ra::p3(r) = p3;
}

bool stamped(receipt& r, algorithm a, std::int64_t p1, std::int64_t p2, std::int64_t p3) noexcept {
  return !r.empty() && ra::algo(r) == a && ra::p1(r) == p1 && ra::p2(r) == p2 && ra::p3(r) == p3;
}

void stamp(receipt& r, const fixed_window& p) noexcept {
  stamp(r, algorithm::fixed_window, p.limit().limit, p.limit().window, p.origin());
}
void stamp(receipt& r, const sliding_log& p) noexcept {
  stamp(r, algorithm::sliding_log, p.limit().limit, p.limit().window, 0);
}
void stamp(receipt& r, const sliding_counter& p) noexcept {
  stamp(r, algorithm::sliding_counter, p.limit().limit, p.limit().window, 0);
}
void stamp(receipt& r, const sliding_buckets& p) noexcept {
  stamp(r, algorithm::sliding_buckets, p.limit().limit, p.limit().window, p.buckets());
}
void stamp(receipt& r, const token_bucket& p) noexcept {
  stamp(r, algorithm::token_bucket, p.limit().limit, p.limit().window, p.burst());
}
void stamp(receipt& r, const gcra& p) noexcept {
  stamp(r, algorithm::gcra, p.limit().limit, p.limit().window, p.burst());
}
void stamp(receipt& r, const leaky_queue& p) noexcept {
  stamp(r, algorithm::leaky_queue, p.limit().limit, p.limit().window, p.queue());
}
void stamp(receipt& r, const quota& p) noexcept { stamp(r, algorithm::quota, p.units(), 0, 0); }
void stamp(receipt& r, const concurrency& p) noexcept {
  stamp(r, algorithm::concurrency, p.units(), p.lease_length(), 0);
}
void stamp(receipt& r, const always_allow&) noexcept { stamp(r, algorithm::always_allow, 0, 0, 0); }
void stamp(receipt& r, const always_deny&) noexcept { stamp(r, algorithm::always_deny, 0, 0, 0); }
void stamp(receipt& r, const all_of& p) noexcept {
  stamp(r, algorithm::all_of, static_cast<std::int64_t>(p.parts().size()), 0, 0);
}
void stamp(receipt& r, const any_of& p) noexcept {
  stamp(r, algorithm::any_of, static_cast<std::int64_t>(p.parts().size()), 0, 0);
}

template <typename Policy>
bool matches(receipt& r, const Policy& p) noexcept {
  receipt probe;
  stamp(probe, p);
  return stamped(r, ra::algo(probe), ra::p1(probe), ra::p2(probe), ra::p3(probe));
}

/// The token bucket's state as a GCRA time, u = last·L + spent (in 1/L
/// tick): the debt at t ≥ last is max(0, u − t·L) in 1/W token.
i128 tat_of(const token_bucket& p, const token_bucket::state& s) noexcept {
  return static_cast<i128>(s.last) * p.limit().limit + s.spent;
}

// ---- before and after an admit: what a receipt records ----
//
// `before` runs on the state as it is before `decide`, `after` on the state
// it left behind, and only when the request was admitted.

template <typename Policy, typename State>
receipt before(const Policy& p, const State&, tick now, std::int64_t cost) noexcept {
  receipt r;
  stamp(r, p);
  ra::at(r) = now;
  ra::cost(r) = cost;
  return r;
}
receipt before(const token_bucket& p, const token_bucket::state& s, tick now, std::int64_t cost) noexcept {
  receipt r;
  stamp(r, p);
  ra::cost(r) = cost;
  ra::at(r) = detail::max64(now, s.last);
  ra::before(r) = tat_of(p, s);
  return r;
}
receipt before(const gcra& p, const gcra::state& s, tick now, std::int64_t cost) noexcept {
  receipt r;
  stamp(r, p);
  ra::cost(r) = cost;
  ra::at(r) = detail::max64(now, s.last);
  ra::before(r) = s.u;
  return r;
}
receipt before(const leaky_queue& p, const leaky_queue::state& s, tick now, std::int64_t cost) noexcept {
  receipt r;
  stamp(r, p);
  ra::cost(r) = cost;
  ra::at(r) = detail::max64(now, s.last);
  ra::before(r) = s.release;
  return r;
}

template <typename Policy, typename State>
void after(receipt&, const Policy&, const State&) noexcept {}
void after(receipt& r, const fixed_window&, const fixed_window::state& s) noexcept { ra::key(r) = s.window; }
void after(receipt& r, const sliding_log&, const sliding_log::state& s) noexcept { ra::at(r) = s.last(); }
void after(receipt& r, const sliding_counter&, const sliding_counter::state& s) noexcept {
  ra::key(r) = s.window;
  ra::at(r) = s.last;
}
void after(receipt& r, const sliding_buckets&, const sliding_buckets::state& s) noexcept { ra::key(r) = s.newest(); }
void after(receipt& r, const token_bucket& p, const token_bucket::state& s) noexcept {
  ra::after(r) = tat_of(p, s);
  ra::at(r) = s.last;
}
void after(receipt& r, const gcra&, const gcra::state& s) noexcept {
  ra::after(r) = s.u;
  ra::at(r) = s.last;
}
void after(receipt& r, const concurrency&, const concurrency::state& s) noexcept {
  // The lease just issued carries the scope's nonce (semantics.md, "Leases").
  ra::key(r) = static_cast<std::int64_t>(detail::lease_ctx.nonce);
  ra::at(r) = s.latest;
}
void after(receipt& r, const leaky_queue&, const leaky_queue::state& s) noexcept {
  ra::after(r) = s.release;
  ra::at(r) = s.last;
}

template <typename Policy, typename State>
admission admit_leaf(const Policy& p, State& s, tick now, std::int64_t cost) noexcept {
  admission out;
  receipt r = before(p, s, now, cost);
  out.result = decide(p, s, now, cost);
  if (out.result.allowed) {
    after(r, p, s);
    out.ticket = std::move(r);
  }
  return out;
}

// Composites: `before` is taken recursively once the composite has been
// evaluated and found to admit (an any_of records the part that will
// consume, read from the choices the evaluation recorded), `after`
// recursively once it has consumed.

receipt before_any(const any_policy& p, const any_state& s, tick now, std::int64_t cost, const std::int32_t* choices);
void after_any(receipt& r, const any_policy& p, const any_state& s);

receipt before(const all_of& p, const all_of_state& s, tick now, std::int64_t cost, const std::int32_t* choices) {
  receipt r;
  stamp(r, p);
  ra::at(r) = now;
  ra::cost(r) = cost;
  ra::parts(r).reserve(p.parts().size());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < p.parts().size(); ++i) {
    ra::parts(r).push_back(before_any(p.parts()[i], s.parts[i], now, cost, choices + offset));
    offset += detail::choices_of(p.parts()[i]);
  }
  return r;
}
receipt before(const any_of& p, const any_of_state& s, tick now, std::int64_t cost, const std::int32_t* choices) {
  receipt r;
  stamp(r, p);
  ra::at(r) = now;
  ra::cost(r) = cost;
  const auto k = static_cast<std::size_t>(choices[0]);
  ra::part(r) = choices[0];
  ra::parts(r).push_back(before_any(p.parts()[k], s.parts[k], now, cost, choices + detail::choice_offset(p, k)));
  return r;
}
void after(receipt& r, const all_of& p, const all_of_state& s) {
  for (std::size_t i = 0; i < p.parts().size(); ++i) after_any(ra::parts(r)[i], p.parts()[i], s.parts[i]);
}
void after(receipt& r, const any_of& p, const any_of_state& s) {
  const auto k = static_cast<std::size_t>(ra::part(r));
  after_any(ra::parts(r)[0], p.parts()[k], s.parts[k]);
}

receipt before_any(const any_policy& p, const any_state& s, tick now, std::int64_t cost, const std::int32_t* choices) {
  return std::visit(
      [&](const auto& pol) -> receipt {
        using policy_t = std::decay_t<decltype(pol)>;
        const auto& st = *std::get_if<typename policy_t::state>(&s);
        if constexpr (std::is_same_v<policy_t, all_of> || std::is_same_v<policy_t, any_of>) {
          return before(pol, st, now, cost, choices);
        } else {
          return before(pol, st, now, cost);
        }
      },
      p);
}
void after_any(receipt& r, const any_policy& p, const any_state& s) {
  std::visit(
      [&](const auto& pol) {
        using policy_t = std::decay_t<decltype(pol)>;
        after(r, pol, *std::get_if<typename policy_t::state>(&s));
      },
      p);
}

/// A composite's admit: one evaluation (which also says which part of each
/// any_of will consume), then the receipt, the consumption and what it left.
template <typename Policy, typename State>
admission admit_composite(const Policy& p, State& s, tick now, std::int64_t cost) {
  admission out;
  detail::choice_buffer choices(p.choices());
  const detail::outcome o = detail::evaluate(p, s, now, cost, choices.data(), false);
  out.result = o.d;
  if (!o.d.allowed) return out;
  receipt r = before(p, s, now, cost, choices.data());
  detail::commit(p, s, now, cost, choices.data());
  after(r, p, s);
  out.ticket = std::move(r);
  return out;
}

// ---- refunds ----

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
i128 refunded_tat(i128 u, tick last, const receipt& r, std::int64_t limit, std::int64_t window) noexcept {
  if (u == ra::after(r) && last == ra::at(r)) return ra::before(r);
  const i128 rho =
      static_cast<i128>(ra::cost(r)) * window - static_cast<i128>(limit) * (static_cast<i128>(last) - ra::at(r));
  if (rho <= 0) return u;
  return u - rho;
}

/// The whole tokens in `gained` (1/W token), at most `cost`.
std::int64_t whole_units(i128 gained, std::int64_t window, std::int64_t cost) noexcept {
  if (gained <= 0) return 0;
  const i128 units = gained / window;
  return units > cost ? cost : static_cast<std::int64_t>(units);
}

}  // namespace

// ---- admit ----

admission admit(const fixed_window& p, fixed_window::state& s, tick now, std::int64_t cost) noexcept {
  return admit_leaf(p, s, now, cost);
}
admission admit(const sliding_log& p, sliding_log::state& s, tick now, std::int64_t cost) noexcept {
  return admit_leaf(p, s, now, cost);
}
admission admit(const sliding_counter& p, sliding_counter::state& s, tick now, std::int64_t cost) noexcept {
  return admit_leaf(p, s, now, cost);
}
admission admit(const sliding_buckets& p, sliding_buckets::state& s, tick now, std::int64_t cost) noexcept {
  return admit_leaf(p, s, now, cost);
}
admission admit(const token_bucket& p, token_bucket::state& s, tick now, std::int64_t cost) noexcept {
  return admit_leaf(p, s, now, cost);
}
admission admit(const gcra& p, gcra::state& s, tick now, std::int64_t cost) noexcept {
  return admit_leaf(p, s, now, cost);
}
admission admit(const leaky_queue& p, leaky_queue::state& s, tick now, std::int64_t cost) noexcept {
  return admit_leaf(p, s, now, cost);
}
admission admit(const quota& p, quota::state& s, tick now, std::int64_t cost) noexcept {
  return admit_leaf(p, s, now, cost);
}
admission admit(const always_allow& p, always_allow::state& s, tick now, std::int64_t cost) noexcept {
  return admit_leaf(p, s, now, cost);
}
admission admit(const concurrency& p, concurrency::state& s, tick now, std::int64_t cost) noexcept {
  return admit_leaf(p, s, now, cost);
}
admission admit(const always_deny& p, always_deny::state& s, tick now, std::int64_t cost) noexcept {
  return admit_leaf(p, s, now, cost);
}
admission admit(const all_of& p, all_of_state& s, tick now, std::int64_t cost) {
  return admit_composite(p, s, now, cost);
}
admission admit(const any_of& p, any_of_state& s, tick now, std::int64_t cost) {
  return admit_composite(p, s, now, cost);
}
admission admit(const any_policy& p, any_state& s, tick now, std::int64_t cost) {
  return std::visit(
      [&](const auto& pol) -> admission {
        using policy_t = std::decay_t<decltype(pol)>;
        return admit(pol, *std::get_if<typename policy_t::state>(&s), now, cost);
      },
      p);
}

// ---- refund ----

std::int64_t refund(const fixed_window& p, fixed_window::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  if (!matches(r, p) || s.count <= 0 || s.window != ra::key(r)) return 0;
  const std::int64_t back = std::min(ra::cost(r), s.count);
  s.count -= back;
  return back;
}

std::int64_t refund(const sliding_log& p, sliding_log::state& s, receipt&& rc, tick /*now*/) {
  receipt r(std::move(rc));
  if (!matches(r, p)) return 0;
  std::vector<sliding_log::entry> entries;
  entries.reserve(s.size());
  std::int64_t back = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    sliding_log::entry e = s.at(i);
    if (e.at == ra::at(r) && back == 0) {
      back = std::min(ra::cost(r), e.units);
      e.units -= back;
    }
    if (e.units > 0) entries.push_back(e);
  }
  if (back == 0) return 0;
  s = detail::rebuild_log(p.limit().window, entries);
  return back;
}

std::int64_t refund(const sliding_counter& p, sliding_counter::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  if (!matches(r, p)) return 0;
  std::int64_t back = 0;
  if (s.window == ra::key(r)) {
    back = std::min(ra::cost(r), s.curr);
    s.curr -= back;
  } else if (static_cast<i128>(s.window) == static_cast<i128>(ra::key(r)) + 1) {
    back = std::min(ra::cost(r), s.prev);
    s.prev -= back;
  }
  return back < 0 ? 0 : back;
}

std::int64_t refund(const sliding_buckets& p, sliding_buckets::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  if (!matches(r, p)) return 0;
  return p.give_back(s, ra::key(r), ra::cost(r));
}

std::int64_t refund(const token_bucket& p, token_bucket::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  const rate rt = p.limit();
  if (!matches(r, p) || rt.limit == 0) return 0;
  const i128 lastl = static_cast<i128>(s.last) * rt.limit;
  const i128 u = tat_of(p, s);
  const i128 next = std::max(refunded_tat(u, s.last, r, rt.limit, rt.window), lastl);  // spent ≥ 0
  if (next >= u) return 0;
  s.spent = next - lastl;
  return whole_units(u - next, rt.window, ra::cost(r));
}

std::int64_t refund(const gcra& p, gcra::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  const rate rt = p.limit();
  if (!matches(r, p) || rt.limit == 0) return 0;
  const i128 next = refunded_tat(s.u, s.last, r, rt.limit, rt.window);
  if (next >= s.u) return 0;
  // Report as the token bucket does: below last·L the bucket is full anyway.
  const i128 floor_u = std::max(next, static_cast<i128>(s.last) * rt.limit);
  const i128 given = s.u - floor_u;
  s.u = next;
  return whole_units(given, rt.window, ra::cost(r));
}

std::int64_t refund(const leaky_queue& p, leaky_queue::state& s, receipt&& rc, tick now) noexcept {
  receipt r(std::move(rc));
  const rate rt = p.limit();
  if (!matches(r, p) || rt.limit == 0 || s.release != ra::after(r)) return 0;
  const i128 el = static_cast<i128>(detail::max64(now, s.last)) * rt.limit;
  if (s.release <= el) return 0;  // every unit of it has left (or leaves now)
  // Units of this admit leave at R − i·W, i = 0 … c − 1; those after now can go.
  const i128 undue = detail::ceil_div(s.release - el, rt.window);
  const std::int64_t back = undue >= ra::cost(r) ? ra::cost(r) : static_cast<std::int64_t>(undue);
  s.release = back == ra::cost(r) ? ra::before(r) : s.release - static_cast<i128>(back) * rt.window;
  return back;
}

std::int64_t refund(const quota& p, quota::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  if (!matches(r, p)) return 0;
  const std::int64_t back = std::min(ra::cost(r), s.used);
  s.used -= back;
  return back < 0 ? 0 : back;
}

std::int64_t refund(const concurrency& p, concurrency::state& s, receipt&& rc, tick now) noexcept {
  receipt r(std::move(rc));
  // The lease carries over every reconfiguration, so its receipt does too:
  // only the algorithm must match.
  if (r.empty() || ra::algo(r) != algorithm::concurrency) return 0;
  return p.release(s, now, static_cast<std::uint64_t>(ra::key(r)));
}

std::int64_t refund(const always_allow&, always_allow::state&, receipt&& rc, tick) noexcept {
  receipt r(std::move(rc));
  return 0;
}

std::int64_t refund(const always_deny&, always_deny::state&, receipt&& rc, tick) noexcept {
  receipt r(std::move(rc));
  return 0;
}

std::int64_t refund(const all_of& p, all_of_state& s, receipt&& rc, tick now) {
  receipt r(std::move(rc));
  if (!matches(r, p) || ra::parts(r).size() != p.parts().size() || s.parts.size() != p.parts().size()) return 0;
  std::int64_t fewest = ra::cost(r);
  for (std::size_t i = 0; i < p.parts().size(); ++i)
    fewest = std::min(fewest, refund(p.parts()[i], s.parts[i], std::move(ra::parts(r)[i]), now));
  return fewest;
}

std::int64_t refund(const any_of& p, any_of_state& s, receipt&& rc, tick now) {
  receipt r(std::move(rc));
  if (!matches(r, p) || ra::parts(r).size() != 1 || ra::part(r) < 0 ||
      static_cast<std::size_t>(ra::part(r)) >= p.parts().size() || s.parts.size() != p.parts().size())
    return 0;
  const auto k = static_cast<std::size_t>(ra::part(r));
  return refund(p.parts()[k], s.parts[k], std::move(ra::parts(r)[0]), now);
}

std::int64_t refund(const any_policy& p, any_state& s, receipt&& rc, tick now) {
  receipt r(std::move(rc));
  if (r.empty() || r.algo() != algorithm_of(p) || s.index() != p.index()) return 0;
  return std::visit(
      [&](const auto& pol) -> std::int64_t {
        using policy_t = std::decay_t<decltype(pol)>;
        return refund(pol, *std::get_if<typename policy_t::state>(&s), std::move(r), now);
      },
      p);
}

}  // namespace sluice
