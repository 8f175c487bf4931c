// Token bucket: capacity S tokens, refilled at L per W, starting full. A
// request of cost c takes c tokens or is denied. Bounds the burst (S) and the
// long-run rate (L per W), not each window.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/decision.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/report_bound.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

struct spec;
class receipt;
struct limit_figures;
struct worst_case_traits;

/// The policy of a token bucket. Immutable once built.
class token_bucket {
 public:
  /// Its name on the command line and in policy expressions.
  static constexpr std::string_view name = "token-bucket";
  /// Whether its state owns memory (then `peek` reads it in place;
  /// otherwise a peek decides on a copy).
  static constexpr bool owns_memory = false;
  /// The options a policy expression may give it ("" for none).
  static constexpr std::string_view options = "burst=N";

  /// Tokens in units of 1/W token (0 to S·W) and the instant they were
  /// counted. Trivially copyable; fresh is `state{}` (a full bucket).
  struct state {
    detail::i128 spent = 0;       ///< S·W minus the tokens held, in 1/W token
    tick last = detail::i64_min;  ///< instant of the latest admit
    friend constexpr bool operator==(const state&, const state&) = default;
  };

  /// Builds the policy. Errors name "limit", "window" or "burst"
  /// (1 to 2^62).
  static result<token_bucket> make(rate r, std::int64_t burst);
  /// Builds the policy a spec describes (any.hpp: make_policy); the error
  /// names the field.
  static result<token_bucket> from_spec(const spec& s);

  [[nodiscard]] constexpr rate limit() const noexcept { return r_; }
  [[nodiscard]] constexpr std::int64_t burst() const noexcept { return burst_; }

  /// Tokens held at `t >= s.last`, in units of 1/W token.
  [[nodiscard]] constexpr detail::i128 tokens_at(const state& s, tick t) const noexcept {
    const detail::i128 refill = (static_cast<detail::i128>(t) - s.last) * r_.limit;
    return refill >= s.spent ? capacity_ : capacity_ - (s.spent - refill);
  }
  /// S·W: a full bucket in units of 1/W token.
  [[nodiscard]] constexpr detail::i128 capacity() const noexcept { return capacity_; }

 private:
  constexpr token_bucket(rate r, std::int64_t burst) noexcept
      : r_(r),
        burst_(burst),
        capacity_(static_cast<detail::i128>(burst) * r.window),
        per_window_(r.window),
        per_limit_(r.limit > 0 ? r.limit : 1),
        narrow_(r.limit > 0 && capacity_ <= detail::i64_max) {}
  friend constexpr decision decide(const token_bucket& p, state& s, tick now, std::int64_t cost) noexcept;

  rate r_;
  std::int64_t burst_;
  detail::i128 capacity_;
  detail::divisor per_window_;  // W
  detail::divisor per_limit_;   // L (1 when L = 0, unused then)
  bool narrow_;                 // L >= 1 and S·W < 2^63: decide() can work in 64 bits
};

namespace detail {
/// decide() for any policy and any state, in 128-bit arithmetic.
constexpr decision decide_wide(const token_bucket& p, token_bucket::state& s, tick now, std::int64_t cost) noexcept {
  const rate r = p.limit();
  const tick e = detail::max64(now, s.last);
  const detail::i128 held = p.tokens_at(s, e);
  decision d;
  if (cost < 1 || cost > p.burst() || r.limit == 0) {
    d.remaining = r.limit == 0 ? 0 : detail::clamp_count(held / r.window);
    d.retry_after = never;
    d.reset_after = r.limit == 0 ? 0 : detail::until(e + detail::ceil_div(p.capacity() - held, r.limit), now);
    return d;
  }
  const detail::i128 need = static_cast<detail::i128>(cost) * r.window;
  if (held >= need) {
    const detail::i128 left = held - need;
    s.spent = p.capacity() - left;
    s.last = e;
    d.allowed = true;
    d.remaining = detail::clamp_count(left / r.window);
    d.reset_after = detail::until(e + detail::ceil_div(s.spent, r.limit), now);
    return d;
  }
  d.remaining = detail::clamp_count(held / r.window);
  d.retry_after = detail::until(e + detail::ceil_div(need - held, r.limit), now);
  d.reset_after = detail::until(e + detail::ceil_div(p.capacity() - held, r.limit), now);
  return d;
}
}  // namespace detail

