// The busiest window of a stream of admitted instants, one at a time: the
// streaming form of sluice::busiest, for traces too long to keep, counting
// units of cost (the limit is in units).
#pragma once

#include <cstdint>
#include <vector>

#include "sluice/core/detail/arith.hpp"
#include "sluice/core/time.hpp"

namespace sluice::cli {

/// Tracks the most admitted units in any `window` consecutive ticks
/// [s, s + W) and the earliest such s, as the same two pointers as
/// sluice::busiest but keeping only the requests still inside the window.
/// Requires instants in non-decreasing order; sums saturate at 2^63 − 1.
class window_tracker {
 public:
  /// Adds an admitted request of `units` (≥ 1) at `t`.
  void add(tick t, std::int64_t units, tick window) {
    // Drop requests at or before t − W: [s, s + W) cannot hold both.
    while (size_ > 0 && static_cast<detail::i128>(t) - ring_[head_].at >= window) {
      in_ -= ring_[head_].units;
      head_ = (head_ + 1) & (ring_.size() - 1);
      --size_;
    }
    if (size_ == ring_.size()) grow();
    ring_[(head_ + size_) & (ring_.size() - 1)] = {t, units};
    ++size_;
    in_ += units;
    const std::int64_t now_in = in_ > detail::i64_max ? detail::i64_max : static_cast<std::int64_t>(in_);
    if (now_in > most_) {
      most_ = now_in;
      start_ = ring_[head_].at;
    }
  }
  /// The most units in any window so far.
  [[nodiscard]] std::int64_t most() const noexcept { return most_; }
  /// The start of the busiest window; meaningless while most() is 0.
  [[nodiscard]] tick start() const noexcept { return start_; }

 private:
  struct entry {
    tick at;
    std::int64_t units;
  };
  void grow() {
    std::vector<entry> bigger(ring_.empty() ? 4 : ring_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(bigger);
    head_ = 0;
  }
  std::vector<entry> ring_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  detail::i128 in_ = 0;  // units in the ring (exact: fewer than 2^64 entries of < 2^63)
  std::int64_t most_ = 0;
  tick start_ = never;
};

}  // namespace sluice::cli
