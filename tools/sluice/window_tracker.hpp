// The busiest window of a stream of admitted instants, one at a time: the
// streaming form of sluice::busiest, for traces too long to keep.
#pragma once

#include <cstdint>
#include <vector>

#include "sluice/detail/arith.hpp"
#include "sluice/time.hpp"

namespace sluice::cli {

/// Tracks the most admitted requests in any `window` consecutive ticks
/// [s, s + W) and the earliest such s, as the same two pointers as
/// sluice::busiest but keeping only the instants still inside the window.
/// Requires instants in non-decreasing order.
class window_tracker {
 public:
  void add(tick t, tick window) {
    // Drop instants at or before t − W: [s, s + W) cannot hold both.
    while (size_ > 0 && static_cast<detail::i128>(t) - ring_[head_] >= window) {
      head_ = (head_ + 1) & (ring_.size() - 1);
      --size_;
    }
    if (size_ == ring_.size()) grow();
    ring_[(head_ + size_) & (ring_.size() - 1)] = t;
    ++size_;
    if (static_cast<std::int64_t>(size_) > most_) {
      most_ = static_cast<std::int64_t>(size_);
      start_ = ring_[head_];
    }
  }
  [[nodiscard]] std::int64_t most() const noexcept { return most_; }
  /// The start of the busiest window; meaningless while most() is 0.
  [[nodiscard]] tick start() const noexcept { return start_; }

 private:
  void grow() {
    std::vector<tick> bigger(ring_.empty() ? 4 : ring_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(bigger);
    head_ = 0;
  }
  std::vector<tick> ring_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  std::int64_t most_ = 0;
  tick start_ = never;
};

}  // namespace sluice::cli
