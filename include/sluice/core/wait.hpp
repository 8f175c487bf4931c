// Waiting for admission: `acquire(target, cost, deadline)` blocks until the
// request is admitted, or returns at once when it is certain the deadline
// cannot be met, without taking anything.
//
// The loop: try at the clock's `now`; if denied, the exact `retry_after`
// says when the request would pass if nothing else happens; if that instant
// is past the deadline give up now, else sleep until exactly that instant and
// try again (another caller may have consumed meanwhile, so the answer is
// re-checked, never assumed). It never asks to sleep past the deadline and
// never busy-waits: every sleep ends at an instant strictly after the
// attempt that caused it.
//
// Time and sleeping are injected: a clock (`now()` in ticks) and a sleeper
// (`sleep_until(tick)` on that clock). `steady_clock` + `thread_sleeper`
// are the real ones; `manual_clock` + `manual_sleeper` let tests wait with
// no real sleep.
//
// Thread safety: `acquire` itself holds no lock and no state; each attempt
// is one `try_acquire_at` call on the target. A `limiter` is single-threaded,
// so a limiter shared between threads must be wrapped so that each
// `try_acquire_at` runs under a lock — `guarded<L>` does exactly that — and
// then `acquire` may run on it from any number of threads, sleeping without
// the lock.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

#include "sluice/core/decision.hpp"
#include "sluice/core/limiter.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// A clock: `now()` gives the current instant in ticks.
template <typename C>
concept tick_clock = requires(const C& c) {
  { c.now() } -> std::convertible_to<tick>;
};

/// A sleeper: `sleep_until(t)` returns once the clock it sleeps on reads at
/// least `t` (returning early is allowed: the caller re-checks).
template <typename S>
concept sleeper = requires(S& s, tick until) {
  s.sleep_until(until);
};

/// Something that decides requests at explicit instants and consumes on
/// admit: `limiter`, `live_limiter`, `guarded<...>`, or your own wrapper.
template <typename L>
concept acquirable = requires(L& l, tick now, std::int64_t cost) {
  { l.try_acquire_at(now, cost) } -> std::same_as<decision>;
};

/// Sleeps the calling thread on `steady_clock` (nanosecond ticks), with
/// std::this_thread::sleep_until: never wakes before the instant asked
/// (the OS may wake it somewhat after). Stateless; thread-safe.
struct thread_sleeper {
  /// Blocks until steady_clock::now() ≥ `until`; returns at once for an
  /// instant already past.
  void sleep_until(tick until) const {
    using clock = std::chrono::steady_clock;
    const auto target = clock::time_point(std::chrono::duration_cast<clock::duration>(std::chrono::nanoseconds(until)));
    std::this_thread::sleep_until(target);
  }
};

/// Sleeps on a `manual_clock` by advancing it to the instant asked: waiting
/// in tests and simulations takes no real time. Counts the sleeps and can
/// run a hook after each one (to play another caller consuming meanwhile).
/// Holds the clock by reference (it must outlive the sleeper). Not
/// thread-safe.
class manual_sleeper {
 public:
  /// A sleeper that advances `clock`.
  explicit manual_sleeper(manual_clock& clock) noexcept : clock_(&clock) {}

  /// Advances the clock to `until` (no change if it is already there or
  /// later), then runs the hook, if any, with the clock's new instant.
  void sleep_until(tick until) {
    if (until > clock_->now()) clock_->advance(until - clock_->now());
    ++sleeps_;
    latest_ = until;
    if (on_wake_) on_wake_(clock_->now());
  }

  /// How many times `sleep_until` was called.
  [[nodiscard]] std::int64_t sleeps() const noexcept { return sleeps_; }
  /// The instant asked for by the latest `sleep_until` (`never` if none).
  [[nodiscard]] tick latest() const noexcept { return latest_; }
  /// Sets the hook run after each sleep with the instant woken at; an empty
  /// function removes it.
  void on_wake(std::function<void(tick)> hook) { on_wake_ = std::move(hook); }

 private:
  manual_clock* clock_;
  std::int64_t sleeps_ = 0;
  tick latest_ = never;
  std::function<void(tick)> on_wake_;
};

/// How a wait ended.
enum class wait_status {
  admitted,        ///< the request was admitted (and its cost consumed)
  timed_out,       ///< it could not be admitted by the deadline; nothing consumed
  never_admitted,  ///< it can never be admitted (cost above capacity, L = 0); nothing consumed
};

/// The outcome of `acquire`.
struct [[nodiscard]] wait_result {
  /// How the wait ended.
  wait_status status = wait_status::never_admitted;
  /// `admitted`: the instant of the admitting attempt. `timed_out`: the
  /// earliest instant (after the deadline) at which the last attempt said the
  /// request would pass if nothing else happened. `never_admitted`: `never`.
  tick at = never;
  /// The decision of the last attempt (the admit, or the final denial).
  decision last;
  /// How many times the wait slept.
  std::int64_t sleeps = 0;

  /// Whether the request was admitted.
  [[nodiscard]] constexpr bool admitted() const noexcept { return status == wait_status::admitted; }
};

