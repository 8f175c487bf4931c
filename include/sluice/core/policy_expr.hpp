// Policy expressions: a limiter or a composite of limiters, written as one
// line of text, and printed back in a canonical form.
//
//   token-bucket 10/1s burst=5
//   fixed-window 1000/1h
//   all(token-bucket 10/1s burst=5, fixed-window 1000/1h)
//   any(quota 100, gcra 1/1s)
//
// The grammar is in docs/policy-expressions.md. Rates are written as for
// `parse_rate` ("10/1s", "100/min", "10 per minute"); windows come out in
// nanoseconds. Every error names the column (1-based, in bytes) of the
// offending text.
#pragma once

#include <string>
#include <string_view>

#include "sluice/core/any.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// The deepest nesting of all(...)/any(...) a policy expression may have.
inline constexpr int max_policy_depth = 32;

/// Parses a policy expression into a validated policy.
///
/// On error the result's error has field "policy" and a message that says
/// what is wrong, quotes the offending text and gives its column:
/// "unknown algorithm 'bukcet' at column 5 (choose from ...)",
/// "expected ')' at column 40", "burst=0 at column 22: burst must be at
/// least 1 (got 0)". The column is always in [1, size + 1]; size + 1 means
/// "at the end of the text". Whitespace (spaces, tabs, line breaks) is free
/// between tokens. Never throws on bad input (only std::bad_alloc);
/// thread-safe (pure).
result<any_policy> parse_policy(std::string_view text);

/// The canonical expression of a policy: parse_policy(format_policy(p))
/// gives the same policy, and format_policy of that gives the same text.
/// Options at their default (burst = L, queue = L, origin = 0) are left out;
/// windows are written with the largest unit that divides them (1h, 90s,
/// 1500ms). Composites print as "all(a, b)" and "any(a, b)".
std::string format_policy(const any_policy& p);

/// A duration in nanoseconds with the largest unit that divides it exactly:
/// "1h", "90s", "1500ms", "7ns"; "1d" for a day; "0s" for 0; a negative
/// duration gets a leading '-'. `parse_duration` reads it back.
std::string format_duration(tick ns);

/// A rate as a policy expression writes it: "10/1s", "5/90s" (L, then W as
/// `format_duration` writes it).
std::string format_rate(rate r);

}  // namespace sluice
