// Time in sluice: int64 ticks, the clocks that produce them, and
// std::chrono durations read as ticks.
//
// A tick has no fixed length; the limiter never asks. `steady_clock` counts
// nanoseconds from boot (for durations), `unix_clock` nanoseconds since the
// Unix epoch (the stores' clock), `manual_clock` whatever its owner advances. Limiters
// never read a clock inside their step function: a clock is read at the
// edge (`try_acquire`) and the instant passed in (`try_acquire_at`).
//
// Where sluice takes a duration (a rate's window, a lease's length, a
// clock's advance, a wait's timeout), a std::chrono duration is read as
// nanosecond ticks — those of `steady_clock`, `unix_clock` and every store —
// exactly, in integers (semantics.md, "Time and arithmetic"):
//
//   sluice::rate{100, std::chrono::seconds{1}}       // window = 1'000'000'000 ticks
//   sluice::ticks_of(std::chrono::milliseconds{5})  // 5'000'000
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <ratio>
#include <type_traits>

#include "sluice/core/detail/arith.hpp"

namespace sluice {

/// An instant or a duration, in ticks.
using tick = std::int64_t;

/// The `retry_after` of a request that will never be admitted (cost above
/// capacity, a zero limit, or an instant past the end of representable time).
inline constexpr tick never = std::numeric_limits<tick>::max();

/// A std::chrono duration with an integral count of at most 64 bits: the
/// durations sluice converts to ticks. A floating-point one is not (its
/// value may not be a whole number of ticks, and no decision uses floating
/// point).
template <typename D>
concept chrono_duration = requires {
  typename D::rep;
  typename D::period;
}
&&std::same_as<D, std::chrono::duration<typename D::rep, typename D::period>>&& std::integral<typename D::rep> &&
    sizeof(typename D::rep) <= 8;

/// A `chrono_duration` whose unit is a whole number of nanoseconds
/// (nanoseconds, microseconds, milliseconds, seconds, minutes, hours, days,
/// ...): every value of it is whole ticks, so a constructor, which cannot
/// answer an error, takes it. One of a finer or odd unit (picoseconds,
/// thirds of a second) goes through `ticks_of`, which checks its value.
template <typename D>
concept whole_ns_duration = chrono_duration<D> && std::ratio_divide<typename D::period, std::nano>::den == 1;

/// `d` in nanosecond ticks, exactly; nullopt when it is not a whole number
/// of nanoseconds (1 of `duration<int64_t, std::ratio<1, 3>>`; 3 of them
/// are 1 s) or lies outside int64 (more than about 292 years either way).
template <chrono_duration D>
[[nodiscard]] constexpr std::optional<tick> ticks_of(D d) noexcept {
  using ns = std::ratio_divide<typename D::period, std::nano>;  // ticks = count * num / den
  const detail::i128 scaled = static_cast<detail::i128>(d.count()) * ns::num;
  if (scaled % ns::den != 0) return std::nullopt;
  const detail::i128 t = scaled / ns::den;
  if (t < detail::i64_min || t > detail::i64_max) return std::nullopt;
  return static_cast<tick>(t);
}

namespace detail {
/// `d` (whole nanoseconds) in ticks, saturated at int64's ends: past them
/// it is past every bound a policy accepts, so `make` refuses it.
template <whole_ns_duration D>
[[nodiscard]] constexpr tick saturated_ticks(D d) noexcept {
  using ns = std::ratio_divide<typename D::period, std::nano>;
  const i128 t = static_cast<i128>(d.count()) * ns::num;
  return t < i64_min ? i64_min : t > i64_max ? i64_max : static_cast<tick>(t);
}
}  // namespace detail

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

  /// Moves the clock forward by `d` read as nanosecond ticks (a clock that
  /// counts nanoseconds, as the stores' does); saturates as `advance(tick)`.
  template <whole_ns_duration D>
  constexpr void advance(D d) noexcept {
    advance(detail::saturated_ticks(d));
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
