// The bucketed sliding window: its construction, its step (it owns memory,
// so it is here rather than inline), and its part of every operation over
// any policy.
#include "sluice/core/sliding_buckets.hpp"

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
using detail::keep_decisive;

/// `s` with only the units that can change a decision of `to` (keep_decisive).
sliding_buckets::state decisive(const sliding_buckets& to, const sliding_buckets::state& s) {
  const std::int64_t n = to.buckets();
  if (s.total() == 0 || s.counts().size() != static_cast<std::size_t>(n)) return s;
  struct sub_count {
    i128 sub;
    std::int64_t count;
  };
  std::vector<sub_count> runs;
  for (std::int64_t k = n - 1; k >= 0; --k) {
    const i128 sub = static_cast<i128>(s.newest()) - k;
    const std::int64_t c = s.counts()[static_cast<std::size_t>(detail::floor_mod(sub, static_cast<i128>(n)))];
    if (c > 0) runs.push_back({sub, c});
  }
  keep_decisive(runs, to.limit().limit, [](sub_count& r) -> std::int64_t& { return r.count; });
  // The ring, rebuilt the only way its interface allows: each sub-window's
  // count admitted at its first instant, oldest first, through a policy of
  // the same window and buckets and no limit.
  const tick width = to.limit().window / n;
  const sliding_buckets big = sliding_buckets::make(rate{max_quantity, to.limit().window}, n).value();
  sliding_buckets::state out;
  for (const sub_count& r : runs) {
    const i128 t = std::max<i128>(r.sub * width, detail::i64_min);
    (void)decide(big, out, static_cast<tick>(t), r.count);
  }
  return out;
}

/// The bucketed window's bound, exact for g ≤ w (docs/worst-case.md): admitted
/// units group into runs of at most L, each run's first unit at least N
/// sub-windows after the previous run's first; k such runs need
/// ceil(span / w) ≥ (k − 1)·N, and span ≤ m·g.
std::int64_t buckets_formula(const sliding_buckets& p, tick window2, tick g) noexcept {
  const rate r = p.limit();
  if (window2 < 1 || r.limit == 0) return 0;
  const i128 m = (static_cast<i128>(window2) - 1) / g;
  const i128 w = r.window / p.buckets();
  const i128 runs = m == 0 ? 1 : 1 + detail::ceil_div(m * g, w) / p.buckets();
  return detail::clamp_count(runs * r.limit);
}

}  // namespace

// ---- sliding_buckets ----

result<sliding_buckets> sliding_buckets::make(rate r, std::int64_t buckets) {
  if (auto e = detail::check_rate(r)) return *e;
  constexpr std::int64_t most = 65536;
  if (buckets < 1 || buckets > most)
    return error{"buckets", "must be from 1 to " + std::to_string(most) + " (got " + std::to_string(buckets) + ")"};
  if (r.window % buckets != 0)
    return error{"buckets", std::to_string(buckets) + " does not divide the window of " + std::to_string(r.window) +
                                " ticks into equal sub-windows"};
  return sliding_buckets(r, buckets);
}

result<sliding_buckets> sliding_buckets::from_spec(const spec& s) {
  if (!s.buckets) return error{"buckets", "is required by sliding-buckets (the number of sub-windows)"};
  return make(s.limit, *s.buckets);
}

std::string policy_text(const sliding_buckets& p) {
  return std::string(sliding_buckets::name) + " " + format_rate(p.limit()) + " buckets=" + std::to_string(p.buckets());
}

worst_case_traits worst_case_traits_of(const sliding_buckets& p, tick window2, tick granularity) {
  const std::int64_t formula = buckets_formula(p, window2, granularity);
  worst_case_traits t{.bound = formula, .period = p.limit().limit > 0 ? p.limit().window / p.buckets() : 0};
  if (granularity <= p.limit().window / p.buckets()) t.exact = formula;  // exact on a grid no coarser than w
  return t;
}

limit_figures limit_of(const sliding_buckets& p) noexcept { return {.per = p.limit(), .units = p.limit().limit}; }

