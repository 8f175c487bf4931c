// The worst case of every algorithm and composite, and a witness trace.
//
// The closed forms (quota, leaky queue, the bucketed window on a fine grid)
// are derived next to their code; the search is the greedy engine below. The
// proofs are in docs/worst-case.md; tests/property/worst_case_all_test.cpp
// checks every answer against exhaustive search over all traces on small
// parameters, and every witness by replaying it through the real limiter.
#include "sluice/core/worst_case.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>
#include <variant>

#include "sluice/core/detail/arith.hpp"

namespace sluice {
namespace {

using detail::i128;
using detail::i64_max;

/// Capacity of a limiter that admits without bound (always-allow).
constexpr std::int64_t unbounded = i64_max;
/// "Never" for instants kept in 128 bits.
constexpr i128 no_time = static_cast<i128>(1) << 100;
/// The largest period or instant the alignment search works with: every sum
/// of two of them and of a window2 still fits comfortably in 128 bits, and a
/// start in (−2^62, 0] keeps start + window2 within int64.
constexpr i128 max_span = static_cast<i128>(1) << 62;

std::int64_t sat_add(std::int64_t a, std::int64_t b) noexcept { return a > i64_max - b ? i64_max : a + b; }

/// lcm(a, b) for a, b ≥ 1, or a value above `max_span` when it exceeds it.
i128 lcm_capped(i128 a, i128 b) noexcept {
  const i128 q = a / detail::gcd(a, b);
  if (q > max_span / b + 1) return max_span + 1;
  const i128 l = q * b;
  return l > max_span ? max_span + 1 : l;
}

/// The inverse of a modulo n (n ≥ 1, gcd(a, n) = 1), in [0, n).
i128 inverse_mod(i128 a, i128 n) noexcept {
  if (n == 1) return 0;
  i128 t = 0, nt = 1, r = n, nr = detail::floor_mod(a, n);
  while (nr != 0) {
    const i128 q = r / nr;
    const i128 t2 = t - q * nt;
    t = nt;
    nt = t2;
    const i128 r2 = r - q * nr;
    r = nr;
    nr = r2;
  }
  return detail::floor_mod(t, n);
}

// ---- closed forms ----

/// The exact closed form of `p`, where there is one: a single algorithm's
/// own (its worst_case_traits_of); a composite has none.
std::optional<std::int64_t> closed_form(const any_policy& p, tick window2, tick g) {
  return std::visit(
      [&](const auto& pol) -> std::optional<std::int64_t> {
        using P = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          return std::nullopt;
        } else {
          return worst_case_traits_of(pol, window2, g).exact;
        }
      },
      p);
}

// ---- the greedy engine, over any policy ----
//
// Three questions about a limiter in state s at instant t, for requests of
// cost 1: how many in a row it admits now (capacity), admitting that many
// (take), and the earliest instant ≥ t at which it admits one (next). A
// plain limiter answers them with its own step function: a request of cost
// INT64_MAX is always denied (no limit exceeds 2^62), and a denial changes
// no state but reports `remaining`; a denied cost 1 reports the exact
// `retry_after`. Composites combine their parts' answers exactly as their
// step functions do, unit by unit: all_of admits a unit iff every part does
// (capacity: the least), any_of gives each unit to the first part that
// admits it (capacity: the sum). Since every part only gets more permissive
// as time passes, all_of's next instant is the latest of its parts', and
// any_of's the earliest.

std::int64_t capacity(const any_policy& p, any_state& s, tick t) noexcept;
std::int64_t capacity_of(const all_of& p, all_of_state& s, tick t) noexcept {
  std::int64_t c = unbounded;
  for (std::size_t i = 0; i < p.parts().size() && c > 0; ++i) c = std::min(c, capacity(p.parts()[i], s.parts[i], t));
  return c;
}
std::int64_t capacity_of(const any_of& p, any_of_state& s, tick t) noexcept {
  std::int64_t c = 0;
  for (std::size_t i = 0; i < p.parts().size(); ++i) c = sat_add(c, capacity(p.parts()[i], s.parts[i], t));
  return c;
}
std::int64_t capacity_of(const always_allow&, always_allow::state&, tick) noexcept { return unbounded; }
std::int64_t capacity_of(const always_deny&, always_deny::state&, tick) noexcept { return 0; }
template <typename P>
std::int64_t capacity_of(const P& p, typename P::state& s, tick t) noexcept {
  return decide(p, s, t, i64_max).remaining;  // a denial: changes nothing
}
std::int64_t capacity(const any_policy& p, any_state& s, tick t) noexcept {
  return std::visit(
      [&](const auto& pol) -> std::int64_t {
        using P = std::decay_t<decltype(pol)>;
        return capacity_of(pol, *std::get_if<typename P::state>(&s), t);
      },
      p);
}

/// Admits `n` units at t; requires n ≤ capacity(p, s, t).
void take(const any_policy& p, any_state& s, tick t, std::int64_t n) noexcept;
void take_of(const all_of& p, all_of_state& s, tick t, std::int64_t n) noexcept {
  for (std::size_t i = 0; i < p.parts().size(); ++i) take(p.parts()[i], s.parts[i], t, n);
}
void take_of(const any_of& p, any_of_state& s, tick t, std::int64_t n) noexcept {
  for (std::size_t i = 0; i < p.parts().size() && n > 0; ++i) {
    const std::int64_t k = std::min(n, capacity(p.parts()[i], s.parts[i], t));
    if (k > 0) take(p.parts()[i], s.parts[i], t, k);
    n -= k;
  }
}
void take_of(const always_allow&, always_allow::state&, tick, std::int64_t) noexcept {}
void take_of(const always_deny&, always_deny::state&, tick, std::int64_t) noexcept {}
template <typename P>
void take_of(const P& p, typename P::state& s, tick t, std::int64_t n) noexcept {
  (void)decide(p, s, t, n);  // admitted: n units at once decide as n units one by one
}
void take(const any_policy& p, any_state& s, tick t, std::int64_t n) noexcept {
  std::visit(
      [&](const auto& pol) {
        using P = std::decay_t<decltype(pol)>;
        take_of(pol, *std::get_if<typename P::state>(&s), t, n);
      },
      p);
}

/// The earliest instant ≥ t at which one unit is admitted, or no_time.
i128 next_time(const any_policy& p, any_state& s, tick t) noexcept;
i128 next_of(const all_of& p, all_of_state& s, tick t) noexcept {
  i128 at = t;
  for (std::size_t i = 0; i < p.parts().size() && at < no_time; ++i)
    at = std::max(at, next_time(p.parts()[i], s.parts[i], t));
  return at;
}
i128 next_of(const any_of& p, any_of_state& s, tick t) noexcept {
  i128 at = no_time;
  for (std::size_t i = 0; i < p.parts().size() && at > t; ++i)
    at = std::min(at, next_time(p.parts()[i], s.parts[i], t));
  return at;
}
i128 next_of(const always_allow&, always_allow::state&, tick t) noexcept { return t; }
i128 next_of(const always_deny&, always_deny::state&, tick) noexcept { return no_time; }
template <typename P>
i128 next_of(const P& p, typename P::state& s, tick t) noexcept {
  if (capacity_of(p, s, t) > 0) return t;
  const decision d = decide(p, s, t, 1);  // denied: changes nothing
  return d.retry_after == never ? no_time : static_cast<i128>(t) + d.retry_after;
}
i128 next_time(const any_policy& p, any_state& s, tick t) noexcept {
  return std::visit(
      [&](const auto& pol) -> i128 {
        using P = std::decay_t<decltype(pol)>;
        return next_of(pol, *std::get_if<typename P::state>(&s), t);
      },
      p);
}

// ---- what the search needs to know about a policy ----

/// A family of window boundaries origin + k·period.
struct boundaries {
  i128 period;
  i128 origin;  // in [0, period)
  friend bool operator==(const boundaries&, const boundaries&) = default;
};

struct shape {
  std::vector<boundaries> windows;  // of the parts that count in windows (and can admit)
  bool refills = false;             // a part whose room grows continuously (bucket, GCRA, log, queue)
};

void shape_of(const any_policy& p, tick window2, tick g, shape& out) {
  std::visit(
      [&](const auto& pol) {
        using P = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          for (const auto& part : pol.parts()) shape_of(part, window2, g, out);
        } else {
          const worst_case_traits t = worst_case_traits_of(pol, window2, g);
          if (t.period > 0) {
            const boundaries b{t.period, detail::floor_mod(t.origin, t.period)};
            if (std::find(out.windows.begin(), out.windows.end(), b) == out.windows.end()) out.windows.push_back(b);
          }
          if (t.refills) out.refills = true;
        }
      },
      p);
}

