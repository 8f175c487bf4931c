// When a state is back to fresh: the test a keyed store uses to drop an idle
// key without changing any decision (semantics.md, "Keys").
//
// `is_fresh(p, s, now)` is true iff, for every request at any instant
// t ≥ now, `s` answers exactly as the fresh state does and is left exactly as
// the fresh state would be (so the two stay interchangeable for ever after).
// A store that drops such a state must read every later request's `now` as
// at least the `now` it dropped it at — which is why a clock stepping back
// below the drop is read as the drop: that is the contract's "time of its
// latest purge".
//
// Each single algorithm's `is_fresh` is inline in its own header; here are
// the composites' and the dispatch over any policy. Per algorithm (all in
// exact integers):
//   fixed window     no count, or `now` is in a later window than the count's
//   sliding log      no admitted unit left in (now − W, now]
//   sliding counter  nothing admitted, or `now` two or more windows later
//   sliding buckets  no unit left in the N sub-windows ending at `now`
//   token bucket     `now` ≥ the latest admit and the bucket is full at `now`
//   GCRA             `now` ≥ the latest admit and tat ≤ now (u ≤ now·L)
//   leaky queue      `now` ≥ the latest admit and a new unit would leave on
//                    arrival (R + W ≤ now·L)
//   quota            nothing used (a spent quota is never fresh)
//   concurrency      no lease held
//   always-*         always
//   all_of / any_of  every part is fresh
#pragma once

#include <cstdint>
#include <type_traits>
#include <variant>

#include "sluice/core/any.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// No generic `is_fresh`: every algorithm has its own overload (in its
/// header). Without this
/// a new algorithm's policy would convert to any_policy and call the
/// overload below, which would call itself; with it, the call fails to
/// compile until the algorithm has its overload (docs/architecture.md).
template <typename Policy, typename State>
bool is_fresh(const Policy&, const State&, tick) noexcept = delete;

inline bool is_fresh(const any_policy& p, const any_state& s, tick now) noexcept;

/// Whether every part of an all_of is fresh at `now` (then the composite
/// decides as a fresh one: its answers are made of its parts'). Requires
/// `s` to hold one state per part, as `fresh_state` makes it.
inline bool is_fresh(const all_of& p, const all_of_state& s, tick now) noexcept {
  for (std::size_t i = 0; i < p.parts().size(); ++i)
    if (!is_fresh(p.parts()[i], s.parts[i], now)) return false;
  return true;
}

/// Whether every part of an any_of is fresh at `now`. Requires `s` to hold
/// one state per part.
inline bool is_fresh(const any_of& p, const any_of_state& s, tick now) noexcept {
  for (std::size_t i = 0; i < p.parts().size(); ++i)
    if (!is_fresh(p.parts()[i], s.parts[i], now)) return false;
  return true;
}

/// Whether `s` answers every request at any t ≥ now exactly as
/// `fresh_state(p)` does, with whichever algorithm `p` holds. Requires `s`
/// to hold the state type of `p`. Pure, no allocation; safe to call from
/// several threads on the same (unchanging) state.
inline bool is_fresh(const any_policy& p, const any_state& s, tick now) noexcept {
  return std::visit(
      [&](const auto& pol) -> bool {
        using policy_t = std::decay_t<decltype(pol)>;
        return is_fresh(pol, *std::get_if<typename policy_t::state>(&s), now);
      },
      p);
}

}  // namespace sluice
