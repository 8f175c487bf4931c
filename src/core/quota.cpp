// The quota and the constant answers (always-allow, always-deny) beyond
// their steps (quota.hpp): construction and their part of every operation
// over any policy.
#include "sluice/core/quota.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "detail/checks.hpp"
#include "detail/receipts.hpp"
#include "detail/redis_leaf.hpp"
#include "sluice/core/algorithm.hpp"
#include "sluice/core/analysis.hpp"
#include "sluice/core/any.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/reconfigure.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/report.hpp"
#include "sluice/core/worst_case.hpp"

namespace sluice {
namespace {

using detail::i128;
using ra = detail::receipt_access;

}  // namespace

// ---- quota ----

result<quota> quota::make(std::int64_t units) {
  if (auto e = detail::check_count("quota", units, 0)) return *e;
  return quota(units);
}

result<quota> quota::from_spec(const spec& s) {
  if (!s.units) return error{"quota", "is required by quota (the number of units in all)"};
  return make(*s.units);
}

std::string policy_text(const quota& p) { return std::string(quota::name) + " " + std::to_string(p.units()); }

void charge(const quota& p, quota::state& s, tick, std::int64_t cost) noexcept {
  if (cost < 1 || s.used >= p.units()) return;
  s.used += std::min(cost, p.units() - s.used);
}

std::int64_t worst_case(const quota& p, tick window2, tick /*granularity*/) noexcept {
  return window2 < 1 ? 0 : p.units();
}

worst_case_traits worst_case_traits_of(const quota& p, tick window2, tick granularity) {
  const std::int64_t c = worst_case(p, window2, granularity);
  return {.exact = c, .bound = c};
}

limit_figures limit_of(const quota& p) noexcept { return {.units = p.units()}; }

bool may_leave_debt(const quota&, const quota&) noexcept { return false; }

receipt receipt_before(const quota& p, const quota::state&, tick now, std::int64_t cost) noexcept {
  return detail::new_receipt(detail::stamp_of(p), now, cost);
}
void receipt_after(receipt&, const quota&, const quota::state&) noexcept {}

std::int64_t refund(const quota& p, quota::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  if (!detail::matches(r, detail::stamp_of(p))) return 0;
  const std::int64_t back = std::min(ra::cost(r), s.used);
  s.used -= back;
  return back < 0 ? 0 : back;
}

quota::state reconfigure(const quota&, const quota::state& s, const quota&, tick) noexcept { return s; }

// ---- always_allow ----

result<always_allow> always_allow::from_spec(const spec&) { return always_allow{}; }

std::string policy_text(const always_allow&) { return std::string(always_allow::name); }

std::int64_t worst_case(const always_allow&, tick window2, tick /*granularity*/) noexcept {
  return window2 < 1 ? 0 : detail::i64_max;  // no bound: saturated
}

limit_figures limit_of(const always_allow&) noexcept { return {.counted = false, .unbounded = true}; }

// ---- always_deny ----

result<always_deny> always_deny::from_spec(const spec&) { return always_deny{}; }

std::string policy_text(const always_deny&) { return std::string(always_deny::name); }

std::int64_t worst_case(const always_deny&, tick, tick) noexcept { return 0; }

limit_figures limit_of(const always_deny&) noexcept { return {.counted = false}; }

// ---- its Redis leaf (portable.hpp; src/redis/lua/) ----

std::optional<error> portable::of<quota>::redis_plan(const quota& p, redis_constants&) {
  return detail::redis_leaf::below53("quota", p.units());
}
// mode N c.
void portable::of<quota>::redis_args(const quota& p, const redis_constants&, const redis_call& c,
                                     redis_numbers& out) noexcept {
  const i128 cost = detail::redis_leaf::count_mode(p.units(), p.units(), c, out);
  out.number(p.units());
  out.number(cost);
}

// ---- the constant answers' shared operations (quota.hpp) ----

template <constant_answer P>
receipt receipt_before(const P& p, const typename P::state&, tick now, std::int64_t cost) noexcept {
  return detail::new_receipt(detail::stamp_of(p), now, cost);
}

template <constant_answer P>
std::int64_t refund(const P&, typename P::state&, receipt&& rc, tick) noexcept {
  receipt r(std::move(rc));
  return 0;
}

template <constant_answer P>
worst_case_traits worst_case_traits_of(const P& p, tick window2, tick granularity) {
  const std::int64_t c = worst_case(p, window2, granularity);
  return {.exact = c, .bound = c};
}

template receipt receipt_before(const always_allow&, const always_allow::state&, tick, std::int64_t) noexcept;
template receipt receipt_before(const always_deny&, const always_deny::state&, tick, std::int64_t) noexcept;
template std::int64_t refund(const always_allow&, always_allow::state&, receipt&&, tick) noexcept;
template std::int64_t refund(const always_deny&, always_deny::state&, receipt&&, tick) noexcept;
template worst_case_traits worst_case_traits_of(const always_allow&, tick, tick);
template worst_case_traits worst_case_traits_of(const always_deny&, tick, tick);

}  // namespace sluice
