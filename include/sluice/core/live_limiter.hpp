// A limiter that schedules: besides try_acquire it peeks (`next_allowed_at`),
// reserves future slots, cancels and refunds, and takes a new policy while it
// runs.
//
// Reservations (as x/time/rate's Reserve). `reserve_at(now, cost)` takes the
// units now for the earliest slot the limiter can promise, possibly in the
// future, and says when that is; the holder acts at that instant. Promises
// are kept in order: while a reservation is pending (its slot is still
// ahead), every later request — admit, reservation or wait — is scheduled
// after it, so nothing can take the room a promise needs. A pending
// reservation is held apart from the algorithm's state and only enters it at
// its slot (by the algorithm's own step, at that instant), so the state only
// ever sees requests in time order; every reservation that is kept, and
// every admit, therefore forms a trace the bare limiter would have admitted
// in full.
//
// Cancelling. `cancel_at(r, now)` gives back what can be given back without
// letting anything extra through:
// - a pending reservation with no reservation behind it is dropped
//   entirely: every unit back, exactly as if it had never been made;
// - a pending reservation with reservations behind it gives back nothing
//   now: those later slots were computed with its units taken and they keep
//   them. It is marked cancelled; if every reservation behind it is
//   cancelled too, its units come back then; otherwise it is spent at its
//   slot;
// - a reservation already due (its slot reached) is refunded like an admit,
//   by its receipt and the algorithm's own rule (refund.hpp) — once no
//   reservation is pending behind it.
// Admits made with `admit_at` return receipts for `refund_at`, with the same
// rule.
//
// Reconfiguring (`reconfigure_at`) maps the state as reconfigure.hpp says;
// it is refused while a reservation is pending (its promise was made under
// the old policy).
//
// Thread safety: not thread-safe, like `limiter`. Wrap it in `guarded<...>`
// (wait.hpp) to share it; `acquire` works on either.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <iterator>
#include <optional>
#include <type_traits>
#include <utility>

#include "sluice/core/any.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/reconfigure.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/report.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/schedule.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

template <typename Policy, typename Clock>
class live_limiter;

namespace detail {
/// A number no other live_limiter in this process has: tells a reservation
/// from another limiter apart. Thread-safe.
inline std::uint64_t next_owner_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace detail

/// A reservation: units taken now for a slot at `at()`. Move-only, used up by
/// `cancel_at`. `ok()` is false when nothing was reserved.
class reservation {
 public:
  /// An empty reservation (not ok; cancelling it gives nothing).
  reservation() noexcept = default;
  /// Takes over `o`, leaving it empty (not ok).
  reservation(reservation&& o) noexcept
      : owner_(std::exchange(o.owner_, 0)),
        id_(std::exchange(o.id_, 0)),
        at_(std::exchange(o.at_, never)),
        cost_(std::exchange(o.cost_, 0)),
        ok_(std::exchange(o.ok_, false)),
        ticket_(std::move(o.ticket_)) {}
  /// Takes over `o`, leaving it empty; what this held is dropped (not
  /// cancelled: the units stay reserved).
  reservation& operator=(reservation&& o) noexcept {
    reservation moved(std::move(o));
    std::swap(owner_, moved.owner_);
    std::swap(id_, moved.id_);
    std::swap(at_, moved.at_);
    std::swap(cost_, moved.cost_);
    std::swap(ok_, moved.ok_);
    std::swap(ticket_, moved.ticket_);
    return *this;
  }
  /// Not copyable: a copy could be cancelled a second time.
  reservation(const reservation&) = delete;
  /// Not copyable.
  reservation& operator=(const reservation&) = delete;
  /// Dropping a reservation does not cancel it: its units stay taken.
  ~reservation() = default;

