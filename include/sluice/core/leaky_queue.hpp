// The leaky bucket as a queue (a shaper, as nginx without `nodelay`), here as
// a meter: admitted units leave in arrival order, one every W/L ticks, and at
// most Q units wait at once. Each admit says when its last unit leaves
// (`release_after`). The FIFO container that holds the items is built on this.
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

/// The policy of the leaky queue: drains L per W, holds up to Q units.
class leaky_queue {
 public:
  /// Its name on the command line and in policy expressions.
  static constexpr std::string_view name = "leaky-queue";
  /// Whether its state owns memory (then `peek` reads it in place;
  /// otherwise a peek decides on a copy).
  static constexpr bool owns_memory = false;
  /// The options a policy expression may give it ("" for none).
  static constexpr std::string_view options = "queue=N";

  /// The release time of the last admitted unit scaled by L, and the instant
  /// of the latest admit. Trivially copyable; fresh is `state{}`.
  struct state {
    detail::i128 release = detail::minus_infinity;  ///< R
    tick last = detail::i64_min;
    friend constexpr bool operator==(const state&, const state&) = default;
  };

  /// Builds the policy. Errors name "limit", "window" or "queue" (1 to 2^62).
  static result<leaky_queue> make(rate r, std::int64_t queue);
  /// Builds the policy a spec describes (any.hpp: make_policy); the error
  /// names the field.
  static result<leaky_queue> from_spec(const spec& s);

  [[nodiscard]] constexpr rate limit() const noexcept { return r_; }
  [[nodiscard]] constexpr std::int64_t queue() const noexcept { return queue_; }

  /// Units still in the queue at `t` (a unit released at `t` still counts).
  [[nodiscard]] constexpr detail::i128 in_queue(const state& s, tick t) const noexcept {
    const detail::i128 tl = static_cast<detail::i128>(t) * r_.limit;
    return s.release < tl ? 0 : (s.release - tl) / r_.window + 1;
  }

 private:
  constexpr leaky_queue(rate r, std::int64_t queue) noexcept
      : r_(r),
        queue_(queue),
        per_window_(r.window),
        per_limit_(r.limit > 0 ? r.limit : 1),
        narrow_(r.limit > 0 && (static_cast<detail::i128>(queue) + 1) * r.window <= (detail::i128{1} << 62)) {}
  friend constexpr decision decide(const leaky_queue& p, state& s, tick now, std::int64_t cost) noexcept;

  rate r_;
  std::int64_t queue_;
  detail::divisor per_window_;  // W
  detail::divisor per_limit_;   // L (1 when L = 0, unused then)
  bool narrow_;                 // L >= 1 and (Q + 1)·W <= 2^62: decide() can work in 64 bits
};

namespace detail {
/// decide() for any policy and any state, in 128-bit arithmetic.
constexpr decision decide_wide(const leaky_queue& p, leaky_queue::state& s, tick now, std::int64_t cost) noexcept {
  using detail::i128;
  const rate r = p.limit();
  const tick e = detail::max64(now, s.last);
  decision d;
  if (r.limit == 0) {
    d.retry_after = never;
    return d;
  }
  const i128 held = p.in_queue(s, e);
  d.remaining = detail::clamp_count(p.queue() - held);
  // Fresh once a new unit would leave on arrival (R + W ≤ t·L), which can be
  // later than the moment the queue empties (R < t·L).
  d.reset_after = detail::until(detail::ceil_div(s.release + r.window, r.limit), now);
  if (cost < 1 || cost > p.queue()) {
    d.retry_after = never;
    return d;
  }
  if (held + cost <= p.queue()) {
    const i128 el = static_cast<i128>(e) * r.limit;
    const i128 first = s.release + r.window > el ? s.release + r.window : el;
    s.release = first + static_cast<i128>(cost - 1) * r.window;
    s.last = e;
    d.allowed = true;
    d.remaining = detail::clamp_count(p.queue() - p.in_queue(s, e));
    d.reset_after = detail::until(detail::ceil_div(s.release + r.window, r.limit), now);
    d.release_after = detail::until(detail::ceil_div(s.release, r.limit), now);
    return d;
  }
  const i128 room = static_cast<i128>(p.queue() - cost) * r.window;
  d.retry_after = detail::until(detail::floor_div(s.release - room, r.limit) + 1, now);
  return d;
}
}  // namespace detail

