// GCRA, the generic cell rate algorithm (the leaky bucket as a meter): the
// same decisions as a token bucket with the same L, W, S on every trace, kept
// as a theoretical arrival time instead of a token count.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/decision.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/report_bound.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

struct spec;
class receipt;
struct limit_figures;
struct worst_case_traits;

/// The policy of GCRA. Immutable once built.
class gcra {
 public:
  /// Its name on the command line and in policy expressions.
  static constexpr std::string_view name = "gcra";
  /// Whether its state owns memory (then `peek` reads it in place;
  /// otherwise a peek decides on a copy).
  static constexpr bool owns_memory = false;
  /// The options a policy expression may give it ("" for none).
  static constexpr std::string_view options = "burst=N";

  /// The theoretical arrival time scaled by L (`u = tat·L`) and the instant
  /// of the latest admit. Trivially copyable; fresh is `state{}` (u = −∞).
  ///
  /// `last` is kept so that a clock stepping back is read as the latest
  /// admit, as for the token bucket (semantics.md, "Time never runs
  /// backwards"); `u` alone would read it as is, which is never more
  /// permissive but would break decision-for-decision equality with the
  /// token bucket.
  struct state {
    detail::i128 u = detail::minus_infinity;
    tick last = detail::i64_min;
    friend constexpr bool operator==(const state&, const state&) = default;
  };

  /// Builds the policy. Errors name "limit", "window" or "burst".
  static result<gcra> make(rate r, std::int64_t burst);
  /// Builds the policy a spec describes (any.hpp: make_policy); the error
  /// names the field.
  static result<gcra> from_spec(const spec& s);

  [[nodiscard]] constexpr rate limit() const noexcept { return r_; }
  [[nodiscard]] constexpr std::int64_t burst() const noexcept { return burst_; }
  /// S·W, the tolerance in units of 1/L tick.
  [[nodiscard]] constexpr detail::i128 tolerance() const noexcept { return tolerance_; }

 private:
  constexpr gcra(rate r, std::int64_t burst) noexcept
      : r_(r),
        burst_(burst),
        tolerance_(static_cast<detail::i128>(burst) * r.window),
        per_window_(r.window),
        per_limit_(r.limit > 0 ? r.limit : 1),
        narrow_(r.limit > 0 && tolerance_ <= detail::i64_max) {}
  friend constexpr decision decide(const gcra& p, state& s, tick now, std::int64_t cost) noexcept;

  rate r_;
  std::int64_t burst_;
  detail::i128 tolerance_;
  detail::divisor per_window_;  // W
  detail::divisor per_limit_;   // L (1 when L = 0, unused then)
  bool narrow_;                 // L >= 1 and S·W < 2^63: decide() can work in 64 bits
};

namespace detail {
/// decide() for any policy and any state, in 128-bit arithmetic.
constexpr decision decide_wide(const gcra& p, gcra::state& s, tick now, std::int64_t cost) noexcept {
  const rate r = p.limit();
  const tick e = detail::max64(now, s.last);
  const detail::i128 el = static_cast<detail::i128>(e) * r.limit;
  const detail::i128 b = s.u > el ? s.u : el;
  decision d;
  // Tokens held, in 1/W token: S·W − (b − e·L).
  const detail::i128 held = p.tolerance() - (b - el);
  if (cost < 1 || cost > p.burst() || r.limit == 0) {
    d.remaining = r.limit == 0 ? 0 : detail::clamp_count(held / r.window);
    d.retry_after = never;
    d.reset_after = (r.limit == 0 || b == el) ? 0 : detail::until(detail::ceil_div(b, r.limit), now);
    return d;
  }
  const detail::i128 nu = b + static_cast<detail::i128>(cost) * r.window;
  if (nu - el <= p.tolerance()) {
    s.u = nu;
    s.last = e;
    d.allowed = true;
    d.remaining = detail::clamp_count((p.tolerance() - (nu - el)) / r.window);
    d.reset_after = detail::until(detail::ceil_div(nu, r.limit), now);
    return d;
  }
  d.remaining = detail::clamp_count(held / r.window);
  d.retry_after = detail::until(detail::ceil_div(nu - p.tolerance(), r.limit), now);
  d.reset_after = b == el ? 0 : detail::until(detail::ceil_div(b, r.limit), now);
  return d;
}
}  // namespace detail

/// Decides one request: with b = max(u, now·L), admits iff
/// b + cost·W − now·L ≤ S·W, then u = b + cost·W.
constexpr decision decide(const gcra& p, gcra::state& s, tick now, std::int64_t cost) noexcept {
  // The common case in 64 bits: a policy with S·W < 2^63, a cost the burst
  // allows, and a state decide() can reach (0 <= b − e·L <= S·W). Every
  // quantity is then an offset from e·L below 2^64, and the divisions by W
  // and L are reciprocal multiplies, using ceil((e·L + x) / L) = e + ceil(x / L).
  // Anything else, and every decision's reference, is decide_wide().
  const rate r = p.limit();
  const tick e = detail::max64(now, s.last);
  const detail::i128 el = static_cast<detail::i128>(e) * r.limit;
  const detail::i128 ahead = s.u > el ? s.u - el : 0;  // b − e·L
  if (!p.narrow_ || cost < 1 || cost > p.burst_ || ahead > p.tolerance_) [[unlikely]]
    return detail::decide_wide(p, s, now, cost);
  const auto tol = static_cast<std::uint64_t>(p.tolerance_);
  const auto a = static_cast<std::uint64_t>(ahead);
  const std::uint64_t over = a + static_cast<std::uint64_t>(cost * r.window);  // nu − e·L, below 2·S·W
  decision d;
  if (over <= tol) {
    s.u = el + static_cast<detail::i128>(over);
    s.last = e;
    d.allowed = true;
    d.remaining = static_cast<std::int64_t>(p.per_window_.div(tol - over));
    d.reset_after = detail::until_after(e, p.per_limit_.ceil(over), now);  // ceil(nu / L) − now
    return d;
  }
  d.remaining = static_cast<std::int64_t>(p.per_window_.div(tol - a));
  d.retry_after = detail::until_after(e, p.per_limit_.ceil(over - tol), now);      // ceil((nu − S·W) / L) − now
  d.reset_after = a == 0 ? 0 : detail::until_after(e, p.per_limit_.ceil(a), now);  // ceil(b / L) − now
  return d;
}

