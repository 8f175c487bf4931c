// A state's portable fields and a policy's parameters: what each algorithm
// declares once, beside its state (`portable::of<P>` in its header), so that
// every encoding is one loop over that description — the snapshot's bytes
// (docs/snapshot-format.md) and the Redis store's values (docs/redis.md,
// "State values"). Nothing here encodes; the codecs (src/keyed/codec.cpp,
// src/redis/values.cpp) read the description.
//
// `portable::of<P>` holds, for an algorithm P:
//   - `tag`: its policy's tag on disk (docs/snapshot-format.md), one of its
//     own (the composites' are 10 and 11);
//   - `aligned_windows`: whether its windows are aligned to the clock's
//     origin, so that a snapshot of its states cannot be moved to another
//     clock's origin exactly;
//   - `letter` (a stateful algorithm): the type letter of its Redis values'
//     tags;
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
//     algorithm (an algorithm with neither fails to compile there);
//   - for a stateful algorithm, its Redis leaf (docs/redis.md): `redis_plan`,
//     the constants a plan computes once (an error naming the field when a
//     quantity is past what the Lua arithmetic holds exactly), and
//     `redis_args`, the numbers a request sends its Lua step
//     (src/redis/lua/<name>.lua), in the order that step reads them.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "sluice/core/detail/arith.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

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

/// What every algorithm's description declares (each alternative of
/// any_policy but the composites; checked in algorithm.hpp).
template <typename P>
concept described = requires {
  requires std::is_same_v<std::remove_cv_t<decltype(of<P>::tag)>, std::uint8_t>;
  requires std::is_same_v < std::remove_cv_t<decltype(of<P>::aligned_windows)>,
  bool > ;
  of<P>::params;
};

/// The constants of a Redis leaf that depend only on its policy, computed
/// once by `of<P>::redis_plan` (zero where the algorithm has none): for a
/// rate with a capacity C (a burst S, a queue Q), C·W = sq·L + sr and
/// W = wq·L + wr, and the most debt a report may leave, K = kq·L + kr
/// (report_debt_bound), as mixed numbers modulo L ≥ 1.
struct redis_constants {
  detail::i128 sq = 0, sr = 0;
  detail::i128 wq = 0, wr = 0;
  detail::i128 kq = 0, kr = 0;
};

/// One request as a Redis leaf sees it.
struct redis_call {
  tick now = 0;
  std::int64_t cost = 0;
  /// A report (mode 2), not a decision.
  bool report = false;
  /// The request's lease nonce (a concurrency leaf's; semantics.md, "Leases").
  std::uint64_t nonce = 0;
};

/// The numbers a Redis leaf's request sends (each below 2^53 in
/// magnitude), in order; the store writes each as the Lua library reads it.
class redis_numbers {
 public:
  static constexpr std::size_t capacity = 12;
  void number(detail::i128 v) noexcept {
    if (n_ < capacity) v_[n_++] = static_cast<std::int64_t>(v);
  }
  /// `v` as its two 32-bit limbs: v = h·2^32 + l, 0 ≤ l < 2^32.
  void limbs(std::int64_t v) noexcept {
    number(v >> 32);
    number(static_cast<std::int64_t>(static_cast<std::uint64_t>(v) & 0xFFFFFFFFULL));
  }
  /// The window of `t` in windows of `w` from `origin` (its index's limbs)
  /// and `t`'s offset in it.
  void window(tick t, tick w, tick origin) noexcept {
    const detail::i128 k = detail::floor_div(static_cast<detail::i128>(t) - origin, w);
    limbs(static_cast<std::int64_t>(k));
    number(static_cast<detail::i128>(t) - origin - k * w);
  }
  [[nodiscard]] const std::int64_t* begin() const noexcept { return v_.data(); }
  [[nodiscard]] const std::int64_t* end() const noexcept { return v_.data() + n_; }

 private:
  std::array<std::int64_t, capacity> v_{};
  std::size_t n_ = 0;
};

/// The Redis leaf of a rate with a burst S (GCRA and the token bucket, one
/// Lua step: letter g), a base of their descriptions: its constants S·W, W
/// and K modulo L, its arguments mode L cw/L cw%L sq sr kq kr.
template <typename P>
struct burst_leaf {
  static std::optional<error> redis_plan(const P& p, redis_constants& k);
  static void redis_args(const P& p, const redis_constants& k, const redis_call& c, redis_numbers& out) noexcept;
};

/// The Redis plan of a count in a window (fixed window, sliding log,
/// sliding-window counter, bucketed sliding window), a base of their
/// descriptions: L and W below 2^53, no constants.
template <typename P>
struct window_leaf {
  static std::optional<error> redis_plan(const P& p, redis_constants& k);
};

/// Whether algorithm P's description declares its Redis leaf.
template <typename P>
concept has_redis_leaf = requires(const P& p, redis_constants& k, const redis_constants& ck, const redis_call& c,
                                  redis_numbers& out) {
  { of<P>::letter } -> std::convertible_to<char>;
  { of<P>::redis_plan(p, k) } -> std::same_as<std::optional<error>>;
  { of<P>::redis_args(p, ck, c, out) }
  noexcept->std::same_as<void>;
};

/// Whether algorithm P's state has a fixed shape described by fields.
template <typename P>
concept has_layout = requires {
  of<P>::layout;
};

}  // namespace sluice::portable
