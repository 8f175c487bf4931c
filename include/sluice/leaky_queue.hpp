// The leaky bucket as a queue (a shaper, as nginx without `nodelay`), here as
// a meter: admitted units leave in arrival order, one every W/L ticks, and at
// most Q units wait at once. Each admit says when its last unit leaves
// (`release_after`). The FIFO container that holds the items is built on this.
#pragma once

#include <cstdint>

#include "sluice/decision.hpp"
#include "sluice/detail/arith.hpp"
#include "sluice/rate.hpp"
#include "sluice/result.hpp"
#include "sluice/time.hpp"

namespace sluice {

/// The policy of the leaky queue: drains L per W, holds up to Q units.
class leaky_queue {
 public:
  /// The release time of the last admitted unit scaled by L, and the instant
  /// of the latest admit. Trivially copyable; fresh is `state{}`.
  struct state {
    detail::i128 release = detail::minus_infinity;  ///< R
    tick last = detail::i64_min;
    friend constexpr bool operator==(const state&, const state&) = default;
  };

  /// Builds the policy. Errors name "limit", "window" or "queue" (1 to 2^62).
  static result<leaky_queue> make(rate r, std::int64_t queue);

  [[nodiscard]] constexpr rate limit() const noexcept { return r_; }
  [[nodiscard]] constexpr std::int64_t queue() const noexcept { return queue_; }

  /// Units still in the queue at `t` (a unit released at `t` still counts).
  [[nodiscard]] constexpr detail::i128 in_queue(const state& s, tick t) const noexcept {
    const detail::i128 tl = static_cast<detail::i128>(t) * r_.limit;
    return s.release < tl ? 0 : (s.release - tl) / r_.window + 1;
  }

 private:
  constexpr leaky_queue(rate r, std::int64_t queue) noexcept : r_(r), queue_(queue) {}
  rate r_;
  std::int64_t queue_;
};

/// Decides one request: admits iff in_queue + cost ≤ Q, then
/// R = max(now·L, R + W) + (cost − 1)·W.
constexpr decision decide(const leaky_queue& p, leaky_queue::state& s, tick now, std::int64_t cost) noexcept {
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

}  // namespace sluice