// ---- gcra: its part of the operations over any policy (src/core/gcra.cpp) ----

/// Charges `cost` at `now` whatever the limit says (report.hpp), within
/// the bounds semantics.md states ("Reports"); a cost < 1 changes nothing.
void charge(const gcra& p, gcra::state& s, tick now, std::int64_t cost) noexcept;
/// The receipt of an admit of `cost` at `now`, read on the state before
/// the step (refund.hpp: `admit`).
receipt receipt_before(const gcra& p, const gcra::state& s, tick now, std::int64_t cost) noexcept;
/// Completes an admit's receipt from the state the step left.
void receipt_after(receipt& r, const gcra& p, const gcra::state& s) noexcept;
/// Gives back what `r` took, as refund.hpp says for this algorithm, and
/// uses `r` up; returns the units given back.
std::int64_t refund(const gcra& p, gcra::state& s, receipt&& r, tick now) noexcept;
/// The state for `to` that continues `s` (a state of `from`) at `now`
/// (reconfigure.hpp). Pure.
[[nodiscard]] gcra::state reconfigure(const gcra& from, const gcra::state& s, const gcra& to, tick now) noexcept;
/// Whether a GCRA state answers as a fresh one from `now` on: `now` is not
/// before the latest admit and the theoretical arrival time is not after
/// `now` (u ≤ now·L). Pure.
constexpr bool is_fresh(const gcra& p, const gcra::state& s, tick now) noexcept {
  return now >= s.last && s.u <= static_cast<detail::i128>(now) * p.limit().limit;
}
/// Its policy as a policy expression writes it (policy_expr.hpp).
std::string policy_text(const gcra& p);
/// What its worst case needs of it for `window2` and `granularity` ≥ 1
/// (worst_case.hpp).
worst_case_traits worst_case_traits_of(const gcra& p, tick window2, tick granularity);
/// The figures of its limit that the wire advertises, and what the command
/// asks of it (algorithm.hpp).
limit_figures limit_of(const gcra& p) noexcept;
/// Whether carrying a state of `from` over to `to` may leave it below
/// empty (a debt), which only a non-compact keyed store can hold.
bool may_leave_debt(const gcra& from, const gcra& to) noexcept;

/// GCRA's encodings (portable.hpp): its state is the latest admit and the
/// debt u − last·L, in 1/L tick (the same Redis letter as the token bucket:
/// one state for both in the library).
template <>
struct portable::of<gcra> : portable::burst_leaf<gcra> {
  static constexpr std::uint8_t tag = 5;
  static constexpr bool aligned_windows = false;
  static constexpr char letter = 'g';
  static constexpr std::array params{limit_param<gcra>, window_param<gcra>,
                                     param<gcra>{"burst", [](const gcra& p) { return p.burst(); }}};
  static result<gcra> make(const std::array<std::int64_t, 3>& v) { return gcra::make(rate{v[0], v[1]}, v[2]); }

  struct fields {
    detail::i128 last = 0;
    detail::i128 debt = 0;
  };
  static constexpr bool empty(const gcra::state& s) noexcept { return s == gcra::state{}; }
  static constexpr fields to(const gcra& p, const gcra::state& s, encoding) noexcept {
    return {s.last, s.u - static_cast<detail::i128>(s.last) * p.limit().limit};
  }
  static constexpr gcra::state from(const gcra& p, const fields& f, encoding) noexcept {
    return {f.last * p.limit().limit + f.debt, static_cast<tick>(f.last)};
  }
  static constexpr std::array layout{
      field<gcra, fields>{&fields::last, kind::instant},
      field<gcra, fields>{&fields::debt, kind::debt, "gcra debt",
                          [](const gcra& p) {
                            return range{0, report_debt_bound(p.limit().limit, p.tolerance())};
                          },
                          true}};
  static constexpr std::array<std::size_t, 2> redis_order{1, 0};

  /// A refunded state as its encodings (and the memory store's cells) hold
  /// it: a refund to before an admit on a full bucket may leave u below
  /// last·L, which every decision reads as last·L (it reads max(u, e·L)
  /// with e ≥ last), so it is held as that, a debt of 0. True when it
  /// changed `s`.
  static constexpr bool settle(const gcra& p, gcra::state& s) noexcept {
    if (s.last == detail::i64_min) return false;
    const detail::i128 floor = static_cast<detail::i128>(s.last) * p.limit().limit;
    if (s.u >= floor) return false;
    s.u = floor;
    return true;
  }
};

}  // namespace sluice
