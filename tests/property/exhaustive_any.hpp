// Exhaustive search over every trace on a small grid, for any policy
// (plain or composite): the reference the worst-case answers are checked
// against. Slow by design; for small parameters only.
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/time.hpp"

namespace sluice::test {

/// Every trace with requests at grid points 0, g, …, (horizon − 1)·g from a
/// fresh state, any number of requests of cost 1 at each point. A denial
/// changes no state and every later request at the same instant is denied
/// too, so "k requests at a point" only matters up to the first refusal: the
/// search branches on k = 0, 1, … until the limiter refuses. At every point
/// it scores, for every W′ up to `MaxWindow`, the window of W′ ticks that
/// ends there.
template <int MaxWindow>
class exhaustive_any {
 public:
  /// Gives up (see `gave_up`) after `max_nodes` search nodes.
  exhaustive_any(const any_policy& p, tick g, int horizon, std::int64_t max_nodes = INT64_MAX)
      : p_(p), g_(g), admitted_(static_cast<std::size_t>(horizon), 0), max_nodes_(max_nodes) {
    for (int v = 1; v <= MaxWindow; ++v) points_[static_cast<std::size_t>(v)] = (v - 1) / g + 1;
  }

  /// The most admitted in W′ ticks, for W′ = 1 … MaxWindow (index W′).
  std::array<std::int64_t, MaxWindow + 1> run() {
    best_.fill(0);
    dfs(0, fresh_state(p_));
    return best_;
  }

  /// Search nodes visited (to keep the tests' sizes honest).
  [[nodiscard]] std::int64_t nodes() const { return nodes_; }
  /// Whether the search stopped at `max_nodes` (its answer is then partial).
  [[nodiscard]] bool gave_up() const { return nodes_ >= max_nodes_; }

 private:
  void dfs(std::size_t i, any_state st) {
    if (i == admitted_.size() || nodes_ >= max_nodes_) return;
    const tick now = static_cast<tick>(i) * g_;
    for (std::int64_t k = 0;; ++k) {
      ++nodes_;
      admitted_[i] = k;
      for (int v = 1; v <= MaxWindow; ++v) {
        const std::int64_t pts = points_[static_cast<std::size_t>(v)];
        std::int64_t sum = 0;
        for (std::int64_t back = 0; back < pts && back <= static_cast<std::int64_t>(i); ++back)
          sum += admitted_[i - static_cast<std::size_t>(back)];
        auto& b = best_[static_cast<std::size_t>(v)];
        b = std::max(b, sum);
      }
      dfs(i + 1, st);
      if (!decide(p_, st, now, 1).allowed) break;
    }
    admitted_[i] = 0;
  }

  const any_policy& p_;
  tick g_;
  std::vector<std::int64_t> admitted_;
  std::array<std::int64_t, MaxWindow + 1> points_{};
  std::array<std::int64_t, MaxWindow + 1> best_{};
  std::int64_t max_nodes_;
  std::int64_t nodes_ = 0;
};

}  // namespace sluice::test
