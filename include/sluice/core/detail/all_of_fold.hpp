// The one all_of fold: how the decisions of an all_of's parts — a
// composite's parts (compose.cpp), or a request's checks in the keyed store
// (keyed.hpp, try_acquire_all_at) and the Redis store (store.hpp) — make the
// whole's decision (semantics.md, "Composition"):
//
// - admitted iff every part admits; then `remaining` is the least of the
//   parts' (after their consumption), `part` the first part holding it,
//   `reset_after` and `release_after` the largest;
// - denied otherwise; then `retry_after` is the largest wait of a part that
//   denies (`part` the first holding it), and `remaining` and `reset_after`
//   are read on the parts as they are (nothing consumed): the least
//   remaining and the largest reset; `release_after` is 0.
//
// Included by the core, the keyed store and the Redis store, so that all
// three decide by one rule; not part of the API.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sluice/core/decision.hpp"
#include "sluice/core/detail/arith.hpp"

namespace sluice::detail {

class all_of_fold {
 public:
  /// Part `k` would admit, with the figures `d` after its consumption.
  void admit(std::int32_t k, const decision& d) noexcept {
    if (!out_.allowed) return;
    if (out_.part < 0 || d.remaining < out_.remaining) {
      out_.remaining = d.remaining;
      out_.part = k;
    }
    out_.reset_after = std::max(out_.reset_after, d.reset_after);
    out_.release_after = std::max(out_.release_after, d.release_after);
  }

  /// Part `k` denies, waiting `d.retry_after`.
  void deny(std::int32_t k, const decision& d) noexcept {
    if (out_.allowed || d.retry_after > out_.retry_after) {
      out_.retry_after = d.retry_after;
      out_.part = k;
    }
    out_.allowed = false;
  }

  /// The whole is denied though no part's wait is known (every part that
  /// denies was told only that the request is).
  void mark_denied() noexcept {
    if (out_.allowed) out_.part = -1;
    out_.allowed = false;
  }

  /// A part's figures as it is, unconsumed: what a denied whole reports.
  void as_is(std::int64_t remaining, tick reset_after) noexcept {
    remaining_as_is_ = std::min(remaining_as_is_, remaining);
    reset_as_is_ = std::max(reset_as_is_, reset_after);
  }

  /// The least remaining and the largest reset of the parts as they are.
  [[nodiscard]] std::int64_t remaining_as_is() const noexcept { return remaining_as_is_; }
  [[nodiscard]] tick reset_as_is() const noexcept { return reset_as_is_; }

  /// The whole's decision (a denied one reads the parts' figures as they are).
  [[nodiscard]] decision result() const noexcept {
    decision d = out_;
    if (!d.allowed) {
      d.remaining = remaining_as_is_;
      d.reset_after = reset_as_is_;
      d.release_after = 0;
    }
    return d;
  }

 private:
  decision out_{true, i64_max, 0, 0, 0, -1};
  std::int64_t remaining_as_is_ = i64_max;
  tick reset_as_is_ = 0;
};

}  // namespace sluice::detail
