// Receipts and refunds: giving back what an admit took, as far as that can
// be done without letting anything extra through.
//
// `admit(policy, state, now, cost)` decides exactly as `decide` and, on an
// admit, also returns a `receipt`: what was taken, where and when. Handing
// the receipt to `refund(policy, state, receipt, now)` gives back what can
// still be given back. "Nothing extra" means: after any sequence of admits
// and refunds, the admits that were not refunded, replayed in time order
// into a fresh limiter of the same policy, are all admitted — the limiter
// never lets through more than it would have if the refunded requests had
// never been made. What each algorithm gives back is the contract's
// (docs/semantics.md, "Refunds"): fixed window, sliding counter and buckets
// while the limiter still holds the admit's window; sliding log exact;
// token bucket and GCRA all of it while it is the latest admit, else less
// what has refilled since; leaky queue only its last admit's units not yet
// due; quota all of it; concurrency the release of the admit's lease (exact: a
// reconfiguration carries the lease, and so the receipt, over); composites
// per part.
//
// A receipt is move-only and is used up by `refund`, so it cannot be
// refunded twice. It carries the policy's parameters; a receipt for another
// policy (or from before a reconfiguration) refunds nothing.
// Thread safety: as for `decide`: the caller owns the state.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

namespace detail {
struct receipt_access;
}  // namespace detail

/// What one admit took: the proof of purchase that `refund` needs. Move-only
/// (moving leaves the source empty), so each admit is refunded at most once.
/// Opaque apart from the accessors below. An empty receipt refunds nothing.
class receipt {
 public:
  /// An empty receipt.
  receipt() noexcept = default;
  /// Takes over `other`, leaving it empty.
  receipt(receipt&& other) noexcept { swap(other); }
  /// Takes over `other`, leaving it empty (what this held is dropped).
  receipt& operator=(receipt&& other) noexcept {
    receipt moved(static_cast<receipt&&>(other));
    swap(moved);
    return *this;
  }
  /// Not copyable: a copy could be refunded a second time.
  receipt(const receipt&) = delete;
  /// Not copyable.
  receipt& operator=(const receipt&) = delete;
  /// Dropping a receipt refunds nothing.
  ~receipt() = default;

  /// Whether this receipt refunds nothing (a denial's, a moved-from one).
  [[nodiscard]] bool empty() const noexcept { return cost_ == 0; }
  /// The cost the admit took, in units (0 if empty).
  [[nodiscard]] std::int64_t cost() const noexcept { return cost_; }
  /// The instant the limiter took the admit at (the request's `now`, or the
  /// latest admit's time if the clock had stepped back).
  [[nodiscard]] tick at() const noexcept { return at_; }
  /// The algorithm that issued it.
  [[nodiscard]] algorithm algo() const noexcept { return algo_; }
  /// any_of: the index of the part that consumed; -1 otherwise.
  [[nodiscard]] std::int32_t part() const noexcept { return part_; }
  /// Composites: the parts' receipts (all_of: one per part, in order;
  /// any_of: the consuming part's only). Empty for the other algorithms.
  [[nodiscard]] const std::vector<receipt>& parts() const noexcept { return parts_; }

 private:
  friend struct detail::receipt_access;
  void swap(receipt& o) noexcept {
    std::swap(algo_, o.algo_);
    std::swap(at_, o.at_);
    std::swap(cost_, o.cost_);
    std::swap(key_, o.key_);
    std::swap(before_, o.before_);
    std::swap(after_, o.after_);
    std::swap(p1_, o.p1_);
    std::swap(p2_, o.p2_);
    std::swap(p3_, o.p3_);
    std::swap(part_, o.part_);
    parts_.swap(o.parts_);
  }

  algorithm algo_ = algorithm::always_deny;
  tick at_ = 0;
  std::int64_t cost_ = 0;
  std::int64_t key_ = 0;     // a window or sub-window index
  detail::i128 before_ = 0;  // token bucket/GCRA: u before; leaky queue: R before
  detail::i128 after_ = 0;   // the same after the admit
  std::int64_t p1_ = 0;      // the policy's parameters (L or N; W; S, Q, N or origin),
  std::int64_t p2_ = 0;      // for composites the number of parts
  std::int64_t p3_ = 0;
  std::int32_t part_ = -1;      // any_of: the part that consumed
  std::vector<receipt> parts_;  // all_of: one per part; any_of: the consuming part's
};

/// An admit's decision and, when it was allowed, its receipt (else empty).
struct [[nodiscard]] admission {
  /// Exactly what `decide` answers for the same request.
  decision result;
  /// What was taken; empty on a denial.
  receipt ticket;
};

/// Decides like `decide(p, s, now, cost)` (same decision, same state change)
/// with a single algorithm and returns the receipt of an admit: the
/// algorithm's `receipt_before`, read on the state before the step, then
/// completed by its `receipt_after`. Pure apart from `s` on admit. A
/// concurrency limit's receipt names the lease issued (its nonce: the
/// thread's lease_scope).
template <typename P>
requires requires { P::owns_memory; }
admission admit(const P& p, typename P::state& s, tick now, std::int64_t cost) noexcept {
  admission out;
  receipt r = receipt_before(p, s, now, cost);
  out.result = decide(p, s, now, cost);
  if (out.result.allowed) {
    receipt_after(r, p, s);
    out.ticket = std::move(r);
  }
  return out;
}

/// A composite's receipt holds one per part (all_of) or the consuming part's
/// (any_of). Allocates; may throw std::bad_alloc.
admission admit(const all_of& p, all_of_state& s, tick now, std::int64_t cost);
/// See the all_of overload.
admission admit(const any_of& p, any_of_state& s, tick now, std::int64_t cost);
/// Whichever algorithm `p` holds; requires `s` to hold its state type.
admission admit(const any_policy& p, any_state& s, tick now, std::int64_t cost);

/// Gives back what `r` took, as far as the algorithm allows without letting
/// anything extra through (see the overview), and uses `r` up. Returns the
/// whole units given back to the account (token bucket/GCRA: the whole
/// tokens returned — a fraction of a token may come back too, uncounted,
/// and a bucket that has refilled meanwhile still caps at S; all_of: the
/// fewest any part gave back).
/// `now` is the refund's instant (read as at least the latest admit's).
/// Each single algorithm has its own overload, beside it in its file
/// pair. A receipt from another policy, an empty one, or one that does not match
/// the state returns 0 and changes nothing.
///
/// A composite: every part per its own rule; returns the fewest units any
/// part gave back.
std::int64_t refund(const all_of& p, all_of_state& s, receipt&& r, tick now);
/// The part that consumed, per its own rule.
std::int64_t refund(const any_of& p, any_of_state& s, receipt&& r, tick now);
/// Whichever algorithm `p` holds.
std::int64_t refund(const any_policy& p, any_state& s, receipt&& r, tick now);

}  // namespace sluice
