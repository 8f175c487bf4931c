// A circuit breaker for calls to a remote store (sluice::remote; the Redis
// store keeps one per server, or per cluster node): stop calling a store
// that keeps failing, and probe it, one call at a time, until it answers
// again.
//
//   closed    --(N consecutive failures, or a failure rate over the last
//                calls)-->                                   open
//   open      --(cool-down elapsed: the next allow_call)-->  half-open
//   half-open --(the one probe succeeds)-->                  closed
//   half-open --(the probe fails)-->                         open (again, for a cool-down)
//
// Every member takes `now` (steady nanoseconds, or any monotone tick the
// caller uses consistently), so tests need no sleeps; the `_now` twins read
// std::chrono::steady_clock. A probe whose outcome is never reported (its
// caller gave up) does not wedge the breaker: after another cool-down a new
// probe is let through.
//
// Thread safety: every member may be called from any thread. allow_call in
// the closed state is one relaxed atomic load; transitions take a mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>

namespace sluice::remote {

/// When the breaker opens and for how long.
struct circuit_breaker_options {
  /// Open after this many failures in a row (≥ 1).
  std::uint32_t consecutive_failures = 5;
  /// Also open when, over the last `rate_window` calls (1..64, at least
  /// `rate_min_calls` of them recorded), at least this percentage failed.
  /// 0 turns the rate rule off.
  std::uint32_t failure_rate_percent = 0;
  std::uint32_t rate_window = 64;
  std::uint32_t rate_min_calls = 20;
  /// How long it stays open before letting a probe through, in the caller's
  /// ticks (nanoseconds for the `_now` twins).
  std::int64_t cool_down = 1'000'000'000;  // 1 s in ns
};

/// closed / open / half-open; see the file comment.
class circuit_breaker {
 public:
  /// Where the breaker stands; see the file comment.
  enum class state : std::uint8_t { closed, open, half_open };

  /// A closed breaker. `options.consecutive_failures` ≥ 1 (0 is taken as 1).
  explicit circuit_breaker(circuit_breaker_options options = {});

  /// May a call be made at `now`? Closed: yes. Open: no, until the cool-down
  /// has elapsed; then the breaker turns half-open and this call is the
  /// probe (yes). Half-open: no while the probe is out (yes again for a new
  /// probe once a cool-down passed without its outcome).
  [[nodiscard]] bool allow_call(std::int64_t now);
  /// The call succeeded: resets the failure count; a successful probe
  /// closes. True when this call closed it (open or half-open -> closed).
  bool record_success(std::int64_t now);
  /// The call failed: may open (closed), or reopens (half-open). True when
  /// this call opened a closed breaker (a half-open one reopening is no
  /// change of health: it was not closed).
  bool record_failure(std::int64_t now);

  /// The state now (open turns half-open only through allow_call).
  [[nodiscard]] state current() const noexcept { return state_.load(std::memory_order_acquire); }
  /// How many times it opened.
  [[nodiscard]] std::uint64_t times_opened() const noexcept { return opened_.load(std::memory_order_relaxed); }

  /// The twins that read steady_clock (nanoseconds).
  [[nodiscard]] bool allow_call_now() { return allow_call(steady_ns()); }
  bool record_success_now() { return record_success(steady_ns()); }
  bool record_failure_now() { return record_failure(steady_ns()); }

  /// "closed", "open", "half-open".
  [[nodiscard]] static std::string_view name(state s) noexcept;

  /// std::chrono::steady_clock now, in nanoseconds (the `_now` twins' clock).
  [[nodiscard]] static std::int64_t steady_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

 private:
  void open(std::int64_t now);  // requires mu_
  bool rate_trips() const;      // requires mu_

  circuit_breaker_options options_;
  std::atomic<state> state_{state::closed};
  std::atomic<std::uint64_t> opened_{0};
  std::mutex mu_;
  std::uint32_t failures_in_row_ = 0;  // requires mu_
  std::uint64_t history_ = 0;          // last calls, bit 1 = failure, newest in bit 0; requires mu_
  std::uint32_t recorded_ = 0;         // calls in history_, up to rate_window; requires mu_
  std::int64_t opened_at_ = 0;         // requires mu_
  std::int64_t probe_at_ = 0;          // when the half-open probe was let through; requires mu_
};

}  // namespace sluice::remote
