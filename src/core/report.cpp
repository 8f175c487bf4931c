// Reports: the charges (semantics.md, "Reports") and the figures read
// after them.
#include "sluice/core/report.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>
#include <variant>

#include "sluice/core/detail/arith.hpp"
#include "sluice/core/lease.hpp"

namespace sluice {

namespace {

using detail::i128;

/// The report figures of a plain limiter: the state's room and reset as a
/// decision of cost 0 reads them, the wait of a request of cost 1.
template <typename Policy>
decision leaf_figures(const Policy& p, const typename Policy::state& s, tick now) noexcept {
  return report_answer(peek(p, s, now, 0), peek(p, s, now, 1));
}

/// Until a request of cost 1 would be admitted on `s` at `now`: 0 if it
/// would be now (the report figures' `retry_after`).
template <typename Policy>
tick wait_of_one(const Policy& p, const typename Policy::state& s, tick now) noexcept {
  const decision one = peek(p, s, now, 1);
  return one.allowed ? 0 : one.retry_after;
}

/// all_of's report figures, one part at a time (a composite's parts, a
/// request's checks): the smallest remaining, the largest wait and reset;
/// `part` the longest wait's, else the smallest remaining's.
class all_figures_fold {
 public:
  void add(std::int32_t k, const decision& x) noexcept {
    if (least_ < 0 || x.remaining < d_.remaining) {
      d_.remaining = x.remaining;
      least_ = k;
    }
    if (x.retry_after > d_.retry_after) {
      d_.retry_after = x.retry_after;
      longest_ = k;
    }
    d_.reset_after = std::max(d_.reset_after, x.reset_after);
  }
  [[nodiscard]] decision result() const noexcept {
    decision d = d_;
    d.part = longest_ >= 0 ? longest_ : least_;
    return d;
  }

 private:
  decision d_{true, detail::i64_max, 0, 0, 0, -1};
  std::int32_t least_ = -1;
  std::int32_t longest_ = -1;
};

decision all_figures(std::span<const decision> parts) noexcept {
  all_figures_fold f;
  for (std::size_t i = 0; i < parts.size(); ++i) f.add(static_cast<std::int32_t>(i), parts[i]);
  return f.result();
}

decision figures_of(const any_policy& p, const any_state& s, tick now) noexcept;

template <typename Composite>
decision composite_figures(const Composite& p, const typename Composite::state& s, tick now) noexcept {
  decision d;
  d.allowed = true;
  if constexpr (std::is_same_v<Composite, all_of>) {
    all_figures_fold f;
    for (std::size_t i = 0; i < p.parts().size(); ++i)
      f.add(static_cast<std::int32_t>(i), figures_of(p.parts()[i], s.parts[i], now));
    d = f.result();
  } else {
    d.remaining = 0;
    d.retry_after = never;
    std::int32_t soonest = -1;
    for (std::size_t i = 0; i < p.parts().size(); ++i) {
      const decision x = figures_of(p.parts()[i], s.parts[i], now);
      d.remaining = std::max(d.remaining, x.remaining);
      if (soonest < 0 || x.retry_after < d.retry_after) {
        d.retry_after = x.retry_after;
        soonest = static_cast<std::int32_t>(i);
      }
      d.reset_after = std::max(d.reset_after, x.reset_after);
    }
    d.part = soonest;
  }
  return d;
}

/// `wait_of_one` of whichever algorithm `p` holds.
tick wait_of_one_any(const any_policy& p, const any_state& s, tick now) noexcept {
  return std::visit(
      [&](const auto& pol) -> tick {
        using P = std::decay_t<decltype(pol)>;
        const auto& st = *std::get_if<typename P::state>(&s);
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          return composite_figures(pol, st, now).retry_after;
        } else {
          return wait_of_one(pol, st, now);
        }
      },
      p);
}

decision figures_of(const any_policy& p, const any_state& s, tick now) noexcept {
  return std::visit(
      [&](const auto& pol) -> decision {
        using P = std::decay_t<decltype(pol)>;
        const auto& st = *std::get_if<typename P::state>(&s);
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          return composite_figures(pol, st, now);
        } else {
          return leaf_figures(pol, st, now);
        }
      },
      p);
}