/// Whether greedy from a fresh state is optimal for `p` at every fixed start
/// (docs/worst-case.md): every plain limiter, and all_of over such policies
/// ("earlier is never worse" holds part by part).
bool earlier_never_worse(const any_policy& p) {
  if (const auto* a = std::get_if<all_of>(&p))
    return std::all_of(a->parts().begin(), a->parts().end(), earlier_never_worse);
  return !std::holds_alternative<any_of>(p);
}

/// ... and any_of over policies for which greedy is optimal: each part's
/// share is at most its own greedy count, and greedy gives every part its
/// own greedy trace.
bool greedy_is_optimal(const any_policy& p) {
  if (const auto* a = std::get_if<any_of>(&p))
    return std::all_of(a->parts().begin(), a->parts().end(), greedy_is_optimal);
  return earlier_never_worse(p);
}

// ---- the search ----

class search {
 public:
  search(const any_policy& p, tick window2, tick g, const worst_case_limits& lim)
      : p_(p), v_(window2), g_(g), lim_(lim) {
    shape_of(p, window2, g, shape_);
    lazy_ = !shape_.refills && !shape_.windows.empty();
  }

  /// Admit at the earliest instants (the natural witness) instead of at
  /// each cell's last grid point; the same count either way.
  void eager() noexcept { lazy_ = false; }