  /// Whether the units were reserved. False when the cost can never be
  /// admitted, or its slot lies past the `latest` the caller allowed.
  [[nodiscard]] bool ok() const noexcept { return ok_; }
  /// The instant the reservation becomes valid (the holder may act from
  /// then on). When not ok: the slot it would have had, or `never`.
  [[nodiscard]] tick at() const noexcept { return at_; }
  /// Ticks from `now` until `at()`: 0 if already valid, `never` if never.
  [[nodiscard]] tick delay_from(tick now) const noexcept {
    if (at_ == never) return never;
    if (at_ <= now) return 0;
    const detail::i128 d = static_cast<detail::i128>(at_) - now;
    return d >= never ? never : static_cast<tick>(d);
  }
  /// The units reserved (0 when not ok).
  [[nodiscard]] std::int64_t cost() const noexcept { return ok_ ? cost_ : 0; }
  /// The receipt of the admit this reservation is (or becomes at its slot):
  /// which parts it takes from and when. Empty when not ok.
  [[nodiscard]] const receipt& ticket() const noexcept { return ticket_; }

 private:
  template <typename P, typename C>
  friend class live_limiter;
  std::uint64_t owner_ = 0;
  std::uint64_t id_ = 0;  // 0: not pending (taken at once, or not ok)
  tick at_ = never;
  std::int64_t cost_ = 0;
  bool ok_ = false;
  receipt ticket_;
};

/// A limiter with reservations, refunds, peeks and live reconfiguration (see
/// the overview). `Policy` is any algorithm, composite or `any_policy`;
/// `Clock` as for `limiter` (an empty clock type is default-constructed, any
/// other is held by reference and must outlive the limiter). Not
/// thread-safe. A copy is a snapshot that shares the reservations' identities
/// (a reservation may be cancelled on either, once).
template <typename Policy, typename Clock = steady_clock>
class live_limiter {
 public:
  /// The algorithm's state type (any_state for any_policy).
  using state_type = typename detail::state_of<Policy>::type;

  /// A fresh limiter on an empty clock type.
  explicit live_limiter(Policy p) requires std::is_empty_v<Clock>
      : policy_(std::move(p)), base_(fresh()), owner_(detail::next_owner_id()) {}
  /// A fresh limiter reading `clock`, which must outlive it.
  live_limiter(Policy p, const Clock& clock)
      : policy_(std::move(p)), base_(fresh()), owner_(detail::next_owner_id()), clock_(&clock) {}

  /// Decides a request of `cost` at the explicit instant `now`, behind any
  /// pending reservation: while one is ahead of `now`, the request is denied
  /// with the exact wait until it would pass after all of them (remaining
  /// 0). Otherwise exactly `decide` on the state.
  decision try_acquire_at(tick now, std::int64_t cost = 1) {
    settle(now);
    if (pending_.empty()) return decide(policy_, base_, now, cost);
    return behind_the_line(now, cost);
  }
  /// `try_acquire_at` at the clock's current instant.
  decision try_acquire(std::int64_t cost = 1) { return try_acquire_at(read_clock(), cost); }

  /// `try_acquire_at` that also returns the receipt of an admit, for
  /// `refund_at`.
  admission admit_at(tick now, std::int64_t cost = 1) {
    settle(now);
    if (pending_.empty()) return admit(policy_, base_, now, cost);
    admission out;
    out.result = behind_the_line(now, cost);
    return out;
  }

  /// Gives back what the admit of `r` took (refund.hpp's rule for the
  /// algorithm) and uses `r` up; returns the whole units given back. While a
  /// reservation is pending behind it, gives nothing and leaves `r` as it
  /// was, to be tried again later.
  std::int64_t refund_at(receipt&& r, tick now) {
    settle(now);
    if (!pending_.empty()) return 0;
    return refund(policy_, base_, std::move(r), now);
  }

