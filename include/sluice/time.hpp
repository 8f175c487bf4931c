// Time in sluice: int64 ticks, and the clocks that produce them.
//
// A tick has no fixed length; the limiter never asks. `steady_clock` counts
// nanoseconds from boot (for durations), `unix_clock` nanoseconds since the
// Unix epoch (the stores' clock), `manual_clock` whatever its owner advances. Limiters
// never read a clock inside their step function: a clock is read at the
// edge (`try_acquire`) and the instant passed in (`try_acquire_at`).
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace sluice {

/// An instant or a duration, in ticks.
using tick = std::int64_t;

/// The `retry_after` of a request that will never be admitted (cost above
/// capacity, a zero limit, or an instant past the end of representable time).
inline constexpr tick never = std::numeric_limits<tick>::max();

/// A virtual clock for tests and simulations: starts at 0 (or `start`) and
/// moves only when advanced. Not thread-safe.
class manual_clock {
 public:
  constexpr manual_clock() noexcept = default;
  constexpr explicit manual_clock(tick start) noexcept : now_(start) {}

  /// The current instant.
  [[nodiscard]] constexpr tick now() const noexcept { return now_; }

  /// Moves the clock forward by `d` ticks. `advance(0)` and a negative `d`
  /// change nothing (the clock never moves backwards); saturates at
  /// INT64_MAX.
  constexpr void advance(tick d) noexcept {
    if (d <= 0) return;
    now_ = (now_ > std::numeric_limits<tick>::max() - d) ? std::numeric_limits<tick>::max() : now_ + d;
  }

 private:
  tick now_ = 0;
};

/// The monotonic system clock in nanoseconds (std::chrono::steady_clock).
/// Thread-safe.
struct steady_clock {
  [[nodiscard]] static tick now() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

/// The wall clock in nanoseconds since the Unix epoch
/// (std::chrono::system_clock): the default clock of the keyed and memory
/// stores, whose windows must stay aligned across restarts and agree with
/// the Redis store's (semantics.md, "Time and arithmetic"). It may step
/// back when the system's time is set; the limiters read a `now` earlier
/// than a state's latest admit as that admit's time. Thread-safe.
struct unix_clock {
  [[nodiscard]] static tick now() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

namespace detail {
/// Reads a clock as the limiters hold it: an empty clock type (steady_clock)
/// is default-constructed, any other is read through the pointer.
template <typename Clock>
tick read_clock(const Clock* clock) noexcept {
  if constexpr (std::is_empty_v<Clock>) {
    return Clock{}.now();
  } else {
    return clock->now();
  }
}
}  // namespace detail

}  // namespace sluice