  /// Greedy from a fresh state at s: how many units it gets admitted in
  /// [s, s + V). Records the trace in `rec` if given (then `complete` says
  /// whether all of it was recorded and run).
  std::int64_t run(tick s, std::vector<witness_point>* rec = nullptr, bool* complete = nullptr) {
    const i128 end = static_cast<i128>(s) + v_;
    any_state st = fresh_state(p_);
    i128 t = s;
    std::int64_t total = 0;
    for (;;) {
      if (steps_ >= lim_.max_steps) {
        out_of_steps_ = true;
        if (complete != nullptr) *complete = false;
        break;
      }
      ++steps_;
      const tick now = static_cast<tick>(t);
      const std::int64_t c = capacity(p_, st, now);
      if (c > 0) {
        if (rec != nullptr) {
          if (static_cast<std::int64_t>(rec->size()) < lim_.max_witness_points) {
            rec->push_back({now, c});
          } else {
            *complete = false;
          }
        }
        if (c == unbounded) return unbounded;
        take(p_, st, now, c);
        total = sat_add(total, c);
      }
      const i128 nt = next_time(p_, st, now);
      if (nt >= no_time) break;
      i128 at = s + detail::ceil_div(nt - s, g_) * g_;  // nt > t: the grid point at or after it
      if (at >= end) break;
      if (lazy_) {
        // With no part that refills, room only changes at window boundaries
        // or grows within a cell (the counter's previous window fading):
        // taking everything at the cell's last grid point admits exactly
        // what greedy admits over the cell and leaves the same state, in
        // one step instead of one per admission.
        i128 boundary = no_time;
        for (const auto& w : shape_.windows)
          boundary = std::min(boundary, w.origin + (detail::floor_div(at - w.origin, w.period) + 1) * w.period);
        at = std::min(s + detail::floor_div(boundary - 1 - s, g_) * g_, s + detail::floor_div(end - 1 - s, g_) * g_);
      }
      t = at;  // < end ≤ INT64_MAX: callers keep s + V representable
    }
    return total;
  }

