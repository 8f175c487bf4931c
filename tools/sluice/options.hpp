// The flags that describe a limiter, shared by `replay` and `compare`, and
// turning them into a validated policy with errors that name the flag.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/core/any.hpp"
#include "sluice/core/result.hpp"

namespace sluice::cli {

/// The limiter flags as typed (validated by `build_policy`, not by CLI11,
/// so the messages are ours).
struct limiter_flags {
  std::string algorithm;
  std::string limit;
  std::string burst;
  std::string buckets;
  std::string queue;
  std::string quota;
};

/// A check for every option that takes a value: an empty value is refused
/// ("--load-state: is empty; give it a value"), so an unset variable in a
/// script is a usage error, never the option's default.
const CLI::Validator& non_empty();

/// Adds --limit, --burst, --buckets, --queue and --quota to `app`.
void add_limit_flags(CLI::App& app, limiter_flags& f);

/// Parses a whole number flag value; the error names the flag.
result<std::int64_t> parse_count(std::string_view flag, std::string_view text);

/// Builds the policy for `algo` from the flags; the error message names the
/// flag at fault ("--limit: window must be positive (got '0s')").
result<any_policy> build_policy(algorithm algo, const limiter_flags& f);

/// Resolves an algorithm name; the error lists the valid names.
result<algorithm> parse_algorithm(std::string_view flag, std::string_view name);

}  // namespace sluice::cli
