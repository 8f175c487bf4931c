// The busiest window of a trace, and each limiter's exact worst case over
// all traces on a grid. The derivations are in the comments; the property
// test tests/property/worst_case_test.cpp checks every closed form against
// exhaustive search over all traces on small parameters.
#include "sluice/core/analysis.hpp"

#include <algorithm>
#include <cstddef>

#include "sluice/core/detail/arith.hpp"

namespace sluice {
namespace {

using detail::i128;

/// The window and grid every worst case starts from: a window of V ≥ 1
/// ticks holds at most m + 1 grid points, the first at its start, with
/// m = floor((V − 1) / g).
struct grid {
  bool empty;      // V < 1: no window, no request
  tick step;       // g ≥ 1
  std::int64_t m;  // grid steps after the first point that still fall in the window
};

grid grid_of(tick window2, tick granularity) noexcept {
  const tick g = granularity < 1 ? 1 : granularity;
  if (window2 < 1) return {true, g, 0};
  return {false, g, (window2 - 1) / g};
}

/// Token bucket and GCRA share one answer. Greedy is optimal: tokens held
/// are never worth more later than now (the bucket can only overflow), so
/// start full, spend S at the first point, then at each later point spend
/// every whole token. After the first point fewer than W (in 1/W token)
/// remain, so each step adds Lg to T < W:
///   - Lg ≤ (S − 1)·W: T + Lg < S·W, nothing is lost; m steps pay out
///     floor(m·Lg / W).
///   - else d = Lg − (S − 1)·W > 0. If T + d ≥ W the bucket fills: pay S,
///     T = 0. Otherwise pay S − 1 and T grows by d. So from T = 0 the pay
///     runs S − 1 (q − 1 times), then S, with q = ceil(W / d) — or S every
///     step when d ≥ W.
std::int64_t bucket_worst(rate r, std::int64_t burst, tick window2, tick granularity) noexcept {
  const grid gr = grid_of(window2, granularity);
  if (gr.empty || r.limit == 0) return 0;
  const i128 s = burst;
  const i128 w = r.window;
  const i128 m = gr.m;
  const i128 lg = static_cast<i128>(r.limit) * gr.step;  // ≤ 2^62 · 2^63
  if (lg <= (s - 1) * w) {
    // m·g ≤ V − 1 < 2^63, so (m·g)·L < 2^125: no overflow.
    return detail::clamp_count(s + (m * gr.step) * r.limit / w);
  }
  const i128 d = lg - (s - 1) * w;
  if (d >= w) return detail::clamp_count(s * (m + 1));
  const i128 q = detail::ceil_div(w, d);
  return detail::clamp_count(s + m * (s - 1) + m / q);
}

}  // namespace

busiest_window busiest(std::span<const tick> times, std::span<const bool> admitted, tick window) noexcept {
  busiest_window best;
  if (window < 1) return best;
  const std::size_t n = std::min(times.size(), admitted.size());
  // i walks the admitted requests; j is the first admitted request still
  // within `window` ticks of i; `in` counts admitted requests in [j, i].
  std::size_t j = 0;
  std::int64_t in = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!admitted[i]) continue;
    ++in;
    while (static_cast<i128>(times[i]) - times[j] >= window) {
      if (admitted[j]) --in;
      ++j;
    }
    // j ≤ i here and admitted[j] holds: the loop stops at i at the latest
    // (times[i] − times[i] = 0 < window), and skipping refused requests
    // keeps the earliest admitted one first.
    while (!admitted[j]) ++j;
    if (in > best.most) {
      best.most = in;
      best.start = times[j];
    }
  }
  return best;
}

std::int64_t worst_case(const fixed_window& p, tick window2, tick granularity) noexcept {
  // L in each fixed window that a run of grid points q, q+g, …, q+D
  // (D = m·g) touches. If g > W each point has its own window: m + 1. Else
  // every window between the first and last point holds a grid point, so the
  // count is floor((x + D) / W) − floor(x / W) + 1 with x = q − origin, that
  // is floor(D / W) + 1 + [x mod W + D mod W ≥ W]. Over q ∈ gℤ, x mod W
  // takes the values ≡ −origin (mod G) in [0, W), G = gcd(g, W); the largest
  // is W − G + ρ with ρ = (−origin) mod G < G. D mod W is a multiple of G,
  // so the bracket holds iff D mod W > 0, whatever the origin: the count is
  // ceil(D / W) + 1.
  const grid gr = grid_of(window2, granularity);
  const rate r = p.limit();
  if (gr.empty || r.limit == 0) return 0;
  const i128 l = r.limit;
  const i128 m = gr.m;
  if (gr.step > r.window) return detail::clamp_count(l * (m + 1));
  return detail::clamp_count(l * (detail::ceil_div(m * gr.step, r.window) + 1));
}

std::int64_t worst_case(const sliding_log& p, tick window2, tick granularity) noexcept {
  // Units admitted at grid points less than W apart share a window
  // (t − W, t]. On the grid the next unit can be counted afresh h =
  // ceil(W / g)·g ticks later, and any h ticks of grid points span
  // h − g < W: so at most L per h ticks, and L every h ticks gets exactly
  // that.
  const grid gr = grid_of(window2, granularity);
  const rate r = p.limit();
  if (gr.empty || r.limit == 0) return 0;
  const i128 h = detail::ceil_div(r.window, gr.step) * gr.step;
  return detail::clamp_count(static_cast<i128>(r.limit) * ((static_cast<i128>(window2) - 1) / h + 1));
}

std::int64_t worst_case(const token_bucket& p, tick window2, tick granularity) noexcept {
  return bucket_worst(p.limit(), p.burst(), window2, granularity);
}

std::int64_t worst_case(const gcra& p, tick window2, tick granularity) noexcept {
  return bucket_worst(p.limit(), p.burst(), window2, granularity);
}

}  // namespace sluice