bool may_leave_debt(const sliding_buckets&, const sliding_buckets&) noexcept { return false; }

// decide_wide without its divisions: the sub-window of now from now + 2^63
// by one reciprocal division, one remainder for the slot of the newest
// sub-window, and the ring walked slot by slot from there.
inline sliding_buckets::scan sliding_buckets::scan_of(const state& s, tick now) const noexcept {
  std::int64_t j = split_(now).k;
  if (s.total_ > 0 && j < s.newest_) j = s.newest_;  // a clock that steps back is read as the latest admit
  // The sub-windows newest + 1 … j have pushed as many out of the window:
  // their slots hold the units that left. gap ≥ 0, as j ≥ newest.
  const std::uint64_t gap = static_cast<std::uint64_t>(j) - static_cast<std::uint64_t>(s.newest_);
  std::int64_t in_window = 0;
  std::size_t after_newest = 0;
  if (s.total_ > 0 && gap < static_cast<std::uint64_t>(n_)) {
    in_window = s.total_;
    after_newest = next_slot(slot_of(s.newest_));
    for (std::size_t k = after_newest, i = 0; i < gap; ++i, k = next_slot(k)) in_window -= s.counts_[k];
  }
  return {j, gap, in_window, after_newest};
}

inline decision sliding_buckets::answer(const state& s, const scan& sc, tick now, std::int64_t cost) const noexcept {
  using detail::i128;
  decision d;
  if (count_answer(d, s, sc.j, sc.in_window, cost, now)) return d;
  // Walk forward sub-window by sub-window as the oldest ones leave: at
  // sub-window j + m, the slot of j + m (it held j + m − N) is out.
  std::int64_t held = sc.in_window;
  std::size_t k = next_slot(slot_of(sc.j));
  std::int64_t m = 1;
  for (;; ++m, k = next_slot(k)) {
    held -= s.counts_[k];
    if (cost <= r_.limit - held) break;
  }
  d.retry_after = detail::until((static_cast<i128>(sc.j) + m) * width_, now);
  return d;
}

inline bool sliding_buckets::count_answer(decision& d, const state& s, std::int64_t j, std::int64_t in_window,
                                          std::int64_t cost, tick now) const noexcept {
  using detail::i128;
  // After an admit the ring holds the units in the window plus these.
  return detail::count_answer(
      d, r_.limit, in_window, cost, now, [&] { return (static_cast<i128>(s.newest_) + n_) * width_; },
      [&] { return (static_cast<i128>(j) + n_) * width_; });
}

template <typename ClearGap>
inline void sliding_buckets::add_admit(state& s, std::int64_t j, std::size_t slot, std::int64_t in_window,
                                       std::int64_t cost, ClearGap clear_gap) const noexcept {
  if (s.counts_.empty()) s.counts_.assign(static_cast<std::size_t>(n_), 0);
  if (in_window == 0) {
    std::fill(s.counts_.begin(), s.counts_.end(), 0);
  } else {
    clear_gap();
  }
  s.newest_ = j;
  s.counts_[slot] += cost;
  s.total_ = in_window + cost;
}

