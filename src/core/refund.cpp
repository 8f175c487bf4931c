// Receipts (what an admit took) and refunds (giving it back without letting
// anything extra through) of the composites, and the dispatch over any
// policy. The rules, per algorithm, are in refund.hpp; each single
// algorithm's receipt and refund are beside it (src/<name>.cpp), the
// reasoning for the token bucket and GCRA in detail/receipts.hpp.
#include "sluice/core/refund.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "detail/compose.hpp"
#include "detail/receipts.hpp"
#include "sluice/core/detail/receipt_fields.hpp"

namespace sluice {

namespace detail {

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

using ra = detail::receipt_access;

// ---- a composite's receipt (a single algorithm's is beside it: src/<name>.cpp) ----

detail::receipt_stamp stamp_of(const all_of& p) noexcept {
  return {algorithm::all_of, static_cast<std::int64_t>(p.parts().size()), 0, 0};
}
detail::receipt_stamp stamp_of(const any_of& p) noexcept {
  return {algorithm::any_of, static_cast<std::int64_t>(p.parts().size()), 0, 0};
}

// Composites: `before` is taken recursively once the composite has been
// evaluated and found to admit (an any_of records the part that will
// consume, read from the choices the evaluation recorded), `after`
// recursively once it has consumed.

receipt before_any(const any_policy& p, const any_state& s, tick now, std::int64_t cost, const std::int32_t* choices);
void after_any(receipt& r, const any_policy& p, const any_state& s);

receipt before(const all_of& p, const all_of_state& s, tick now, std::int64_t cost, const std::int32_t* choices) {
  receipt r = detail::new_receipt(stamp_of(p), now, cost);
  ra::parts(r).reserve(p.parts().size());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < p.parts().size(); ++i) {
    ra::parts(r).push_back(before_any(p.parts()[i], s.parts[i], now, cost, choices + offset));
    offset += detail::choices_of(p.parts()[i]);
  }
  return r;
}
receipt before(const any_of& p, const any_of_state& s, tick now, std::int64_t cost, const std::int32_t* choices) {
  receipt r = detail::new_receipt(stamp_of(p), now, cost);
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
          return receipt_before(pol, st, now, cost);
        }
      },
      p);
}
void after_any(receipt& r, const any_policy& p, const any_state& s) {
  std::visit(
      [&](const auto& pol) {
        using policy_t = std::decay_t<decltype(pol)>;
        const auto& st = *std::get_if<typename policy_t::state>(&s);
        if constexpr (std::is_same_v<policy_t, all_of> || std::is_same_v<policy_t, any_of>) {
          after(r, pol, st);
        } else {
          receipt_after(r, pol, st);
        }
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

}  // namespace

// ---- admit ----

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

std::int64_t refund(const all_of& p, all_of_state& s, receipt&& rc, tick now) {
  receipt r(std::move(rc));
  if (!detail::matches(r, stamp_of(p)) || ra::parts(r).size() != p.parts().size() || s.parts.size() != p.parts().size())
    return 0;
  std::int64_t fewest = ra::cost(r);
  for (std::size_t i = 0; i < p.parts().size(); ++i)
    fewest = std::min(fewest, refund(p.parts()[i], s.parts[i], std::move(ra::parts(r)[i]), now));
  return fewest;
}

std::int64_t refund(const any_of& p, any_of_state& s, receipt&& rc, tick now) {
  receipt r(std::move(rc));
  if (!detail::matches(r, stamp_of(p)) || ra::parts(r).size() != 1 || ra::part(r) < 0 ||
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
