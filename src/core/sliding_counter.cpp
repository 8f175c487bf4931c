// The sliding window counter beyond its step (sliding_counter.hpp): its
// construction and its part of every operation over any policy.
#include "sluice/core/sliding_counter.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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
using detail::clamp_units;
using detail::overlaps;

}  // namespace

// ---- sliding_counter ----

result<sliding_counter> sliding_counter::make(rate r) {
  if (auto e = detail::check_rate(r)) return *e;
  return sliding_counter(r);
}

result<sliding_counter> sliding_counter::from_spec(const spec& s) { return make(s.limit); }

std::string policy_text(const sliding_counter& p) {
  return std::string(sliding_counter::name) + " " + format_rate(p.limit());
}

worst_case_traits worst_case_traits_of(const sliding_counter& p, tick window2, tick granularity) {
  // No closed form: the search finds it. Bound: at most L per counter
  // window touched (the estimate is never below curr), the fixed window's.
  return {.bound = worst_case(*fixed_window::make(p.limit()), window2, granularity),
          .period = p.limit().limit > 0 ? p.limit().window : 0};
}

limit_figures limit_of(const sliding_counter& p) noexcept { return {.per = p.limit(), .units = p.limit().limit}; }

bool may_leave_debt(const sliding_counter&, const sliding_counter&) noexcept { return false; }

void charge(const sliding_counter& p, sliding_counter::state& s, tick now, std::int64_t cost) noexcept {
  const rate r = p.limit();
  if (cost < 1 || r.limit == 0) return;
  const i128 w = r.window;
  const tick e = detail::max64(now, s.last);
  const i128 k = detail::floor_div(e, w);
  i128 prev = 0;
  i128 curr = 0;
  if (k == s.window) {
    prev = s.prev;
    curr = s.curr;
  } else if (k == static_cast<i128>(s.window) + 1) {
    prev = s.curr;
  }
  const i128 cap = report_count_bound(r);
  s.window = static_cast<std::int64_t>(k);
  s.prev = static_cast<std::int64_t>(prev);
  s.curr = static_cast<std::int64_t>(std::max(curr, std::min(curr + cost, cap)));
  s.last = e;
}

receipt receipt_before(const sliding_counter& p, const sliding_counter::state&, tick now, std::int64_t cost) noexcept {
  return detail::new_receipt(detail::stamp_of(p), now, cost);
}
void receipt_after(receipt& r, const sliding_counter&, const sliding_counter::state& s) noexcept {
  ra::key(r) = s.window;
  ra::at(r) = s.last;
}

std::int64_t refund(const sliding_counter& p, sliding_counter::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  if (!detail::matches(r, detail::stamp_of(p))) return 0;
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

sliding_counter::state reconfigure(const sliding_counter& from, const sliding_counter::state& s,
                                   const sliding_counter& to, tick now) noexcept {
  const i128 w0 = from.limit().window;
  const i128 w1 = to.limit().window;
  const tick e = detail::max64(now, s.last);
  const i128 k_e = detail::floor_div(e, w0);
  // The (old window, units) pairs the old counter still counts at e.
  struct counted {
    i128 window;
    i128 units;
  };
  counted held[2] = {{0, 0}, {0, 0}};
  if (k_e == s.window) {
    held[0] = {s.window, s.curr};
    held[1] = {static_cast<i128>(s.window) - 1, s.prev};
  } else if (k_e == static_cast<i128>(s.window) + 1) {
    held[0] = {s.window, s.curr};
  }
  if (held[0].units == 0 && held[1].units == 0) return {};
  if (w0 == w1) return s;
  const i128 k = detail::floor_div(e, w1);
  i128 curr = 0;
  i128 prev = 0;
  for (const counted& c : held) {
    if (c.units == 0) continue;
    const i128 a0 = c.window * w0;
    const i128 a1 = std::min(a0 + w0, static_cast<i128>(e) + 1);  // no unit is later than e
    if (overlaps(a0, a1, k * w1, (k + 1) * w1)) curr += c.units;
    if (overlaps(a0, a1, (k - 1) * w1, k * w1)) prev += c.units;
  }
  if (curr == 0 && prev == 0) return {};
  sliding_counter::state out;
  out.window = static_cast<std::int64_t>(k);
  out.prev = clamp_units(prev);
  out.curr = clamp_units(curr);
  out.last = s.last;
  return out;
}

// ---- its Redis leaf (portable.hpp; src/redis/lua/) ----

template struct portable::window_leaf<sliding_counter>;

// mode kh kl o L W c: the window of `now` and its offset; a report's cost
// saturated at what a counter holds.
void portable::of<sliding_counter>::redis_args(const sliding_counter& p, const redis_constants&, const redis_call& c,
                                               redis_numbers& out) noexcept {
  const rate r = p.limit();
  const i128 cost = detail::redis_leaf::count_mode(r.limit, report_count_bound(r), c, out);
  out.window(c.now, r.window, 0);
  out.number(r.limit);
  out.number(r.window);
  out.number(cost);
}

}  // namespace sluice