  /// Tries start s (skipped unless s + V is representable); keeps the best.
  void try_start(i128 s) {
    if (s < -max_span || s + v_ > i64_max || s > i64_max) return;
    const std::int64_t got = run(static_cast<tick>(s));
    if (got > best_) {
      best_ = got;
      best_start_ = static_cast<tick>(s);
    }
  }

  [[nodiscard]] bool out_of_steps() const noexcept { return out_of_steps_; }
  [[nodiscard]] std::int64_t best() const noexcept { return best_; }
  [[nodiscard]] tick best_start() const noexcept { return best_start_; }

 private:
  const any_policy& p_;
  tick v_;
  tick g_;
  const worst_case_limits& lim_;
  shape shape_;
  bool lazy_ = false;  // jump to each cell's last grid point (see run)
  std::int64_t steps_ = 0;
  bool out_of_steps_ = false;
  std::int64_t best_ = -1;
  tick best_start_ = 0;
};

/// The last grid point before b, and the first at or after it.
i128 grid_before(i128 b, tick g) noexcept { return detail::floor_div(b - 1, g) * g; }
i128 grid_from(i128 b, tick g) noexcept { return detail::ceil_div(b, g) * g; }

/// The start closest before a boundary of `w` that any grid point gets:
/// b − s = δ with δ the least value ≡ origin (mod gcd(period, g)) in [1, g],
/// brought into (−lcm(period, g), 0]. (When the grid is no coarser than the
/// windows, this is the best start for a fixed window or bucketed window
/// alone.) Returns the start and its boundary, or nothing if unrepresentable.
std::optional<std::pair<i128, i128>> closest_start(const boundaries& w, tick g) {
  const i128 big_g = detail::gcd<i128>(w.period, g);
  const i128 delta = detail::floor_mod(w.origin - 1, big_g) + 1;
  const i128 g1 = g / big_g;
  const i128 p1 = w.period / big_g;
  // k·period ≡ δ − origin (mod g), divided through by gcd(period, g).
  const i128 r = detail::floor_mod((delta - w.origin) / big_g, g1);
  const i128 k = detail::floor_mod(r * inverse_mod(p1, g1), g1);  // r, inverse < g1 < 2^63
  const i128 b = w.origin + k * w.period;                         // < 2^126
  const i128 period = w.period * g1;                              // lcm(period, g)
  const i128 s = b - delta;
  const i128 shift = detail::ceil_div(s, period) * period;  // bring s into (−period, 0]
  if (s - shift < -max_span) return std::nullopt;
  return std::make_pair(s - shift, b - shift);
}