decision sliding_buckets::decide(state& s, tick now, std::int64_t cost) const noexcept {
  // scan_of and answer, then the change, written out in one piece: the
  // compiler keeps N and the ring in registers across all three (peek, the
  // same without the change, is held to it by the composites' tests).
  // decide_wide without its divisions: the sub-window of now from now +
  // 2^63 by one reciprocal division, one remainder for the slot of the
  // newest sub-window, and the ring walked slot by slot from there.
  using detail::i128;
  std::int64_t j = split_(now).k;
  if (s.total_ > 0 && j < s.newest_) j = s.newest_;  // a clock that steps back is read as the latest admit
  const auto n = static_cast<std::size_t>(n_);
  const auto slot_at = [&](std::int64_t sub) {
    const std::int64_t r = sub % n_;
    return static_cast<std::size_t>(r < 0 ? r + n_ : r);
  };
  const auto next_at = [&](std::size_t k) { return k + 1 == n ? 0 : k + 1; };
  // The sub-windows newest + 1 … j have pushed as many out of the window:
  // their slots hold the units that left. gap ≥ 0, as j ≥ newest.
  const std::uint64_t gap = static_cast<std::uint64_t>(j) - static_cast<std::uint64_t>(s.newest_);
  std::int64_t in_window = 0;
  std::size_t after_newest = 0;  // the slot of sub-window newest + 1
  if (s.total_ > 0 && gap < static_cast<std::uint64_t>(n_)) {
    in_window = s.total_;
    after_newest = next_at(slot_at(s.newest_));
    for (std::size_t k = after_newest, i = 0; i < gap; ++i, k = next_at(k)) in_window -= s.counts_[k];
  }
  decision d;
  if (count_answer(d, s, j, in_window, cost, now)) {
    if (d.allowed)
      add_admit(s, j, slot_at(j), in_window, cost, [&] {
        for (std::size_t k = after_newest, i = 0; i < gap; ++i, k = next_at(k)) s.counts_[k] = 0;
      });
    return d;
  }
  // Walk forward sub-window by sub-window as the oldest ones leave: at
  // sub-window j + m, the slot of j + m (it held j + m − N) is out.
  std::int64_t held = in_window;
  std::size_t k = next_at(slot_at(j));
  std::int64_t m = 1;
  for (;; ++m, k = next_at(k)) {
    held -= s.counts_[k];
    if (cost <= r_.limit - held) break;
  }
  d.retry_after = detail::until((static_cast<i128>(j) + m) * width_, now);
  return d;
}

decision sliding_buckets::peek(const state& s, tick now, std::int64_t cost) const noexcept {
  return answer(s, scan_of(s, now), now, cost);
}

decision sliding_buckets::decide_wide(state& s, tick now, std::int64_t cost) const noexcept {
  using detail::i128;
  std::int64_t j = static_cast<std::int64_t>(detail::floor_div(now, width_));
  if (s.total_ > 0 && j < s.newest_) j = s.newest_;  // a clock that steps back is read as the latest admit
  const auto slot = [&](i128 sub) { return static_cast<std::size_t>(detail::floor_mod(sub, n_)); };
  // Units in the sub-windows that have left the window [j − N + 1, j].
  const i128 gap = static_cast<i128>(j) - s.newest_;
  std::int64_t in_window = 0;
  if (s.total_ > 0 && gap < n_) {
    in_window = s.total_;
    for (i128 sub = static_cast<i128>(s.newest_) - n_ + 1; sub <= static_cast<i128>(j) - n_; ++sub)
      in_window -= s.counts_[slot(sub)];
  }
  decision d;
  if (count_answer(d, s, j, in_window, cost, now)) {
    if (d.allowed)
      add_admit(s, j, slot(j), in_window, cost, [&] {
        for (i128 sub = static_cast<i128>(s.newest_) + 1; sub <= j; ++sub) s.counts_[slot(sub)] = 0;
      });
    return d;
  }
  // Walk forward sub-window by sub-window as the oldest ones leave.
  std::int64_t held = in_window;
  i128 at = static_cast<i128>(j) + 1;
  for (;; ++at) {
    held -= s.counts_[slot(at - n_)];
    if (cost <= r_.limit - held) break;
  }
  d.retry_after = detail::until(at * width_, now);
  return d;
}

std::int64_t sliding_buckets::give_back(state& s, std::int64_t sub, std::int64_t units) const noexcept {
  if (s.total_ == 0 || units < 1 || sub > s.newest_ ||
      static_cast<detail::i128>(sub) <= static_cast<detail::i128>(s.newest_) - n_)
    return 0;
  std::int64_t& count = s.counts_[static_cast<std::size_t>(detail::floor_mod(sub, n_))];
  const std::int64_t back = units < count ? units : count;
  count -= back;
  s.total_ -= back;
  return back;
}

