// The fixed-window counter beyond its step (fixed_window.hpp): its
// construction and its part of every operation over any policy.
#include "sluice/core/fixed_window.hpp"

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
using detail::overlaps;

}  // namespace

// ---- fixed_window ----

result<fixed_window> fixed_window::make(rate r, tick origin) {
  if (auto e = detail::check_rate(r)) return *e;
  return fixed_window(r, static_cast<tick>(detail::floor_mod(origin, r.window)));
}

result<fixed_window> fixed_window::from_spec(const spec& s) { return make(s.limit, s.origin); }

std::string policy_text(const fixed_window& p) {
  std::string out = std::string(fixed_window::name) + " " + format_rate(p.limit());
  if (p.origin() != 0) out += " origin=" + format_duration(p.origin());
  return out;
}

worst_case_traits worst_case_traits_of(const fixed_window& p, tick window2, tick granularity) {
  const std::int64_t c = worst_case(p, window2, granularity);
  return {.exact = c, .bound = c, .period = p.limit().limit > 0 ? p.limit().window : 0, .origin = p.origin()};
}

limit_figures limit_of(const fixed_window& p) noexcept { return {.per = p.limit(), .units = p.limit().limit}; }

bool may_leave_debt(const fixed_window&, const fixed_window&) noexcept { return false; }

void charge(const fixed_window& p, fixed_window::state& s, tick now, std::int64_t cost) noexcept {
  const std::int64_t limit = p.limit().limit;
  if (cost < 1 || limit == 0) return;
  std::int64_t k = p.window_of(now);
  if (s.count > 0 && k < s.window) k = s.window;  // a clock that steps back is read as the latest admit
  const std::int64_t count = (s.count > 0 && k == s.window) ? s.count : 0;
  s.window = k;
  s.count = cost >= limit - count ? std::max(count, limit) : count + cost;  // saturates at L
}

receipt receipt_before(const fixed_window& p, const fixed_window::state&, tick now, std::int64_t cost) noexcept {
  return detail::new_receipt(detail::stamp_of(p), now, cost);
}
void receipt_after(receipt& r, const fixed_window&, const fixed_window::state& s) noexcept { ra::key(r) = s.window; }

std::int64_t refund(const fixed_window& p, fixed_window::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  if (!detail::matches(r, detail::stamp_of(p)) || s.count <= 0 || s.window != ra::key(r)) return 0;
  const std::int64_t back = std::min(ra::cost(r), s.count);
  s.count -= back;
  return back;
}

fixed_window::state reconfigure(const fixed_window& from, const fixed_window::state& s, const fixed_window& to,
                                tick now) noexcept {
  if (s.count <= 0) return {};
  const std::int64_t k_now = std::max(from.window_of(now), s.window);
  if (k_now != s.window) return {};  // counted in a window that is over: fresh under `from`
  const i128 a0 = from.start_of(s.window);
  const i128 a1 = a0 + from.limit().window;
  // Read `now` as at least the start of the counted window (a clock that
  // stepped back), as `decide` does.
  const tick e = a0 > now ? static_cast<tick>(a0) : now;
  const std::int64_t k = to.window_of(e);
  const i128 b0 = to.start_of(k);
  if (!overlaps(a0, a1, b0, static_cast<i128>(e) + 1)) return {};
  return {k, s.count};
}

// ---- its Redis leaf (portable.hpp; src/redis/lua/) ----

template struct portable::window_leaf<fixed_window>;

// mode kh kl o L c W: the window of `now` from the origin and its offset.
void portable::of<fixed_window>::redis_args(const fixed_window& p, const redis_constants&, const redis_call& c,
                                            redis_numbers& out) noexcept {
  const rate r = p.limit();
  const i128 cost = detail::redis_leaf::count_mode(r.limit, r.limit, c, out);
  out.window(c.now, r.window, p.origin());
  out.number(r.limit);
  out.number(cost);
  out.number(r.window);
}

}  // namespace sluice
