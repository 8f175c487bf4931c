// The Envoy side of a configuration, without gRPC: the [grpc] and [[envoy]]
// sections of the TOML file (and the envoyproxy/ratelimit files named by
// `[grpc] envoy_config`, envoy_yaml.hpp), and matching one descriptor of Envoy's
// ShouldRateLimit request (a domain and its (key, value) entries) to the
// rule that limits it. The gRPC front end (envoy/) builds on this; a build
// without gRPC still reads and checks these sections.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config.hpp"
#include "sluice/core/result.hpp"

namespace sluice::serve {

/// One entry of a request's descriptor.
struct entry_view {
  std::string_view key;
  std::string_view value;
};

/// Whether `value` matches the envoyproxy/ratelimit wildcard `pattern` as
/// that service matches it: each '*' matches any run of bytes (the empty
/// one too); `value` begins with the text before the first '*', ends with
/// the text after the last, and holds each text between them in order,
/// each taken at its leftmost place. A pattern without '*' is equality.
bool envoy_wildcard_match(std::string_view pattern, std::string_view value) noexcept;

/// The index into `c.envoy` of the rule for `entries` in `domain`, or
/// nullopt. A domain of an envoyproxy/ratelimit file: the rule of the node
/// its tree leads to, level by level (exact value, else the first wildcard
/// that matches, else the key alone; exactly as deep as the descriptor).
/// Otherwise the first [[envoy]] rule whose entries match (same length,
/// same keys in order, equal values where the rule gives one).
///
/// `keyed`, when not empty (as long as `entries`), receives the entries the
/// descriptor's state is keyed by (envoy_key): `entries` themselves, but a
/// level matched through a wildcard with `share_threshold` gives the
/// wildcard as its value, so every value it matches shares one state. Its
/// views point into `entries` and `c`.
std::optional<std::size_t> match_envoy(const config& c, std::string_view domain, std::span<const entry_view> entries,
                                       std::span<entry_view> keyed = {});

/// Whether any rule names `domain`.
bool knows_domain(const config& c, std::string_view domain) noexcept;

/// The key a matching descriptor is limited under: its values joined with
/// ':' as key parts are (append_key_part), so the descriptor
/// [("remote_address", "10.0.0.1")] and the HTTP key "client" of that peer
/// share one state when their rules name the same policy.
void envoy_key(std::span<const entry_view> entries, std::string& out);

}  // namespace sluice::serve
