// The leaky bucket as a queue, with the items in it: a FIFO shaper.
//
// `offer(item, now)` asks the leaky-queue meter (leaky_queue.hpp) whether the
// item's cost fits; if so the item is queued with the instant its last unit
// leaves, else it is rejected with the meter's exact retry_after.
// `drain(now)` hands out the items that are due, in arrival order. A burst
// is therefore accepted up to Q units and released one unit every W/L ticks,
// in the order it arrived: 20 items offered at once to Q = 15 give 15
// accepted, 5 rejected, released one every W/L in submission order.
//
// The decisions are the meter's, exactly, as long as due items are drained
// before each offer (drain(now), then offer(..., now)). Memory is bounded:
// at most Q items are ever held. If a consumer falls behind and leaves due
// items undrained, an offer that would push the held items past Q is turned
// away as `backlogged` (nothing is metered), so the bound holds anyway.
//
// Header-only. Not thread-safe: one thread at a time (or a lock around it).
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "sluice/core/decision.hpp"
#include "sluice/core/leaky_queue.hpp"
#include "sluice/core/schedule.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// A bounded FIFO of items of type `T`, released at the pace of a leaky
/// queue (see the overview). `T` needs only to be movable.
template <typename T>
class leaky_queue_shaper {
 public:
  /// What became of an offered item.
  enum class verdict {
    accepted,    ///< queued; `drain` hands it out from `release_at` on
    rejected,    ///< the meter said no (full, or a cost above Q / L = 0): see `retry_after`
    backlogged,  ///< due items were left undrained and the shaper holds Q items: drain first
  };

  /// The answer to `offer`.
  struct [[nodiscard]] offer_result {
    /// What became of the item.
    verdict status = verdict::rejected;
    /// Accepted: the instant its last unit leaves, from which `drain` hands
    /// it out. Otherwise `never`.
    tick release_at = never;
    /// Rejected: the meter's exact retry_after (ticks from `now`; `never`
    /// for a cost above Q or L = 0). Otherwise 0.
    tick retry_after = 0;
    /// The meter's decision (for a backlogged offer, the default: it was
    /// not metered).
    decision meter;
    /// Whether the item was queued.
    [[nodiscard]] constexpr bool accepted() const noexcept { return status == verdict::accepted; }
  };

  /// An empty shaper metered by `policy`.
  explicit leaky_queue_shaper(leaky_queue policy) noexcept : policy_(policy) {}

  /// Offers `item` of `cost` units (≥ 1) at `now`; moves from `item` only
  /// if it is accepted.
  offer_result offer(T&& item, tick now, std::int64_t cost = 1) { return put(std::move(item), now, cost); }
  /// Offers a copy of `item`; copies it only if it is accepted.
  offer_result offer(const T& item, tick now, std::int64_t cost = 1) { return put(item, now, cost); }

  /// Hands out every item whose release instant is ≤ `now`, oldest first.
  std::vector<T> drain(tick now) {
    std::vector<T> out;
    while (!items_.empty() && items_.front().release_at <= now) {
      out.push_back(std::move(items_.front().item));
      items_.pop_front();
    }
    return out;
  }

  /// Items held (due or not), at most Q.
  [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }
  /// Whether no item is held.
  [[nodiscard]] bool empty() const noexcept { return items_.empty(); }
  /// The release instant of the oldest item held, `never` if none.
  [[nodiscard]] tick next_release() const noexcept { return items_.empty() ? never : items_.front().release_at; }
  /// The earliest instant ≥ `now` at which an offer of `cost` would be
  /// accepted if nothing else happens (and due items are drained), or
  /// `never`.
  [[nodiscard]] tick next_offer_at(tick now, std::int64_t cost = 1) const noexcept {
    return next_allowed_at(policy_, meter_, now, cost);
  }
  /// The meter's policy.
  [[nodiscard]] const leaky_queue& policy() const noexcept { return policy_; }
  /// The meter's state.
  [[nodiscard]] const leaky_queue::state& meter_state() const noexcept { return meter_; }

 private:
  struct held {
    T item;
    tick release_at;
  };

  template <typename U>
  offer_result put(U&& item, tick now, std::int64_t cost) {
    offer_result out;
    leaky_queue::state next = meter_;
    const decision d = decide(policy_, next, now, cost);
    if (!d.allowed) {
      out.meter = d;
      out.retry_after = d.retry_after;
      return out;
    }
    // The meter would admit; refuse only if undrained items already fill
    // the memory bound (never the case when due items are drained first:
    // then every held item still has a unit the meter counts).
    if (static_cast<std::int64_t>(items_.size()) >= policy_.queue()) {
      out.status = verdict::backlogged;
      return out;
    }
    meter_ = next;
    out.meter = d;
    out.status = verdict::accepted;
    const tick after = out.meter.release_after;  // until ceil(R/L); saturated only past INT64_MAX
    out.release_at = (after == never || now > never - after) ? never : now + after;
    items_.push_back(held{T(std::forward<U>(item)), out.release_at});
    return out;
  }

  leaky_queue policy_;
  leaky_queue::state meter_{};
  std::deque<held> items_;
};

}  // namespace sluice
