// The bounds a report may take a state to (semantics.md, "Reports"): what
// the report steps saturate at, and what every encoding of a state
// (portable.hpp) reads back. Apart from report.hpp so that an algorithm's
// header can name them beside its state.
#pragma once

#include <cstdint>

#include "sluice/core/detail/arith.hpp"
#include "sluice/core/rate.hpp"

namespace sluice {

/// The most a token bucket's `spent`, a GCRA's debt `u − last·L` or a leaky
/// queue's backlog `R − last·L` may hold after reports, given the most an
/// admit leaves (`normal`: S·W; the queue's Q·W − 1): max(normal,
/// min(2^52·L − 1, 2^63 − 1)) — a debt of at most 2^52 ticks, within 63
/// bits (semantics.md, "Reports"). The stores' checks of a state read it.
constexpr detail::i128 report_debt_bound(std::int64_t limit, detail::i128 normal) noexcept {
  const detail::i128 longest = (static_cast<detail::i128>(1) << 52) * limit - 1;
  const detail::i128 capped = longest < detail::i64_max ? longest : detail::i128{detail::i64_max};
  return normal > capped ? normal : capped;
}

/// The most a sliding window counter's `curr` (and so `prev`) may hold
/// after reports: min(L·W, 2^52) (what a Redis store holds exactly), and at
/// least L.
constexpr std::int64_t report_count_bound(rate r) noexcept {
  const detail::i128 lw = static_cast<detail::i128>(r.limit) * r.window;
  const detail::i128 top = static_cast<detail::i128>(1) << 52;
  const detail::i128 cap = lw < top ? lw : top;
  return static_cast<std::int64_t>(cap > r.limit ? cap : detail::i128{r.limit});
}

}  // namespace sluice
