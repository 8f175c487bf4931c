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
// Per algorithm (all in exact integers):
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

#include "sluice/any.hpp"
#include "sluice/detail/arith.hpp"
#include "sluice/time.hpp"

namespace sluice {

/// Whether a fixed-window state answers as a fresh one from `now` on. Pure,
/// no allocation; thread-safe for concurrent readers.
constexpr bool is_fresh(const fixed_window& p, const fixed_window::state& s, tick now) noexcept {
  return s.count == 0 || p.window_of(now) > s.window;
}

/// Whether a sliding-log state answers as a fresh one from `now` on: its
/// newest unit has left the window (t ≤ now − W). Pure; no allocation.
inline bool is_fresh(const sliding_log& p, const sliding_log::state& s, tick now) noexcept {
  if (s.empty()) return true;
  return static_cast<detail::i128>(s.at(s.size() - 1).at) <= static_cast<detail::i128>(now) - p.limit().window;
}

/// Whether a sliding-counter state answers as a fresh one from `now` on:
/// nothing admitted, or `now` lies two or more windows after the latest
/// admit's window (both counts have left). Pure.
constexpr bool is_fresh(const sliding_counter& p, const sliding_counter::state& s, tick now) noexcept {
  if (s.curr == 0 && s.prev == 0) return true;
  return detail::floor_div(now, p.limit().window) >= static_cast<detail::i128>(s.window) + 2;
}

/// Whether a bucketed sliding-window state answers as a fresh one from `now`
/// on: no unit left in the N sub-windows ending with `now`'s (a clock behind
/// the latest admit is read as it, so then it is not fresh). Costs O(N) in
/// the worst case; no allocation. Pure.
inline bool is_fresh(const sliding_buckets& p, const sliding_buckets::state& s, tick now) noexcept {
  if (s.total() == 0) return true;
  // A request of cost 0 is denied `never`, and its `remaining` is L minus
  // the units in the window at `now`.
  return p.peek(s, now, 0).remaining == p.limit().limit;
}

/// Whether a token-bucket state answers as a fresh one from `now` on: `now`
/// is not before the latest admit and the bucket is full at `now`. Pure.
constexpr bool is_fresh(const token_bucket& p, const token_bucket::state& s, tick now) noexcept {
  return now >= s.last && p.tokens_at(s, now) == p.capacity();
}

/// Whether a GCRA state answers as a fresh one from `now` on: `now` is not
/// before the latest admit and the theoretical arrival time is not after
/// `now` (u ≤ now·L). Pure.
constexpr bool is_fresh(const gcra& p, const gcra::state& s, tick now) noexcept {
  return now >= s.last && s.u <= static_cast<detail::i128>(now) * p.limit().limit;
}

/// Whether a leaky-queue state answers as a fresh one from `now` on: `now`
/// is not before the latest admit and a unit admitted at `now` would leave
/// at once (R + W ≤ now·L), which is later than the moment the queue
/// empties. Pure.
constexpr bool is_fresh(const leaky_queue& p, const leaky_queue::state& s, tick now) noexcept {
  const rate r = p.limit();
  return now >= s.last && s.release + r.window <= static_cast<detail::i128>(now) * r.limit;
}

/// Whether a quota is unused. A quota never refills, so once used it is
/// never fresh again (a keyed store keeps it for ever). `now` is ignored.
constexpr bool is_fresh(const quota&, const quota::state& s, tick /*now*/) noexcept { return s.used == 0; }

/// Whether no lease is held at `now` (and `now` is not before the latest
/// admit, which a released lease may leave after every expiry).
inline bool is_fresh(const concurrency&, const concurrency::state& s, tick now) noexcept {
  return now >= s.latest && (s.leases.empty() || s.leases.back().expiry <= now);
}

/// Always true: the always-allow limiter has no state.
constexpr bool is_fresh(const always_allow&, const always_allow::state&, tick) noexcept { return true; }

/// Always true: the always-deny limiter has no state.
constexpr bool is_fresh(const always_deny&, const always_deny::state&, tick) noexcept { return true; }

/// No generic `is_fresh`: every algorithm has its own overload. Without this
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