/// Starts likely to be good, in the order tried: for each family of windows
/// the closest start before a boundary; 0; the last grid points before and
/// the first at the two boundaries nearest before 0; and, so that a part
/// that refills can fill one window right before it closes, the starts that
/// put each admission of a greedy run from a boundary just before that
/// boundary (up to 512 of them per family, thinned evenly).
std::vector<i128> likely_starts(const any_policy& p, const shape& sh, tick window2, tick g,
                                const worst_case_limits& lim) {
  // In the order tried: the cheap structural guesses first.
  std::vector<i128> out;
  std::set<i128> seen;
  const auto add = [&](i128 start) {
    if (seen.insert(start).second) out.push_back(start);
  };
  for (const auto& w : sh.windows)
    if (const auto best = closest_start(w, g)) add(best->first);
  add(0);
  for (const auto& w : sh.windows) {
    for (i128 k = 1; k <= 2; ++k) {
      const i128 b = w.origin - k * w.period;
      if (b < -max_span) break;
      add(grid_before(b, g));
      add(grid_from(b, g));
    }
  }
  if (!sh.refills) return out;
  for (const auto& w : sh.windows) {
    const auto best = closest_start(w, g);
    if (!best) continue;
    // The run from the boundary: where its admissions fall.
    const i128 from = grid_from(best->second, g);
    if (from + window2 > i64_max) continue;
    worst_case_limits small = lim;
    small.max_steps = std::min<std::int64_t>(lim.max_steps, 1 << 16);
    search ref(p, window2, g, small);
    std::vector<witness_point> pts;
    bool complete = true;
    (void)ref.run(static_cast<tick>(from), &pts, &complete);
    const std::size_t n = pts.size();
    constexpr std::size_t most = 512;
    for (std::size_t i = 0; i < n; ++i) {
      if (n > most && i >= most / 2 && (i * most / n) == ((i + 1) * most / n)) continue;  // thin out long runs
      const i128 offset = static_cast<i128>(pts[i].at) - from;
      add(grid_before(best->second - offset, g));
    }
  }
  return out;
}

/// Every start that can be best, over one joint period of the grid and all
/// windows (docs/worst-case.md): with no part that refills, the last grid
/// point before each boundary (a later start in the same cell is never
/// worse); otherwise every grid point. Nothing if there are more than
/// `most`.
std::optional<std::vector<i128>> all_starts(const shape& sh, tick g, std::int64_t most) {
  if (sh.windows.empty()) return std::vector<i128>{0};
  i128 period = g;
  for (const auto& w : sh.windows) period = lcm_capped(period, w.period);
  if (period > max_span) return std::nullopt;
  i128 cells = 0;
  for (const auto& w : sh.windows) cells += period / w.period;
  const i128 points = period / g;
  std::vector<i128> out;
  if (!sh.refills && cells < points) {
    if (cells > most) return std::nullopt;
    for (const auto& w : sh.windows)
      for (i128 k = 1; k <= period / w.period; ++k) out.push_back(grid_before(w.origin - k * w.period, g));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  } else {
    if (points > most) return std::nullopt;
    for (i128 k = 0; k < points; ++k) out.push_back(-k * g);
  }
  return out;
}

struct found {
  std::int64_t value;
  bool exact;
  tick start;  // of the best greedy trace found
  bool any;    // whether any start was tried
};

/// The search proper, for a policy without a closed form (or, to find the
/// witness of one that has, with `exact` set: `bound` is then its value).
/// `bound` is an upper bound for p; a greedy trace that reaches it proves it.
found search_policy(const any_policy& p, tick window2, tick g, const worst_case_limits& lim, std::int64_t bound,
                    bool exact) {
  shape sh;
  shape_of(p, window2, g, sh);
  search s(p, window2, g, lim);
  for (const i128 start : likely_starts(p, sh, window2, g, lim)) {
    s.try_start(start);
    if (s.best() >= bound || s.out_of_steps()) break;
  }
  if (exact || s.best() >= bound) return {bound, true, s.best_start(), s.best() >= 0};
  bool searched_all = false;
  if (!s.out_of_steps()) {
    if (const auto starts = all_starts(sh, g, lim.max_alignments)) {
      for (const i128 start : *starts) {
        s.try_start(start);
        if (s.best() >= bound || s.out_of_steps()) break;
      }
      searched_all = !s.out_of_steps();
    }
  }
  if (s.best() >= bound) return {bound, true, s.best_start(), true};
  if (searched_all && greedy_is_optimal(p)) return {s.best(), true, s.best_start(), s.best() >= 0};
  return {bound, false, s.best_start(), s.best() >= 0};
}

std::int64_t part_bound(const any_policy& p, tick window2, tick g, const worst_case_limits& lim);

