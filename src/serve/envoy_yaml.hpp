// envoyproxy/ratelimit's YAML configuration files as the service's Envoy
// rules (docs/serve.md, "envoyproxy/ratelimit files"; semantics.md, "Envoy
// descriptors from envoyproxy/ratelimit files"): a domain and its tree of
// descriptors become a descriptor tree (config::envoy_trees), a rule for
// every descriptor with a `rate_limit` (config::envoy) and, for each limit,
// an exact fixed-window policy aligned to the Unix epoch (config::policies,
// named after the descriptor's path), so an existing deployment switches by
// pointing `[grpc] envoy_config` at its files.
//
// Every error names "FILE:LINE:COLUMN" (1-based, from yaml-cpp's marks):
// YAML syntax, unknown keys (at every level, as the TOML configuration's),
// an unknown unit, a requests_per_unit that is no whole number from 0 to
// 2^32 − 1, a descriptor given twice at one level, a domain given twice.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config.hpp"
#include "sluice/core/result.hpp"

namespace sluice::serve {

/// The policy expression of an envoyproxy/ratelimit limit: a fixed window
/// of `requests_per_unit` per unit ("second", "minute", "hour", "day",
/// "week" = 7 d, "month" = 30 d, "year" = 365 d, as that service counts
/// them; any case), or nullopt for another unit.
std::optional<std::string> envoy_unit_policy(std::string_view unit, std::uint32_t requests_per_unit);

/// Reads one file's text into `c` (its policies must be read already, so
/// the generated names avoid theirs); `file` names it in messages. The
/// domain must be in no other file and no [[envoy]] rule.
std::optional<error> read_envoy_yaml(std::string_view text, const std::string& file, config& c);

/// Reads every file the patterns name (glob(3); a relative pattern is taken
/// from `base_dir`), in order, each pattern's files sorted by name. A
/// pattern that names no file, or a file that cannot be read, is an error
/// whose field is `where` (the TOML value's place).
std::optional<error> load_envoy_files(std::span<const std::string> patterns, const std::string& base_dir,
                                      const std::string& where, config& c);

}  // namespace sluice::serve
