// The Redis store's conservative fallback for an override change
// (semantics.md, "Overrides": always revocable; docs/redis.md,
// "Overrides"): a carried leaf state its library cannot hold exactly (a
// count or a debt past its exact ranges) is replaced by one it can hold
// that admits no more, at and after the change's instant, than the new
// policy fully used at that instant.
#include <algorithm>
#include <type_traits>

#include "redis/store/store_impl.hpp"
#include "sluice/core/concurrency.hpp"
#include "sluice/core/report.hpp"

namespace sluice {

namespace {

constexpr std::int64_t p52 = std::int64_t{1} << 52;
constexpr std::int64_t p53 = std::int64_t{1} << 53;

/// The leaf's whole limit: what a fresh state charged with it at one
/// instant has fully used (at least 1: a limit of 0 admits nothing, and
/// keeps a unit so that a change back is not fresh).
template <typename T>
std::int64_t whole(const T& pol) {
  if constexpr (std::is_same_v<T, gcra> || std::is_same_v<T, token_bucket>) {
    return std::max<std::int64_t>(pol.burst(), 1);
  } else if constexpr (std::is_same_v<T, leaky_queue>) {
    return std::max<std::int64_t>(pol.queue(), 1);
  } else if constexpr (std::is_same_v<T, quota>) {
    return std::max<std::int64_t>(pol.units(), 1);
  } else if constexpr (std::is_same_v<T, fixed_window> || std::is_same_v<T, sliding_counter> ||
                       std::is_same_v<T, sliding_log> || std::is_same_v<T, sliding_buckets>) {
    return std::max<std::int64_t>(pol.limit().limit, 1);
  } else {
    static_assert(unhandled_algorithm<T>,
                  "a new algorithm: say what fully uses it here, or that it has no count to cap in "
                  "conservative_leaf (docs/architecture.md, \"Adding an algorithm\")");
  }
}

}  // namespace

std::optional<any_state> redis::conservative_leaf(const any_policy& leaf, const any_state& carried, tick at,
                                                  bool exhausted) {
  std::optional<any_state> out;
  std::visit(
      [&](const auto& pol) {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (holds_no_leaf_state<T> || std::is_same_v<T, concurrency>) {
          return;  // no count or debt to cap
        } else {
          const auto* st = std::get_if<typename T::state>(&carried);
          if (st == nullptr) return;
          if (!exhausted) {
            // The tightest holdable state no laxer than the carried one.
            if constexpr (std::is_same_v<T, gcra> || std::is_same_v<T, token_bucket> ||
                          std::is_same_v<T, leaky_queue>) {
              // The most debt a report leaves (report_debt_bound: at most
              // 2^52·L − 1, what a value holds; at least what an admit
              // leaves, so the key is at least fully used), from
              // max(last, at).
              const std::int64_t l = pol.limit().limit;
              const tick last = std::max(st->last, at);
              detail::i128 normal = 0;  // the most an admit leaves
              if constexpr (std::is_same_v<T, gcra>) {
                normal = pol.tolerance();
              } else if constexpr (std::is_same_v<T, token_bucket>) {
                normal = pol.capacity();
              } else {
                normal = static_cast<detail::i128>(pol.queue()) * pol.limit().window - 1;
              }
              const detail::i128 most = l == 0 ? detail::i128{p52 - 1} : report_debt_bound(l, normal);  // in 1/L tick
              typename T::state s;
              s.last = last;
              if constexpr (std::is_same_v<T, gcra>) {
                s.u = static_cast<detail::i128>(last) * l + most;
              } else if constexpr (std::is_same_v<T, token_bucket>) {
                s.spent = most;
              } else {
                s.release = static_cast<detail::i128>(last) * std::max<std::int64_t>(l, 1) + most;
              }
              out = any_state(s);
            } else if constexpr (std::is_same_v<T, fixed_window>) {
              // A count past 2^53 − 1 ≥ L denies the rest of its window alike.
              typename T::state s = *st;
              s.count = std::min<std::int64_t>(s.count, p53 - 1);
              out = any_state(s);
            } else if constexpr (std::is_same_v<T, sliding_counter>) {
              // A limit of 0 admits nothing whatever it counts, and a counter
              // of it holds no count (`curr` ≤ max(L, min(L·W, 2^52)) = 0):
              // it keeps none, as a sliding log of 0 does (semantics.md,
              // "Reconfiguration").
              if (pol.limit().limit == 0) {
                out = fresh_state(leaf);
                return;
              }
              // The window's count capped at what a counter holds (≥ L: the
              // window stays denied), the previous one's below 2^53.
              typename T::state s = *st;
              s.curr = std::min<std::int64_t>(s.curr, report_count_bound(pol.limit()));
              s.prev = std::min<std::int64_t>(s.prev, p53 - 1);
              out = any_state(s);
            } else if constexpr (std::is_same_v<T, sliding_log> || std::is_same_v<T, sliding_buckets> ||
                                 std::is_same_v<T, quota>) {
              // No capped form: its fallback is the whole limit used (below).
            } else {
              static_assert(unhandled_algorithm<T>,
                            "a new algorithm: write its capped state here, or say that it has none "
                            "(docs/architecture.md, \"Adding an algorithm\")");
            }
            return;
          }
          // Fully used at `at`: a fresh state charged the whole limit there.
          auto s = std::get<typename T::state>(fresh_state(leaf));
          (void)report(pol, s, at, whole(pol));
          out = any_state(s);
        }
      },
      leaf);
  return out;
}

}  // namespace sluice
