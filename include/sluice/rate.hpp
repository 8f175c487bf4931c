// A limit "L per W": at most L units of cost in any W ticks, and the parser
// for the way people write it ("10/60s", "100/min", "10 per minute").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/result.hpp"
#include "sluice/time.hpp"

namespace sluice {

/// The largest limit, window, burst or queue sluice accepts: 2^62. Every
/// product of two of them fits in 128 bits with room for sums, so no step
/// can overflow.
inline constexpr std::int64_t max_quantity = std::int64_t{1} << 62;

/// At most `limit` units of cost in `window` ticks.
struct rate {
  std::int64_t limit = 0;  ///< L, 0 to 2^62; 0 denies everything.
  tick window = 1;         ///< W in ticks, 1 to 2^62.
  friend constexpr bool operator==(const rate&, const rate&) = default;
};

/// Checks a rate's ranges; the error names "limit" or "window".
result<rate> make_rate(std::int64_t limit, tick window);

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