  /// Charges `cost` units spent at `now`, whatever the limit says (a
  /// report, report.hpp: never denied; the state may go into a debt that
  /// later requests wait out). While reservations are pending, the report
  /// is charged behind them, at the last one's slot (they keep their
  /// promise), and the answer's durations count from `now`; it then counts
  /// in `pending()` until that slot comes. A cost < 1 charges nothing.
  decision report_at(tick now, std::int64_t cost) {
    settle(now);
    if (cost < 1 || pending_.empty()) return sluice::report(policy_, base_, now, cost);
    const tick at = queue_end(now);
    pending_.push_back(slot{0, at, cost, false, true});
    state_type& t = tail_ ? *tail_ : tail_.emplace(base_);
    decision d = sluice::report(policy_, t, at, cost);
    const auto from_now = [&](tick after) -> tick {
      return after == never ? never : detail::until(static_cast<detail::i128>(at) + after, now);
    };
    d.retry_after = from_now(d.retry_after);
    d.reset_after = from_now(d.reset_after);
    return d;
  }
  /// `report_at` at the clock's current instant.
  decision report(std::int64_t cost) { return report_at(read_clock(), cost); }

  /// The earliest instant ≥ `now` at which a request of `cost` would pass,
  /// after every pending reservation; `never` if never. Takes nothing.
  [[nodiscard]] tick next_allowed_at(tick now, std::int64_t cost = 1) const {
    return sluice::next_allowed_at(policy_, tail(), queue_end(now), cost);
  }

  /// Reserves `cost` units for the earliest slot ≥ `now` (and after every
  /// pending reservation) at which they would be admitted, if that slot is
  /// not after `latest`; the reservation says when. A slot at `now` is an
  /// admit at once (the reservation is then due and refundable). Not ok,
  /// with nothing taken, when the cost can never pass or the slot is past
  /// `latest`.
  reservation reserve_at(tick now, std::int64_t cost = 1, tick latest = never) {
    settle(now);
    reservation out;
    out.owner_ = owner_;
    out.cost_ = cost;
    const tick from = queue_end(now);
    out.at_ = sluice::next_allowed_at(policy_, tail(), from, cost);
    if (out.at_ == never || out.at_ > latest) return out;
    if (pending_.empty() && out.at_ == now) {
      admission a = admit(policy_, base_, now, cost);
      if (!a.result.allowed) return out;  // cannot happen: next_allowed_at is exact
      out.ok_ = true;
      out.ticket_ = std::move(a.ticket);
      return out;
    }
    if (!tail_) tail_.emplace(base_);
    admission a = admit(policy_, *tail_, out.at_, cost);
    if (!a.result.allowed) {
      if (pending_.empty()) tail_.reset();
      return out;
    }
    out.ok_ = true;
    out.id_ = next_id_++;
    out.ticket_ = std::move(a.ticket);
    pending_.push_back(slot{out.id_, out.at_, cost, false, false});
    return out;
  }

  /// Cancels `r` (see the overview for what comes back) and uses it up;
  /// returns the units given back by this call (including those of earlier
  /// cancelled reservations that this one was holding in place). A
  /// reservation of another limiter, or one not ok, gives nothing.
  std::int64_t cancel_at(reservation&& r, tick now) {
    reservation mine(std::move(r));
    if (!mine.ok_ || mine.owner_ != owner_) return 0;
    settle(now);
    if (mine.id_ != 0) {
      for (auto it = pending_.begin(); it != pending_.end(); ++it) {
        if (it->id != mine.id_) continue;
        it->cancelled = true;
        if (std::next(it) != pending_.end()) return 0;  // held in place by the ones behind it
        std::int64_t back = 0;
        while (!pending_.empty() && pending_.back().cancelled) {
          back += pending_.back().cost;
          pending_.pop_back();
        }
        rebuild_tail();
        return back;
      }
    }
    // Already in the state (due, or taken at once).
    if (!pending_.empty()) return 0;
    return refund(policy_, base_, std::move(mine.ticket_), now);
  }

