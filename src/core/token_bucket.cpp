// The token bucket beyond its step (token_bucket.hpp): its construction and
// its part of every operation over any policy.
#include "sluice/core/token_bucket.hpp"

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

/// The token bucket's state as a GCRA time, u = last·L + spent (in 1/L
/// tick): the debt at t ≥ last is max(0, u − t·L) in 1/W token.
i128 tat_of(const token_bucket& p, const token_bucket::state& s) noexcept {
  return static_cast<i128>(s.last) * p.limit().limit + s.spent;
}

}  // namespace

// ---- token_bucket ----

result<token_bucket> token_bucket::make(rate r, std::int64_t burst) {
  if (auto e = detail::check_rate(r)) return *e;
  if (auto e = detail::check_count("burst", burst, 1)) return *e;
  return token_bucket(r, burst);
}

result<token_bucket> token_bucket::from_spec(const spec& s) {
  return make(s.limit, detail::size_or_default(s.burst, s.limit));
}

std::string policy_text(const token_bucket& p) {
  return detail::sized_text(token_bucket::name, p.limit(), "burst", p.burst());
}

worst_case_traits worst_case_traits_of(const token_bucket& p, tick window2, tick granularity) {
  return detail::burst_worst_case_traits(p, window2, granularity);
}

limit_figures limit_of(const token_bucket& p) noexcept { return detail::burst_limit_figures(p); }

bool may_leave_debt(const token_bucket& from, const token_bucket& to) noexcept {
  return detail::burst_may_leave_debt(from, to);
}

void charge(const token_bucket& p, token_bucket::state& s, tick now, std::int64_t cost) noexcept {
  const rate r = p.limit();
  if (cost < 1 || r.limit == 0) return;
  const tick e = detail::max64(now, s.last);
  const i128 refill = (static_cast<i128>(e) - s.last) * r.limit;
  const i128 spent = refill >= s.spent ? 0 : s.spent - refill;
  const i128 cap = report_debt_bound(r.limit, p.capacity());
  s.spent = std::max(spent, std::min(spent + static_cast<i128>(cost) * r.window, cap));
  s.last = e;
}

receipt receipt_before(const token_bucket& p, const token_bucket::state& s, tick now, std::int64_t cost) noexcept {
  return detail::one_value_receipt(p, s, now, cost, tat_of(p, s));
}
void receipt_after(receipt& r, const token_bucket& p, const token_bucket::state& s) noexcept {
  detail::one_value_receipt_after(r, s, tat_of(p, s));
}

std::int64_t refund(const token_bucket& p, token_bucket::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  const rate rt = p.limit();
  if (!detail::matches(r, detail::stamp_of(p)) || rt.limit == 0) return 0;
  const i128 lastl = static_cast<i128>(s.last) * rt.limit;
  const i128 u = tat_of(p, s);
  const i128 next = std::max(refunded_tat(u, s.last, r, rt.limit, rt.window), lastl);  // spent ≥ 0
  if (next >= u) return 0;
  s.spent = next - lastl;
  return whole_units(u - next, rt.window, ra::cost(r));
}

token_bucket::state reconfigure(const token_bucket& from, const token_bucket::state& s, const token_bucket& to,
                                tick now) noexcept {
  const tick e = detail::max64(now, s.last);
  const i128 tokens = new_tokens(from.tokens_at(s, e), from.limit(), from.burst(), to.limit(), to.burst());
  if (tokens >= to.capacity()) return {};
  token_bucket::state out;
  out.spent = to.capacity() - tokens;
  out.last = e;
  return out;
}

// Its Redis leaf (portable.hpp), a rate with a burst's.
template struct portable::burst_leaf<token_bucket>;

}  // namespace sluice
