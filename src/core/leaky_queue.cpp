// The leaky queue beyond its step (leaky_queue.hpp): its construction and
// its part of every operation over any policy.
#include "sluice/core/leaky_queue.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "detail/checks.hpp"
#include "detail/receipts.hpp"
#include "detail/redis_leaf.hpp"
#include "detail/wide.hpp"
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

// ---- leaky_queue ----

result<leaky_queue> leaky_queue::make(rate r, std::int64_t queue) {
  if (auto e = detail::check_rate(r)) return *e;
  if (auto e = detail::check_count("queue", queue, 1)) return *e;
  return leaky_queue(r, queue);
}

result<leaky_queue> leaky_queue::from_spec(const spec& s) {
  return make(s.limit, detail::size_or_default(s.queue, s.limit));
}

std::string policy_text(const leaky_queue& p) {
  return detail::sized_text(leaky_queue::name, p.limit(), "queue", p.queue());
}

std::int64_t worst_case(const leaky_queue& p, tick window2, tick granularity) noexcept {
  // Units admitted in the window are either still queued at its last grid
  // point (at most Q) or left before it; they leave one per W/L ticks, from
  // no earlier than the window's start, so at most ceil(m·g·L / W) did. And
  // at most Q are admitted at one point. Filling the queue at every point
  // reaches the lesser: if g·L ≤ Q·W the queue never runs dry between
  // points, so every W/L ticks one leaves and is replaced; otherwise it is
  // empty again at every point and takes Q.
  const rate r = p.limit();
  if (window2 < 1 || r.limit == 0) return 0;
  const tick g = granularity < 1 ? 1 : granularity;
  const i128 m = (static_cast<i128>(window2) - 1) / g;  // grid steps after the first point
  const i128 q = p.queue();
  const i128 by_points = q * (m + 1);
  const i128 by_rate = q + detail::ceil_div(m * g * r.limit, r.window);  // m·g < 2^63, L ≤ 2^62
  return detail::clamp_count(std::min(by_points, by_rate));
}

worst_case_traits worst_case_traits_of(const leaky_queue& p, tick window2, tick granularity) {
  const std::int64_t c = worst_case(p, window2, granularity);
  return {.exact = c, .bound = c, .refills = p.limit().limit > 0};
}

limit_figures limit_of(const leaky_queue& p) noexcept { return {.per = p.limit(), .units = p.queue(), .queues = true}; }

bool may_leave_debt(const leaky_queue&, const leaky_queue&) noexcept { return false; }

void charge(const leaky_queue& p, leaky_queue::state& s, tick now, std::int64_t cost) noexcept {
  const rate r = p.limit();
  if (cost < 1 || r.limit == 0) return;
  const tick e = detail::max64(now, s.last);
  const i128 el = static_cast<i128>(e) * r.limit;
  const i128 first = s.release + r.window > el ? s.release + r.window : el;
  const i128 cap = report_debt_bound(r.limit, static_cast<i128>(p.queue()) * r.window - 1);
  const i128 ahead = std::min(first - el + static_cast<i128>(cost - 1) * r.window, cap);
  s.release = std::max(s.release, el + ahead);
  s.last = e;
}

receipt receipt_before(const leaky_queue& p, const leaky_queue::state& s, tick now, std::int64_t cost) noexcept {
  return detail::one_value_receipt(p, s, now, cost, s.release);
}
void receipt_after(receipt& r, const leaky_queue&, const leaky_queue::state& s) noexcept {
  detail::one_value_receipt_after(r, s, s.release);
}

std::int64_t refund(const leaky_queue& p, leaky_queue::state& s, receipt&& rc, tick now) noexcept {
  receipt r(std::move(rc));
  const rate rt = p.limit();
  if (!detail::matches(r, detail::stamp_of(p)) || rt.limit == 0 || s.release != ra::after(r)) return 0;
  const i128 el = static_cast<i128>(detail::max64(now, s.last)) * rt.limit;
  if (s.release <= el) return 0;  // every unit of it has left (or leaves now)
  // Units of this admit leave at R − i·W, i = 0 … c − 1; those after now can go.
  const i128 undue = detail::ceil_div(s.release - el, rt.window);
  const std::int64_t back = undue >= ra::cost(r) ? ra::cost(r) : static_cast<std::int64_t>(undue);
  s.release = back == ra::cost(r) ? ra::before(r) : s.release - static_cast<i128>(back) * rt.window;
  return back;
}

leaky_queue::state reconfigure(const leaky_queue& from, const leaky_queue::state& s, const leaky_queue& to,
                               tick now) noexcept {
  if (s.release <= detail::minus_infinity) return {};
  const std::int64_t l0 = from.limit().limit;
  const std::int64_t l1 = to.limit().limit;
  if (l0 > 0) {
    const i128 el = static_cast<i128>(detail::max64(now, s.last)) * l0;
    if (s.release + from.limit().window <= el) return {};  // fresh under `from`
  }
  leaky_queue::state out;
  out.last = s.last;
  // R/L0 is the last unit's release instant (R itself when L0 = 0); keep it,
  // rounded later, in the new scale (unscaled when L1 = 0).
  if (l0 > 0 && l1 > 0) {
    out.release = detail::muldiv_ceil(s.release, l1, l0);
  } else if (l0 > 0) {
    out.release = detail::ceil_div(s.release, l0);
  } else if (l1 > 0) {
    // Saturating: a release far out (an untouched debt) times L1 may pass
    // 128 bits; clamped, as every other out-of-range release is.
    i128 scaled = 0;
    if (__builtin_mul_overflow(s.release, static_cast<i128>(l1), &scaled))
      scaled = s.release < 0 ? -detail::wide_bound : detail::wide_bound;
    out.release = detail::clamp_wide(scaled);
  } else {
    out.release = s.release;
  }
  return out;
}

// ---- its Redis leaf (portable.hpp; src/redis/lua/) ----

std::optional<error> portable::of<leaky_queue>::redis_plan(const leaky_queue& p, redis_constants& k) {
  return detail::redis_leaf::capacity_plan(p.limit(), p.queue(), "queue",
                                           static_cast<i128>(p.queue()) * p.limit().window - 1, k);
}
// mode L wq wr X/L X%L Y/L Y%L kq kr: X = (Q − c)·W, what the backlog must
// be at most for the cost to fit; Y = (c − 1)·W, what it adds past one unit.
void portable::of<leaky_queue>::redis_args(const leaky_queue& p, const redis_constants& k, const redis_call& c,
                                           redis_numbers& out) noexcept {
  using detail::redis_leaf::p52;
  const std::int64_t l = p.limit().limit;
  const bool charge = c.report && l > 0 && c.cost >= 1;
  const bool fits = l > 0 && c.cost >= 1 && c.cost <= p.queue();
  const bool can = charge || fits;
  // A cost past Q never fits: X below every backlog the library reads.
  const i128 x = fits ? static_cast<i128>(p.queue() - c.cost) * p.limit().window : -(p52 + 2) * l;
  i128 y = can ? static_cast<i128>(c.cost - 1) * p.limit().window : 0;
  if (charge) y = detail::redis_leaf::saturated(y, k.kq * l + k.kr);
  out.number(detail::redis_leaf::mode(charge, can));
  out.number(l > 0 ? l : 1);
  out.number(k.wq);
  out.number(k.wr);
  out.number(can ? x / l : 0);
  out.number(can ? x % l : 0);
  out.number(can ? y / l : 0);
  out.number(can ? y % l : 0);
  out.number(k.kq);
  out.number(k.kr);
}

}  // namespace sluice
