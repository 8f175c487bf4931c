// The --policy flag shared by `replay`, `compare` and `worst-case`: a policy
// expression (docs/policy-expressions.md) instead of --algorithm and the
// limiter flags.
#pragma once

#include <optional>
#include <string_view>

#include "options.hpp"
#include "sluice/core/any.hpp"
#include "sluice/core/result.hpp"

namespace sluice::cli {

/// Parses a --policy value; the error names the flag and keeps the column:
/// "--policy: unknown algorithm 'bukcet' at column 5 (...)".
result<any_policy> parse_policy_flag(std::string_view text);

/// The error for --policy given together with a flag it replaces: one of
/// `algorithm_flag` (when `algorithm_given`), --limit, --burst, --buckets,
/// --queue or --quota; nothing if there is none.
std::optional<error> policy_excludes(std::string_view algorithm_flag, bool algorithm_given, const limiter_flags& f);

/// Whether a leaky queue is anywhere in `p` (its decisions carry a release
/// time worth printing).
bool has_leaky_queue(const any_policy& p);

/// Whether `p` admits without any bound (always-allow, an any() with such a
/// part, an all() of only such parts): its worst case of INT64_MAX means
/// "unbounded". Any other policy's INT64_MAX is a count that saturated.
bool admits_without_bound(const any_policy& p);

/// The largest window W of any part of `p`, in ticks; nothing if no part
/// has one (quota, always-allow, always-deny and composites of them).
std::optional<tick> largest_window(const any_policy& p);

}  // namespace sluice::cli