/// Decides one request: admits iff in_queue + cost ≤ Q, then
/// R = max(now·L, R + W) + (cost − 1)·W.
constexpr decision decide(const leaky_queue& p, leaky_queue::state& s, tick now, std::int64_t cost) noexcept {
  // The common case in 64 bits, as for GCRA: a policy with (Q + 1)·W ≤
  // 2^62, a cost the queue can hold, and a last release at most Q·W ahead
  // of e·L. Every quantity is then an offset a = R − e·L from e·L (a queue
  // drained for a unit's time or more, or fresh, counts as a = −W), and
  // every instant is e plus ceil or floor of an offset over L. Anything
  // else is decide_wide().
  const rate r = p.limit();
  const tick e = detail::max64(now, s.last);
  const detail::i128 el = static_cast<detail::i128>(e) * r.limit;
  const detail::i128 ahead = s.release - el;
  if (!p.narrow_ || cost < 1 || cost > p.queue_ || ahead > static_cast<detail::i128>(p.queue_) * r.window) [[unlikely]]
    return detail::decide_wide(p, s, now, cost);
  const auto w = static_cast<std::uint64_t>(r.window);
  const auto q = static_cast<std::uint64_t>(p.queue_);
  // R + W − e·L, when the next unit would leave after e: in (0, (Q + 1)·W].
  const std::uint64_t aw =
      ahead <= -r.window ? 0 : static_cast<std::uint64_t>(static_cast<std::int64_t>(ahead) + r.window);
  const std::uint64_t held = aw < w ? 0 : p.per_window_.div(aw - w) + 1;  // floor(a / W) + 1 for a ≥ 0
  decision d;
  if (held + static_cast<std::uint64_t>(cost) <= q) {
    const std::uint64_t after = aw + static_cast<std::uint64_t>(cost - 1) * w;  // R' − e·L
    s.release = el + static_cast<detail::i128>(after);
    s.last = e;
    d.allowed = true;
    d.remaining = static_cast<std::int64_t>(q - (p.per_window_.div(after) + 1));
    d.reset_after = detail::until_after(e, p.per_limit_.ceil(after + w), now);  // ceil((R' + W) / L) − now
    d.release_after = detail::until_after(e, after == 0 ? 0 : p.per_limit_.ceil(after), now);  // ceil(R' / L) − now
    return d;
  }
  d.remaining = held >= q ? 0 : static_cast<std::int64_t>(q - held);      // a = Q·W holds Q + 1
  d.reset_after = detail::until_after(e, p.per_limit_.ceil(aw), now);     // ceil((R + W) / L) − now
  const std::uint64_t room = (q - static_cast<std::uint64_t>(cost)) * w;  // a − room ≥ 0: the queue is too full
  d.retry_after = detail::until_after(e, p.per_limit_.div(aw - w - room) + 1, now);
  return d;
}

// ---- leaky_queue: its part of the operations over any policy (src/core/leaky_queue.cpp) ----

/// Charges `cost` at `now` whatever the limit says (report.hpp), within
/// the bounds semantics.md states ("Reports"); a cost < 1 changes nothing.
void charge(const leaky_queue& p, leaky_queue::state& s, tick now, std::int64_t cost) noexcept;
/// The receipt of an admit of `cost` at `now`, read on the state before
/// the step (refund.hpp: `admit`).
receipt receipt_before(const leaky_queue& p, const leaky_queue::state& s, tick now, std::int64_t cost) noexcept;
/// Completes an admit's receipt from the state the step left.
void receipt_after(receipt& r, const leaky_queue& p, const leaky_queue::state& s) noexcept;
/// Gives back what `r` took, as refund.hpp says for this algorithm, and
/// uses `r` up; returns the units given back.
std::int64_t refund(const leaky_queue& p, leaky_queue::state& s, receipt&& r, tick now) noexcept;
/// The state for `to` that continues `s` (a state of `from`) at `now`
/// (reconfigure.hpp). Pure.
[[nodiscard]] leaky_queue::state reconfigure(const leaky_queue& from, const leaky_queue::state& s,
                                             const leaky_queue& to, tick now) noexcept;