/// Waits until `target` admits a request of `cost`, or until it is certain
/// that it cannot by `deadline` (an instant on `clock`, in ticks).
///
/// Each attempt is `target.try_acquire_at(clock.now(), cost)`. On a denial
/// with `retry_after = r` at `now`: if `now + r > deadline` it returns
/// `timed_out` at once (nothing consumed, nothing slept); else it sleeps
/// until exactly `now + r` (never past the deadline) and tries again — the
/// answer is re-checked because others may have consumed meanwhile. A cost
/// that can never pass returns `never` at once. A deadline not after the
/// first attempt makes this a plain try: one attempt, no sleep. With a real
/// sleeper the thread may wake late (the OS); the attempt it slept for is
/// still made, so an admit can land that much after the deadline, never a
/// sleep that was asked to end after it.
///
/// Thread safety: as safe as `target.try_acquire_at` (see `guarded`); holds
/// no lock while sleeping. Exceptions: whatever the target, clock or sleeper
/// throw.
template <acquirable L, tick_clock C, sleeper S>
wait_result acquire(L& target, std::int64_t cost, tick deadline, const C& clock, S& sleep) {
  wait_result out;
  for (;;) {
    const tick now = static_cast<tick>(clock.now());
    out.last = target.try_acquire_at(now, cost);
    if (out.last.allowed) {
      out.status = wait_status::admitted;
      out.at = now;
      return out;
    }
    if (out.last.retry_after == never) {
      out.status = wait_status::never_admitted;
      out.at = never;
      return out;
    }
    tick at = now > never - out.last.retry_after ? never : now + out.last.retry_after;
    if (at <= now) at = now + 1;  // a denial always waits; never spin on a zero
    if (at > deadline) {
      out.status = wait_status::timed_out;
      out.at = at;
      return out;
    }
    sleep.sleep_until(at);
    ++out.sleeps;
  }
}

/// `acquire` with a relative `timeout` (ticks from the clock's current
/// instant; saturating), for callers that think in durations.
template <acquirable L, tick_clock C, sleeper S>
wait_result acquire_for(L& target, std::int64_t cost, tick timeout, const C& clock, S& sleep) {
  const tick now = static_cast<tick>(clock.now());
  const tick deadline = timeout <= 0 ? now : (now > never - timeout ? never : now + timeout);
  return acquire(target, cost, deadline, clock, sleep);
}

/// `acquire_for` with a std::chrono `timeout` (`std::chrono::milliseconds{50}`),
/// read as nanosecond ticks (time.hpp); saturating.
template <acquirable L, tick_clock C, sleeper S, whole_ns_duration D>
wait_result acquire_for(L& target, std::int64_t cost, D timeout, const C& clock, S& sleep) {
  return acquire_for(target, cost, detail::saturated_ticks(timeout), clock, sleep);
}

namespace detail {
/// The clock a limiter reads, when the type says so (void otherwise).
template <typename L>
struct clock_of {
  using type = void;
};
template <typename P, typename C>
struct clock_of<limiter<P, C>> {
  using type = C;
};
}  // namespace detail

/// `acquire` on the steady clock (nanosecond ticks; `deadline` is a
/// `steady_clock::now()` instant), sleeping the calling thread. The target
/// must decide on steady-clock instants: a `limiter` on another clock is a
/// compile error.
template <acquirable L>
wait_result acquire(L& target, std::int64_t cost, tick deadline) {
  using known = typename detail::clock_of<std::remove_cv_t<L>>::type;
  static_assert(std::is_void_v<known> || std::is_same_v<known, steady_clock>,
                "acquire without a clock waits on steady_clock: pass the limiter's clock and a sleeper");
  const steady_clock clock;
  thread_sleeper sleep;
  return acquire(target, cost, deadline, clock, sleep);
}

/// `acquire_for` on the steady clock: waits at most `timeout` nanoseconds.
template <acquirable L>
wait_result acquire_for(L& target, std::int64_t cost, tick timeout) {
  const steady_clock clock;
  const tick now = clock.now();
  const tick deadline = timeout <= 0 ? now : (now > never - timeout ? never : now + timeout);
  return acquire(target, cost, deadline);
}

/// `acquire_for` on the steady clock with a std::chrono `timeout`
/// (`std::chrono::milliseconds{50}`), read as nanosecond ticks; saturating.
template <acquirable L, whole_ns_duration D>
wait_result acquire_for(L& target, std::int64_t cost, D timeout) {
  return acquire_for(target, cost, detail::saturated_ticks(timeout));
}

/// A limiter (or any `acquirable`) behind a mutex, so that several threads
/// may share it: every `try_acquire_at` runs under the lock, and `acquire`
/// sleeps without it. `with_lock` runs anything else (peeks, reservations,
/// reconfiguration) under the same lock. Thread-safe.
template <typename L>
class guarded {
 public:
  /// Builds the inner object in place from `args`.
  template <typename... Args>
  explicit guarded(std::in_place_t, Args&&... args) : inner_(std::forward<Args>(args)...) {}

  /// Decides one request on the inner object under the lock.
  decision try_acquire_at(tick now, std::int64_t cost) {
    const std::lock_guard<std::mutex> lock(mutex_);
    return inner_.try_acquire_at(now, cost);
  }

  /// Calls `f(inner)` under the lock and returns what it returns.
  template <typename F>
  decltype(auto) with_lock(F&& f) {
    const std::lock_guard<std::mutex> lock(mutex_);
    return std::forward<F>(f)(inner_);
  }

 private:
  std::mutex mutex_;
  L inner_;
};

namespace detail {
template <typename L>
struct clock_of<guarded<L>> : clock_of<L> {};
}  // namespace detail

}  // namespace sluice
