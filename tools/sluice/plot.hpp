// An SVG picture of a comparison: one lane per limiter on a shared time
// axis, each request a mark (through or refused), the busiest window shaded.
// Small traces show every request; long ones are binned into columns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/core/time.hpp"

namespace sluice::cli {

/// Collects what the picture needs while a trace streams by, in bounded
/// memory: every request up to `exact_limit`, then counts per time bin.
class plot_recorder {
 public:
  static constexpr std::size_t exact_limit = 3000;
  static constexpr std::size_t bin_count = 600;

  explicit plot_recorder(std::size_t lanes) : lanes_(lanes) {}

  /// Records one request at `t` (non-decreasing) with each lane's verdict.
  void add(tick t, const std::vector<bool>& admitted);

  struct lane_info {
    std::string name;
    std::int64_t through = 0;
    std::int64_t refused = 0;
    std::int64_t busiest = 0;
    tick busiest_start = 0;
    bool over = false;
    bool units = false;  ///< the trace has costs: `busiest` counts units, and says so
  };

  /// Renders the SVG. `title` states the limit; `window` is W in ticks
  /// (nanoseconds).
  [[nodiscard]] std::string render(const std::string& title, tick window, const std::vector<lane_info>& lanes) const;

 private:
  void to_bins();
  void rebin(tick t);

  std::size_t lanes_;
  std::uint64_t count_ = 0;
  // Exact mode.
  std::vector<tick> times_;
  std::vector<std::vector<bool>> admitted_;  // [lane][request]
  // Binned mode: bin i covers [origin_ + i·width_, origin_ + (i+1)·width_).
  bool binned_ = false;
  tick origin_ = 0;
  tick width_ = 1;
  std::vector<std::vector<std::int64_t>> through_;  // [lane][bin]
  std::vector<std::vector<std::int64_t>> refused_;  // [lane][bin]
  tick first_ = 0;
  tick last_ = 0;
};

}  // namespace sluice::cli