/// Whether a leaky-queue state answers as a fresh one from `now` on: `now`
/// is not before the latest admit and a unit admitted at `now` would leave
/// at once (R + W ≤ now·L), which is later than the moment the queue
/// empties. Pure.
constexpr bool is_fresh(const leaky_queue& p, const leaky_queue::state& s, tick now) noexcept {
  const rate r = p.limit();
  return now >= s.last && s.release + r.window <= static_cast<detail::i128>(now) * r.limit;
}
/// Its policy as a policy expression writes it (policy_expr.hpp).
std::string policy_text(const leaky_queue& p);
/// What its worst case needs of it for `window2` and `granularity` ≥ 1
/// (worst_case.hpp).
worst_case_traits worst_case_traits_of(const leaky_queue& p, tick window2, tick granularity);
/// The figures of its limit that the wire advertises, and what the command
/// asks of it (algorithm.hpp).
limit_figures limit_of(const leaky_queue& p) noexcept;
/// Whether carrying a state of `from` over to `to` may leave it below
/// empty (a debt), which only a non-compact keyed store can hold.
bool may_leave_debt(const leaky_queue& from, const leaky_queue& to) noexcept;

/// The leaky queue's encodings (portable.hpp): its state is the latest admit
/// and the backlog R − last·L, in 1/L tick. A Redis value counts it in units
/// of max(L, 1), so under a limit of 0 (a carried state) it holds the
/// release instant's distance after `last`, where a snapshot holds R itself.
template <>
struct portable::of<leaky_queue> {
  static constexpr std::uint8_t tag = 6;
  static constexpr bool aligned_windows = false;
  static constexpr char letter = 'q';
  /// Its Redis leaf (portable.hpp; src/redis/lua/, its `--! leaf` line).
  static std::optional<error> redis_plan(const leaky_queue& p, redis_constants& k);
  static void redis_args(const leaky_queue& p, const redis_constants& k, const redis_call& c,
                         redis_numbers& out) noexcept;
  static constexpr std::array params{limit_param<leaky_queue>, window_param<leaky_queue>,
                                     param<leaky_queue>{"queue", [](const leaky_queue& p) { return p.queue(); }}};
  static result<leaky_queue> make(const std::array<std::int64_t, 3>& v) {
    return leaky_queue::make(rate{v[0], v[1]}, v[2]);
  }

  struct fields {
    detail::i128 last = 0;
    detail::i128 backlog = 0;
  };
  static constexpr std::int64_t unit(const leaky_queue& p, encoding e) noexcept {
    return e == encoding::redis && p.limit().limit == 0 ? 1 : p.limit().limit;
  }
  static constexpr bool empty(const leaky_queue::state& s) noexcept { return s == leaky_queue::state{}; }
  static constexpr fields to(const leaky_queue& p, const leaky_queue::state& s, encoding e) noexcept {
    return {s.last, s.release - static_cast<detail::i128>(s.last) * unit(p, e)};
  }
  static constexpr leaky_queue::state from(const leaky_queue& p, const fields& f, encoding e) noexcept {
    return {f.last * unit(p, e) + f.backlog, static_cast<tick>(f.last)};
  }
  static constexpr std::array layout{
      field<leaky_queue, fields>{&fields::last, kind::instant},
      field<leaky_queue, fields>{
          &fields::backlog, kind::debt, "leaky-queue backlog",
          [](const leaky_queue& p) {
            return range{
                0, report_debt_bound(p.limit().limit, static_cast<detail::i128>(p.queue()) * p.limit().window - 1)};
          },
          true}};
  static constexpr std::array<std::size_t, 2> redis_order{1, 0};
};

}  // namespace sluice