/// An upper bound for a policy without a closed form, from its structure
/// alone: the counter's count is at most L per counter window touched (the
/// estimate is never below curr), the fixed window's count; the bucketed
/// window's formula; all_of: the least of its parts' bounds; any_of: their
/// sum (each admitted unit is taken from one part).
std::int64_t own_bound(const any_policy& p, tick window2, tick g, const worst_case_limits& lim) {
  return std::visit(
      [&](const auto& pol) -> std::int64_t {
        using P = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<P, all_of>) {
          std::int64_t most = unbounded;
          for (const auto& part : pol.parts()) most = std::min(most, part_bound(part, window2, g, lim));
          return most;
        } else if constexpr (std::is_same_v<P, any_of>) {
          std::int64_t sum = 0;
          for (const auto& part : pol.parts()) sum = sat_add(sum, part_bound(part, window2, g, lim));
          return sum;
        } else {
          return worst_case_traits_of(pol, window2, g).bound;  // the algorithm's own
        }
      },
      p);
}

/// The best upper bound sluice knows for `p` as a part of a composite: its
/// own worst case where that is exact, else its structural bound.
std::int64_t part_bound(const any_policy& p, tick window2, tick g, const worst_case_limits& lim) {
  if (const auto c = closed_form(p, window2, g)) return *c;
  const std::int64_t bound = own_bound(p, window2, g, lim);
  if (!std::holds_alternative<all_of>(p) && !std::holds_alternative<any_of>(p))
    return search_policy(p, window2, g, lim, bound, false).value;  // a single algorithm without a closed form
  return bound;
}

}  // namespace

worst_case_bound worst_case(const sliding_counter& p, tick window2, tick granularity) {
  return worst_case(any_policy{p}, window2, granularity);
}

worst_case_bound worst_case(const sliding_buckets& p, tick window2, tick granularity) {
  return worst_case(any_policy{p}, window2, granularity);
}

worst_case_bound worst_case(const all_of& p, tick window2, tick granularity) {
  return worst_case(any_policy{p}, window2, granularity);
}

worst_case_bound worst_case(const any_of& p, tick window2, tick granularity) {
  return worst_case(any_policy{p}, window2, granularity);
}

worst_case_bound worst_case(const any_policy& p, tick window2, tick granularity) {
  const tick g = granularity < 1 ? 1 : granularity;
  if (window2 < 1) return {0, true};
  if (const auto c = closed_form(p, window2, g)) return {*c, true};
  const worst_case_limits lim;
  const found f = search_policy(p, window2, g, lim, own_bound(p, window2, g, lim), false);
  return {f.value, f.exact};
}

worst_case_report worst_case_witness(const any_policy& p, tick window2, tick granularity,
                                     const worst_case_limits& limits) {
  worst_case_report out;
  const tick g = granularity < 1 ? 1 : granularity;
  if (window2 < 1) return out;
  const auto c = closed_form(p, window2, g);
  const found f = c ? search_policy(p, window2, g, limits, *c, true)
                    : search_policy(p, window2, g, limits, own_bound(p, window2, g, limits), false);
  out.value = f.value;
  out.exact = f.exact;
  if (!f.any) {
    out.complete = false;
    return out;
  }
  // The witness admits as early as it can; if that takes too many steps,
  // as late in each cell as it can (the same count, fewer steps).
  search s(p, window2, g, limits);
  s.eager();
  out.start = f.start;
  out.reached = s.run(f.start, &out.witness, &out.complete);
  if (!out.complete) {
    search lazy(p, window2, g, limits);
    std::vector<witness_point> w;
    bool complete = true;
    const std::int64_t reached = lazy.run(f.start, &w, &complete);
    if (complete || reached > out.reached) {
      out.witness = std::move(w);
      out.complete = complete;
      out.reached = reached;
    }
  }
  // An exact answer whose witness falls short: no start that reaches it was
  // found among those representable (periods beyond 2^62 ticks).
  if (out.exact && out.reached < out.value) out.complete = false;
  return out;
}

}  // namespace sluice