void sliding_buckets::charge(state& s, tick now, std::int64_t cost) const noexcept {
  const std::int64_t limit = r_.limit;
  if (cost < 1 || limit == 0) return;
  const scan sc = scan_of(s, now);
  const auto n = static_cast<std::size_t>(n_);
  if (s.counts_.empty()) s.counts_.assign(n, 0);
  if (sc.in_window == 0) {
    std::fill(s.counts_.begin(), s.counts_.end(), 0);
  } else {
    for (std::size_t k = sc.after_newest, i = 0; i < sc.gap; ++i, k = next_slot(k)) s.counts_[k] = 0;
  }
  s.newest_ = sc.j;
  std::int64_t& here = s.counts_[slot_of(sc.j)];
  const std::int64_t add = std::min(cost, limit - std::min(here, limit));  // a sub-window holds at most L
  here += add;
  // While the newer sub-windows alone hold L units, the oldest non-empty
  // one changes no decision: empty it. In 128 bits (the ring may hold
  // 3L − 1 for a moment); what is kept holds at most 2L − 1.
  detail::i128 total = static_cast<detail::i128>(sc.in_window) + add;
  for (std::size_t k = next_slot(slot_of(sc.j)), i = 0; i + 1 < n; ++i, k = next_slot(k)) {
    if (s.counts_[k] == 0) continue;
    if (total - s.counts_[k] < limit) break;
    total -= s.counts_[k];
    s.counts_[k] = 0;
  }
  s.total_ = static_cast<std::int64_t>(total);
}

receipt receipt_before(const sliding_buckets& p, const sliding_buckets::state&, tick now, std::int64_t cost) noexcept {
  return detail::new_receipt(detail::stamp_of(p), now, cost);
}
void receipt_after(receipt& r, const sliding_buckets&, const sliding_buckets::state& s) noexcept {
  ra::key(r) = s.newest();
}

std::int64_t refund(const sliding_buckets& p, sliding_buckets::state& s, receipt&& rc, tick /*now*/) noexcept {
  receipt r(std::move(rc));
  if (!detail::matches(r, detail::stamp_of(p))) return 0;
  return p.give_back(s, ra::key(r), ra::cost(r));
}

sliding_buckets::state reconfigure(const sliding_buckets& from, const sliding_buckets::state& s,
                                   const sliding_buckets& to, tick now) {
  if (from.limit().window == to.limit().window && from.buckets() == to.buckets()) return decisive(to, s);
  const decision d = from.peek(s, now, 0);  // cost 0: what is in the window
  const i128 in_window = static_cast<i128>(from.limit().limit) - d.remaining;
  if (in_window <= 0) return {};
  // reset_after runs to the end of the window of the latest sub-window that
  // holds units; charge everything to that sub-window's last tick, the
  // latest instant any of them can have been admitted at.
  const i128 width = from.limit().window / from.buckets();
  const i128 latest_end = static_cast<i128>(now) + d.reset_after - from.limit().window + width - 1;
  const tick at = static_cast<tick>(std::clamp<i128>(latest_end, detail::i64_min, detail::i64_max));
  const sliding_buckets big = sliding_buckets::make(rate{max_quantity, to.limit().window}, to.buckets()).value();
  sliding_buckets::state out;
  (void)decide(big, out, at, clamp_units(in_window));
  return decisive(to, out);
}

// ---- its Redis leaf (portable.hpp; src/redis/lua/) ----

template struct portable::window_leaf<sliding_buckets>;

// mode kh kl o L c B W: the sub-window of `now` and its offset.
void portable::of<sliding_buckets>::redis_args(const sliding_buckets& p, const redis_constants&, const redis_call& c,
                                               redis_numbers& out) noexcept {
  const rate r = p.limit();
  const i128 cost = detail::redis_leaf::count_mode(r.limit, r.limit, c, out);
  out.window(c.now, r.window / p.buckets(), 0);
  out.number(r.limit);
  out.number(cost);
  out.number(p.buckets());
  out.number(r.window);
}

}  // namespace sluice
