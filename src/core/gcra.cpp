// GCRA beyond its step (gcra.hpp): its construction and its part of every
// operation over any policy.
#include "sluice/core/gcra.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "detail/burst.hpp"
#include "detail/carry.hpp"
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
using detail::new_tokens;
using detail::refunded_tat;
using detail::whole_units;

}  // namespace

// ---- gcra ----

result<gcra> gcra::make(rate r, std::int64_t burst) {
  if (auto e = detail::check_rate(r)) return *e;
  if (auto e = detail::check_count("burst", burst, 1)) return *e;
  return gcra(r, burst);
}

result<gcra> gcra::from_spec(const spec& s) { return make(s.limit, detail::size_or_default(s.burst, s.limit)); }

std::string policy_text(const gcra& p) { return detail::sized_text(gcra::name, p.limit(), "burst", p.burst()); }

worst_case_traits worst_case_traits_of(const gcra& p, tick window2, tick granularity) {
  return detail::burst_worst_case_traits(p, window2, granularity);
}

limit_figures limit_of(const gcra& p) noexcept { return detail::burst_limit_figures(p); }

bool may_leave_debt(const gcra& from, const gcra& to) noexcept { return detail::burst_may_leave_debt(from, to); }

void charge(const gcra& p, gcra::state& s, tick now, std::int64_t cost) noexcept {
  const rate r = p.limit();
  if (cost < 1 || r.limit == 0) return;
  const tick e = detail::max64(now, s.last);
  const i128 el = static_cast<i128>(e) * r.limit;
  const i128 ahead = s.u > el ? s.u - el : 0;
  const i128 cap = report_debt_bound(r.limit, p.tolerance());
  s.u = el + std::max(ahead, std::min(ahead + static_cast<i128>(cost) * r.window, cap));
  s.last = e;
}

receipt receipt_before(const gcra& p, const gcra::state& s, tick now, std::int64_t cost) noexcept {
  return detail::one_value_receipt(p, s, now, cost, s.u);
}
void receipt_after(receipt& r, const gcra&, const gcra::state& s) noexcept {
  detail::one_value_receipt_after(r, s, s.u);
}

std::int64_t refund(const gcra& p, gcra::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  const rate rt = p.limit();
  if (!detail::matches(r, detail::stamp_of(p)) || rt.limit == 0) return 0;
  const i128 next = refunded_tat(s.u, s.last, r, rt.limit, rt.window);
  if (next >= s.u) return 0;
  // Report as the token bucket does: below last·L the bucket is full anyway.
  const i128 floor_u = std::max(next, static_cast<i128>(s.last) * rt.limit);
  const i128 given = s.u - floor_u;
  s.u = next;
  return whole_units(given, rt.window, ra::cost(r));
}

gcra::state reconfigure(const gcra& from, const gcra::state& s, const gcra& to, tick now) noexcept {
  const tick e = detail::max64(now, s.last);
  const i128 el = static_cast<i128>(e) * from.limit().limit;  // 0 when L = 0: u then holds the deficit
  const i128 held = from.tolerance() - (s.u > el ? s.u - el : 0);
  const i128 tokens = new_tokens(held, from.limit(), from.burst(), to.limit(), to.burst());
  if (tokens >= to.tolerance()) return {};  // full: fresh
  gcra::state out;
  out.u = static_cast<i128>(e) * to.limit().limit + (to.tolerance() - tokens);
  out.last = e;
  return out;
}

// Its Redis leaf (portable.hpp), a rate with a burst's.
template struct portable::burst_leaf<gcra>;

}  // namespace sluice
