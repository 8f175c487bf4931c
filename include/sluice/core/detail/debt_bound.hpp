// The conservative fallback both stores share for a carried GCRA's or token
// bucket's debt (semantics.md, "Overrides"): a compact memory limiter and a
// Redis value hold a debt of at most report_debt_bound, so an override
// change that carries more holds that bound instead, identically in every
// store.
#pragma once

#include <algorithm>

#include "sluice/core/any.hpp"
#include "sluice/core/report.hpp"

namespace sluice::detail {

/// A carried GCRA's or token bucket's debt past what a report may leave
/// (report_debt_bound: 2^52 ticks; a compact limiter holds no more) is held
/// at that bound from the later of its latest admit and the change's
/// instant `now`: the conservative fallback (semantics.md, "Overrides"),
/// never a refusal. Any other state is returned as it is.
inline any_state within_debt_bound(const any_policy& p, any_state s, tick now) {
  if (const auto* g = std::get_if<gcra>(&p)) {
    auto* st = std::get_if<gcra::state>(&s);
    const std::int64_t l = g->limit().limit;
    const detail::i128 bound = report_debt_bound(l, g->tolerance());
    if (st != nullptr && st->last != detail::i64_min && l > 0 &&
        st->u - static_cast<detail::i128>(st->last) * l > bound) {
      st->last = std::max(st->last, now);
      st->u = static_cast<detail::i128>(st->last) * l + bound;
    }
  } else if (const auto* b = std::get_if<token_bucket>(&p)) {
    auto* st = std::get_if<token_bucket::state>(&s);
    const detail::i128 bound = report_debt_bound(b->limit().limit, b->capacity());
    if (st != nullptr && b->limit().limit > 0 && st->spent > bound) {
      st->last = std::max(st->last, now);
      st->spent = bound;
    }
  }
  return s;
}

}  // namespace sluice::detail