// ---- the charges ----

void charge_any(const any_policy& p, any_state& s, tick now, std::int64_t cost) noexcept;

void charge(const all_of& p, all_of_state& s, tick now, std::int64_t cost) noexcept {
  for (std::size_t i = 0; i < p.parts().size(); ++i) charge_any(p.parts()[i], s.parts[i], now, cost);
}

void charge(const any_of& p, any_of_state& s, tick now, std::int64_t cost) noexcept {
  // decide() charges the first part that admits, exactly as the composite's
  // decision would; a denial changes nothing, so trying in order is exact.
  for (std::size_t i = 0; i < p.parts().size(); ++i) {
    if (holds_concurrency(p.parts()[i])) {
      // decide() would issue a lease; a report holds none (semantics.md,
      // "Leases"): the part that would admit is charged by its own rules.
      if (!peek(p.parts()[i], s.parts[i], now, cost).allowed) continue;
      charge_any(p.parts()[i], s.parts[i], now, cost);
      return;
    }
    if (decide(p.parts()[i], s.parts[i], now, cost).allowed) return;
  }
  charge_any(p.parts().front(), s.parts.front(), now, cost);
}

void charge_any(const any_policy& p, any_state& s, tick now, std::int64_t cost) noexcept {
  // A composite's charge is above; a single algorithm's is its own
  // (`charge`, beside it: src/<name>.cpp or its header).
  std::visit(
      [&](const auto& pol) { charge(pol, *std::get_if<typename std::decay_t<decltype(pol)>::state>(&s), now, cost); },
      p);
}

}  // namespace

// ---- report, of a composite (a single algorithm's is the template in report.hpp) ----

decision report(const all_of& p, all_of_state& s, tick now, std::int64_t cost) noexcept {
  if (cost < 1) return decide(p, s, now, cost);  // a cost < 1 is denied by every part: a pure read
  charge(p, s, now, cost);
  return composite_figures(p, s, now);
}
decision report(const any_of& p, any_of_state& s, tick now, std::int64_t cost) noexcept {
  if (cost < 1) return decide(p, s, now, cost);  // a cost < 1 is denied by every part: a pure read
  charge(p, s, now, cost);
  return composite_figures(p, s, now);
}
namespace detail {

decision report_full(const any_policy& p, const any_state& s, tick now, std::int64_t remaining, tick reset_after,
                     std::int32_t part) noexcept {
  return std::visit(
      [&](const auto& pol) -> decision {
        using P = std::decay_t<decltype(pol)>;
        const auto& st = *std::get_if<typename P::state>(&s);
        // The decision's `remaining` and `reset_after` are read after the
        // charge, as a cost of 0 reads them (an all_of's: the smallest and
        // the largest of its parts'); only the wait for a unit is left to
        // find: an all_of's is its longest part's, which is its `part`.
        if constexpr (std::is_same_v<P, all_of>) {
          tick longest = 0;
          std::int32_t at = -1;
          for (std::size_t i = 0; i < pol.parts().size(); ++i) {
            const tick w = wait_of_one_any(pol.parts()[i], st.parts[i], now);
            if (w > longest) {
              longest = w;
              at = static_cast<std::int32_t>(i);
            }
          }
          if (at < 0) return composite_figures(pol, st, now);  // no part waits: the least room binds
          return decision{true, remaining, longest, reset_after, 0, at};
        } else if constexpr (std::is_same_v<P, any_of>) {
          return composite_figures(pol, st, now);
        } else {
          return decision{true, remaining, wait_of_one(pol, st, now), reset_after, 0, part};
        }
      },
      p);
}

decision report_charge(const any_policy& p, any_state& s, tick now, std::int64_t cost) noexcept {
  return std::visit(
      [&](const auto& pol) -> decision {
        using P = std::decay_t<decltype(pol)>;
        return report(pol, *std::get_if<typename P::state>(&s), now, cost);
      },
      p);
}

}  // namespace detail

decision report_figures(const any_policy& p, const any_state& s, tick now) noexcept { return figures_of(p, s, now); }

decision combine_reports(std::span<const decision> checks) noexcept { return all_figures(checks); }

}  // namespace sluice
