// A limit "L per W": at most L units of cost in any W ticks, and the parser
// for the way people write it ("10/60s", "100/min", "10 per minute").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// The largest limit, window, burst or queue sluice accepts: 2^62. Every
/// product of two of them fits in 128 bits with room for sums, so no step
/// can overflow.
inline constexpr std::int64_t max_quantity = std::int64_t{1} << 62;

/// At most `limit` units of cost in `window` ticks.
struct rate {
  std::int64_t limit = 0;  ///< L, 0 to 2^62; 0 denies everything.
  tick window = 1;         ///< W in ticks, 1 to 2^62.

  constexpr rate() noexcept = default;
  /// `limit` units in `window` ticks; the policy built on it checks both.
  constexpr rate(std::int64_t l, tick w) noexcept : limit(l), window(w) {}
  /// `limit` units in `window`, a std::chrono duration read as nanosecond
  /// ticks (time.hpp): `rate{100, std::chrono::seconds{1}}`. Exact: its
  /// unit is a whole number of nanoseconds, or it does not compile (use
  /// `make_rate`, which checks the value). A window past int64 nanoseconds
  /// (about 292 years) saturates there, past 2^62, so every policy refuses
  /// it naming "window".
  template <whole_ns_duration D>
  constexpr rate(std::int64_t l, D w) noexcept : limit(l), window(detail::saturated_ticks(w)) {}

  friend constexpr bool operator==(const rate&, const rate&) = default;
};

/// Checks a rate's ranges; the error names "limit" or "window".
result<rate> make_rate(std::int64_t limit, tick window);

/// `make_rate` with the window a std::chrono duration of any integral unit,
/// read as nanosecond ticks (`ticks_of`): the error names "window" when it
/// is not a whole number of nanoseconds, or past int64, or out of range.
template <chrono_duration D>
result<rate> make_rate(std::int64_t limit, D window) {
  const std::optional<tick> w = ticks_of(window);
  if (!w) return error{"window", "must be a whole number of nanoseconds within int64"};
  return make_rate(limit, *w);
}

/// Parses a duration such as "60s", "1m", "500ms", "1.5h", "2 minutes" into
/// nanoseconds. Units: ns, us, ms, s (sec, second), m (min, minute),
/// h (hr, hour), d (day); plurals allowed; a bare unit means 1 of it. The
/// number may be a decimal but must come to whole nanoseconds. A bare number
/// without a unit is an error (ambiguous). Errors name `field`.
result<tick> parse_duration(std::string_view text, std::string_view field = "window");

/// Parses "L/W" or "L per W" with W as in parse_duration: "10/60s", "10/1m",
/// "100/min", "5/s", "2/500ms", "1000/1h", "10 per minute", "3/10s". The
/// window comes out in nanoseconds. The error says what is wrong and where.
result<rate> parse_rate(std::string_view text);

/// Formats nanoseconds as the shortest exact decimal number of seconds:
/// "0", "0.5", "52.5", "0.000000001", "-3". Used by every output of the
/// command.
std::string format_seconds(tick ns);

/// Parses a decimal number of seconds with at most 9 fractional digits
/// ("12", "0.5", "-1.25", "3.000000001") into exact nanoseconds. Returns
/// false on anything else, including values outside int64 nanoseconds.
bool parse_seconds(std::string_view text, tick& out) noexcept;

}  // namespace sluice