/// Decides one request: refills by (now − last)·L, admits iff at least
/// cost·W remain. A cost above the burst, or L = 0, is denied `never`.
constexpr decision decide(const token_bucket& p, token_bucket::state& s, tick now, std::int64_t cost) noexcept {
  // The common case in 64 bits: a policy with S·W < 2^63, a cost the burst
  // allows, and a state decide() can reach (0 <= tokens <= S·W). The
  // divisions by W and L are then reciprocal multiplies of values below
  // 2^64. Anything else, and every decision's reference, is decide_wide().
  const rate r = p.limit();
  const tick e = detail::max64(now, s.last);
  // e >= last, so e − last is exact in 64 unsigned bits: the refill is one
  // 64×64→128 multiply.
  const detail::i128 refill = static_cast<detail::i128>(
      static_cast<detail::u128>(static_cast<std::uint64_t>(e) - static_cast<std::uint64_t>(s.last)) *
      static_cast<std::uint64_t>(r.limit));
  const detail::i128 missing = refill >= s.spent ? 0 : s.spent - refill;  // S·W − tokens_at(s, e)
  if (!p.narrow_ || cost < 1 || cost > p.burst_ || missing > p.capacity_) [[unlikely]]
    return detail::decide_wide(p, s, now, cost);
  const auto cap = static_cast<std::uint64_t>(p.capacity_);
  const std::uint64_t held = cap - static_cast<std::uint64_t>(missing);
  const auto need = static_cast<std::uint64_t>(cost * r.window);
  decision d;
  if (held >= need) {
    const std::uint64_t left = held - need;
    const std::uint64_t spent = cap - left;  // >= need >= 1
    s.spent = static_cast<detail::i128>(spent);
    s.last = e;
    d.allowed = true;
    d.remaining = static_cast<std::int64_t>(p.per_window_.div(left));
    d.reset_after = detail::until_after(e, p.per_limit_.ceil(spent), now);
    return d;
  }
  d.remaining = static_cast<std::int64_t>(p.per_window_.div(held));
  d.retry_after = detail::until_after(e, p.per_limit_.ceil(need - held), now);
  d.reset_after = detail::until_after(e, p.per_limit_.ceil(cap - held), now);
  return d;
}

// ---- token_bucket: its part of the operations over any policy (src/core/token_bucket.cpp) ----

/// Charges `cost` at `now` whatever the limit says (report.hpp), within
/// the bounds semantics.md states ("Reports"); a cost < 1 changes nothing.
void charge(const token_bucket& p, token_bucket::state& s, tick now, std::int64_t cost) noexcept;
/// The receipt of an admit of `cost` at `now`, read on the state before
/// the step (refund.hpp: `admit`).
receipt receipt_before(const token_bucket& p, const token_bucket::state& s, tick now, std::int64_t cost) noexcept;
/// Completes an admit's receipt from the state the step left.
void receipt_after(receipt& r, const token_bucket& p, const token_bucket::state& s) noexcept;
/// Gives back what `r` took, as refund.hpp says for this algorithm, and
/// uses `r` up; returns the units given back.
std::int64_t refund(const token_bucket& p, token_bucket::state& s, receipt&& r, tick now) noexcept;
/// The state for `to` that continues `s` (a state of `from`) at `now`
/// (reconfigure.hpp). Pure.
[[nodiscard]] token_bucket::state reconfigure(const token_bucket& from, const token_bucket::state& s,
                                              const token_bucket& to, tick now) noexcept;
/// Whether a token-bucket state answers as a fresh one from `now` on: `now`
/// is not before the latest admit and the bucket is full at `now`. Pure.
constexpr bool is_fresh(const token_bucket& p, const token_bucket::state& s, tick now) noexcept {
  return now >= s.last && p.tokens_at(s, now) == p.capacity();
}
/// Its policy as a policy expression writes it (policy_expr.hpp).
std::string policy_text(const token_bucket& p);
/// What its worst case needs of it for `window2` and `granularity` ≥ 1
/// (worst_case.hpp).
worst_case_traits worst_case_traits_of(const token_bucket& p, tick window2, tick granularity);
/// The figures of its limit that the wire advertises, and what the command
/// asks of it (algorithm.hpp).
limit_figures limit_of(const token_bucket& p) noexcept;
/// Whether carrying a state of `from` over to `to` may leave it below
/// empty (a debt), which only a non-compact keyed store can hold.
bool may_leave_debt(const token_bucket& from, const token_bucket& to) noexcept;

/// The token bucket's encodings (portable.hpp): its state is the latest
/// admit and the units spent, in 1/W token (the same Redis letter as GCRA:
/// one state for both in the library).
template <>
struct portable::of<token_bucket> : portable::burst_leaf<token_bucket> {
  static constexpr std::uint8_t tag = 4;
  static constexpr bool aligned_windows = false;
  static constexpr char letter = 'g';
  static constexpr std::array params{limit_param<token_bucket>, window_param<token_bucket>,
                                     param<token_bucket>{"burst", [](const token_bucket& p) { return p.burst(); }}};
  static result<token_bucket> make(const std::array<std::int64_t, 3>& v) {
    return token_bucket::make(rate{v[0], v[1]}, v[2]);
  }

  struct fields {
    detail::i128 last = 0;
    detail::i128 spent = 0;
  };
  static constexpr bool empty(const token_bucket::state& s) noexcept { return s == token_bucket::state{}; }
  static constexpr fields to(const token_bucket&, const token_bucket::state& s, encoding) noexcept {
    return {s.last, s.spent};
  }
  static constexpr token_bucket::state from(const token_bucket&, const fields& f, encoding) noexcept {
    return {f.spent, static_cast<tick>(f.last)};
  }
  static constexpr std::array layout{
      field<token_bucket, fields>{&fields::last, kind::instant},
      field<token_bucket, fields>{&fields::spent, kind::debt, "token-bucket tokens",
                                  [](const token_bucket& p) {
                                    return range{0, report_debt_bound(p.limit().limit, p.capacity())};
                                  },
                                  true}};
  static constexpr std::array<std::size_t, 2> redis_order{1, 0};
};

}  // namespace sluice