  /// Replaces the policy with `next` at `now`, mapping the state as
  /// reconfigure.hpp says. Refused (error "reservations") while a
  /// reservation is pending, and for an any_policy of another algorithm or
  /// shape (the error reconfigure gives); nothing changes then.
  [[nodiscard]] std::optional<error> reconfigure_at(Policy next, tick now) {
    settle(now);
    if (!pending_.empty())
      return error{"reservations", "cannot change the limit while a reservation is pending (cancel it or wait)"};
    if constexpr (std::is_same_v<Policy, any_policy>) {
      result<any_state> s = reconfigure(policy_, base_, next, now);
      if (!s) return s.err();
      base_ = std::move(s).value();
    } else if constexpr (std::is_same_v<Policy, all_of> || std::is_same_v<Policy, any_of>) {
      auto s = reconfigure(policy_, base_, next, now);
      if (!s) return s.err();
      base_ = std::move(s).value();
    } else {
      base_ = reconfigure(policy_, base_, next, now);
    }
    policy_ = std::move(next);
    return std::nullopt;
  }

  /// The policy in force.
  [[nodiscard]] const Policy& policy() const noexcept { return policy_; }
  /// The algorithm's state: every admit and every reservation already due
  /// (pending ones are not in it yet).
  [[nodiscard]] const state_type& state() const noexcept { return base_; }
  /// How many reservations are pending (cancelled ones held in place count).
  [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }

 private:
  struct slot {
    std::uint64_t id;
    tick at;
    std::int64_t cost;
    bool cancelled;
    bool report;  // a report charged behind the reservations (report_at), not a reservation
  };

  state_type fresh() const { return detail::fresh_state_of(policy_); }
  tick read_clock() const noexcept { return detail::read_clock(clock_); }

  /// Moves every reservation whose slot has come into the state, at its
  /// slot, in order (each is admitted there: nothing else was let in ahead
  /// of it).
  void settle(tick now) {
    while (!pending_.empty() && pending_.front().at <= now) {
      apply(base_, pending_.front());
      pending_.pop_front();
    }
    if (pending_.empty()) tail_.reset();
  }
  /// Takes a pending slot into `s`: a reservation is admitted at its slot, a
  /// report charged there.
  void apply(state_type& s, const slot& p) {
    if (p.report) {
      (void)sluice::report(policy_, s, p.at, p.cost);
    } else {
      (void)decide(policy_, s, p.at, p.cost);
    }
  }
  /// The state after every pending reservation.
  const state_type& tail() const noexcept { return tail_ ? *tail_ : base_; }
  /// The earliest instant a new request may be scheduled at: `now`, or the
  /// last pending slot if later.
  tick queue_end(tick now) const noexcept {
    return pending_.empty() || pending_.back().at < now ? now : pending_.back().at;
  }
  void rebuild_tail() {
    if (pending_.empty()) {
      tail_.reset();
      return;
    }
    tail_.emplace(base_);
    for (const slot& p : pending_) apply(*tail_, p);
  }
  /// The denial of a request that has to wait behind pending reservations:
  /// the durations of the decision taken at the end of the line, re-counted
  /// from the caller's `now`.
  decision behind_the_line(tick now, std::int64_t cost) const {
    const tick from = queue_end(now);
    state_type copy = tail();
    decision d = decide(policy_, copy, from, cost);
    const auto from_now = [&](tick after_from) -> tick {
      if (after_from == never) return never;
      return detail::until(static_cast<detail::i128>(from) + after_from, now);
    };
    d.retry_after = d.allowed ? from_now(0) : from_now(d.retry_after);
    d.reset_after = from_now(d.reset_after);
    d.allowed = false;
    d.remaining = 0;
    d.release_after = 0;
    if (d.retry_after == 0) d.retry_after = 1;  // from > now whenever this is called
    return d;
  }

  Policy policy_;
  state_type base_;
  std::deque<slot> pending_;
  std::optional<state_type> tail_;  // base_ with every pending reservation applied; empty when none
  std::uint64_t owner_;
  std::uint64_t next_id_ = 1;
  const Clock* clock_ = nullptr;
};

}  // namespace sluice
