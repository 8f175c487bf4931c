// The sliding log: its construction, its step (it owns memory, so it is
// here rather than inline), and its part of every operation over any policy.
#include "sluice/core/sliding_log.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "detail/carry.hpp"
#include "detail/checks.hpp"
#include "detail/count_answer.hpp"
#include "detail/receipts.hpp"
#include "detail/redis_leaf.hpp"
#include "sluice/core/algorithm.hpp"
#include "sluice/core/analysis.hpp"
#include "sluice/core/any.hpp"
#include "sluice/core/detail/log_rebuild.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/reconfigure.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/report.hpp"
#include "sluice/core/worst_case.hpp"

namespace sluice {
namespace {

using detail::i128;
using ra = detail::receipt_access;
using detail::keep_decisive;

}  // namespace

// ---- sliding_log ----

result<sliding_log> sliding_log::make(rate r) {
  if (auto e = detail::check_rate(r)) return *e;
  return sliding_log(r);
}

result<sliding_log> sliding_log::from_spec(const spec& s) { return make(s.limit); }

std::string policy_text(const sliding_log& p) { return std::string(sliding_log::name) + " " + format_rate(p.limit()); }

void sliding_log::state::push_back(entry e) {
  if (size_ == ring_.size()) {
    // Grow to the next power of two, unrolling the ring so head_ is 0.
    std::vector<entry> bigger(ring_.empty() ? 4 : ring_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = at(i);
    ring_.swap(bigger);
    head_ = 0;
  }
  ring_[(head_ + size_) & (ring_.size() - 1)] = e;
  ++size_;
  units_ += e.units;
}

worst_case_traits worst_case_traits_of(const sliding_log& p, tick window2, tick granularity) {
  const std::int64_t c = worst_case(p, window2, granularity);
  return {.exact = c, .bound = c, .refills = p.limit().limit > 0};
}

limit_figures limit_of(const sliding_log& p) noexcept { return {.per = p.limit(), .units = p.limit().limit}; }

bool may_leave_debt(const sliding_log&, const sliding_log&) noexcept { return false; }

inline sliding_log::scan sliding_log::scan_of(const state& s, tick now) const noexcept {
  const tick e = detail::max64(now, s.last_);
  // Units at t ≤ e − W have left the window; count them without touching
  // the state, so that a denial changes nothing.
  const detail::i128 horizon = static_cast<detail::i128>(e) - r_.window;
  std::size_t first = 0;
  std::int64_t expired = 0;
  while (first < s.size_ && s.at(first).at <= horizon) expired += s.at(first++).units;
  return {e, first, s.units_ - expired};
}

inline decision sliding_log::answer(const state& s, const scan& sc, tick now, std::int64_t cost) const noexcept {
  decision d;
  // After an admit the log holds exactly the units in the window plus these.
  if (detail::count_answer(
          d, r_.limit, sc.in_window, cost, now,
          [&] { return static_cast<detail::i128>(s.at(s.size_ - 1).at) + r_.window; },
          [&] { return static_cast<detail::i128>(sc.e) + r_.window; }))
    return d;
  // The request fits once the oldest `need` units have left; the entry that
  // completes them leaves at its instant + W.
  const std::int64_t need = sc.in_window - (r_.limit - cost);
  std::int64_t freed = 0;
  std::size_t i = sc.first;
  while (freed + s.at(i).units < need) freed += s.at(i++).units;
  d.retry_after = detail::until(static_cast<detail::i128>(s.at(i).at) + r_.window, now);
  return d;
}

decision sliding_log::decide(state& s, tick now, std::int64_t cost) const noexcept {
  const scan sc = scan_of(s, now);
  const decision d = answer(s, sc, now, cost);
  if (!d.allowed) return d;
  for (std::size_t i = 0; i < sc.first; ++i) s.pop_front();
  if (s.size_ > 0 && s.at(s.size_ - 1).at == sc.e) {
    s.ring_[(s.head_ + s.size_ - 1) & (s.ring_.size() - 1)].units += cost;
    s.units_ += cost;
  } else {
    s.push_back(entry{sc.e, cost});
  }
  s.last_ = sc.e;
  return d;
}

decision sliding_log::peek(const state& s, tick now, std::int64_t cost) const noexcept {
  return answer(s, scan_of(s, now), now, cost);
}

void sliding_log::charge(state& s, tick now, std::int64_t cost) const noexcept {
  const std::int64_t limit = r_.limit;
  if (cost < 1 || limit == 0) return;
  const scan sc = scan_of(s, now);
  for (std::size_t i = 0; i < sc.first; ++i) s.pop_front();
  const bool merge = s.size_ > 0 && s.at(s.size_ - 1).at == sc.e;
  const std::int64_t held = merge ? s.at(s.size_ - 1).units : 0;
  const std::int64_t add = std::min(cost, limit - std::min(held, limit));  // an entry holds at most L
  // While the newer entries alone hold L units, the oldest changes no
  // decision (semantics.md, "Reports"): drop it. Judged before the units
  // join (in 128 bits: the log may hold 3L − 1 for a moment), so the log
  // never counts past 2L − 1.
  detail::i128 total = static_cast<detail::i128>(s.units_) + add;
  while (s.size_ + (merge ? 0 : 1) > 1 && total - s.at(0).units >= limit) {
    total -= s.at(0).units;
    s.pop_front();
  }
  if (merge) {
    s.ring_[(s.head_ + s.size_ - 1) & (s.ring_.size() - 1)].units += add;
    s.units_ += add;
  } else {
    s.push_back(entry{sc.e, add});
  }
  s.last_ = sc.e;
}

receipt receipt_before(const sliding_log& p, const sliding_log::state&, tick now, std::int64_t cost) noexcept {
  return detail::new_receipt(detail::stamp_of(p), now, cost);
}
void receipt_after(receipt& r, const sliding_log&, const sliding_log::state& s) noexcept { ra::at(r) = s.last(); }

std::int64_t refund(const sliding_log& p, sliding_log::state& s, receipt&& rc, tick /*now*/) {
  receipt r(std::move(rc));
  if (!detail::matches(r, detail::stamp_of(p))) return 0;
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

sliding_log::state reconfigure(const sliding_log& from, const sliding_log::state& s, const sliding_log& to, tick now) {
  const tick e = detail::max64(now, s.last());
  const i128 horizon = static_cast<i128>(e) - from.limit().window;
  std::vector<sliding_log::entry> kept;
  kept.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s.at(i).at > horizon) kept.push_back(s.at(i));
  if (kept.empty()) return {};
  // Re-windowed first (the new window drops what it no longer holds), then
  // only what can change a decision of `to` is kept.
  const sliding_log::state exact = detail::rebuild_log(to.limit().window, kept);
  kept.clear();
  for (std::size_t i = 0; i < exact.size(); ++i) kept.push_back(exact.at(i));
  keep_decisive(kept, to.limit().limit, [](sliding_log::entry& run) -> std::int64_t& { return run.units; });
  if (kept.empty()) return {};
  return detail::rebuild_log(to.limit().window, kept);
}

// ---- its Redis leaf (portable.hpp; src/redis/lua/) ----

template struct portable::window_leaf<sliding_log>;

// mode L c W.
void portable::of<sliding_log>::redis_args(const sliding_log& p, const redis_constants&, const redis_call& c,
                                           redis_numbers& out) noexcept {
  const rate r = p.limit();
  const i128 cost = detail::redis_leaf::count_mode(r.limit, r.limit, c, out);
  out.number(r.limit);
  out.number(cost);
  out.number(r.window);
}

}  // namespace sluice
