// A state's portable fields and a policy's parameters: what each algorithm
// declares once, beside its state (`portable::of<P>` in its header), so that
// every encoding is one loop over that description — the snapshot's bytes
// (docs/snapshot-format.md) and the Redis store's values (docs/redis.md,
// "State values"). Nothing here encodes; the codecs (src/keyed/codec.cpp,
// src/redis/values.cpp) read the description.
//
// `portable::of<P>` holds, for an algorithm P:
//   - `letter`: the type letter of its Redis values' tags;
//   - `params`: its policy's parameters in the snapshot's order (each a name,
//     as describe_policy prints it, and a getter), and `make(values)`, the
//     policy from them (its error naming the field);
//   - for a state of fixed shape: `fields` (a plain struct of 128-bit
//     integers), `to(p, s, e)` and `from(p, f, e)` between it and the state,
//     `empty(s)` (a snapshot writes no fields for it), `layout` (the fields
//     in the snapshot's order, each with its kind and range) and
//     `redis_order` (the same fields in a Redis value's order);
//   - for a state of variable size (a log's ring, buckets' counts, leases):
//     no layout; each codec has one hook, `variable_state`, per such
//     algorithm (an algorithm with neither fails to compile there).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "sluice/core/detail/arith.hpp"

namespace sluice::portable {

/// The description of algorithm P: specialised in P's header.
template <typename P>
struct of;

/// Which encoding converts a state: where they differ, the description says
/// how (a leaky queue's backlog under a limit of 0).
enum class encoding { snapshot, redis };

/// How a field is written; each encoding has one form per kind.
enum class kind : std::uint8_t {
  /// A tick. Snapshot: 16 bytes, relative to the snapshot's moment; Redis:
  /// its two 32-bit limbs.
  instant,
  /// A number of units. Snapshot: 8 bytes; Redis: one number.
  count,
  /// An amount in 1/L tick (or 1/W token), 128 bits. Snapshot: 16 bytes;
  /// Redis: q and r, the amount being q·max(L, 1) + r, with q below 2^52.
  debt,
  /// The index k of a window of W ticks from the policy's origin. Snapshot:
  /// the window's last instant (as `instant`); Redis: k's limbs, then the
  /// offset in window k of the instant the value is written at (clamped
  /// into the window), which a read takes as the latest admit.
  window,
  /// An instant t in windows of W ticks from 0. Snapshot: as `instant`;
  /// Redis: the limbs of floor(t / W), then t mod W.
  windowed,
};

/// The values a field may hold, both ends included.
struct range {
  detail::i128 lo = 0;
  detail::i128 hi = 0;
};

/// One field of the portable state `F` of policy `P`.
template <typename P, typename F>
struct field {
  detail::i128 F::*member;
  kind how;
  /// The field as a snapshot's error names it ("gcra debt": "gcra debt out
  /// of range").
  const char* name = "";
  /// The values a snapshot reads back (what admits and reports leave);
  /// nullptr: any (an instant).
  range (*holds)(const P&) = nullptr;
  /// Whether a Redis value may hold more than `holds`' top (a larger
  /// limit's units carried over: an override, a redefinition), up to what
  /// the library's numbers hold exactly (2^53 − 1; a debt's q below 2^52).
  bool carried = false;
};

/// One parameter of policy `P`: its name and its value.
template <typename P>
struct param {
  const char* name;
  std::int64_t (*get)(const P&);
};

/// The parameters of a rate, L and W (`p.limit()`), first in every rate
/// algorithm's list.
template <typename P>
inline constexpr param<P> limit_param{"limit", [](const P& p) { return p.limit().limit; }};
template <typename P>
inline constexpr param<P> window_param{"window", [](const P& p) { return p.limit().window; }};

/// The window W of policy `p`, in ticks (1 when it has none): the windows
/// of its `window` and `windowed` fields.
template <typename P>
constexpr std::int64_t window_length(const P& p) noexcept {
  if constexpr (requires { p.limit(); }) {
    return p.limit().window;
  } else {
    return 1;
  }
}

/// The first instant of window k of policy `p`: its windows are W ticks
/// from its origin (0 when it has none). Where a `window` field's window
/// starts, in every encoding.
template <typename P>
constexpr detail::i128 window_start(const P& p, detail::i128 k) noexcept {
  if constexpr (requires { p.origin(); }) {
    return k * window_length(p) + p.origin();
  } else {
    return k * window_length(p);
  }
}

/// Whether algorithm P's state has a fixed shape described by fields.
template <typename P>
concept has_layout = requires {
  of<P>::layout;
};

}  // namespace sluice::portable
