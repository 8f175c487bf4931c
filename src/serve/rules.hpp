// From an HTTP request to checks: the rules of a configuration (config.hpp)
// matched against a request's method, path, host and headers, each matching
// rule giving one check (a policy, a key built from the request, a cost).
// Independent of the HTTP library, so the fuzz target and the tests drive
// it with plain strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "forwarded.hpp"
#include "sluice/core/result.hpp"

namespace sluice::serve {

/// One request header, as received.
struct header_view {
  std::string_view name;
  std::string_view value;
};

/// What the rules see of a request.
struct request_view {
  std::string_view method;
  /// The request target: the path and an optional "?query".
  std::string_view target;
  std::span<const header_view> headers;
  /// The peer's IP address as text (the TCP connection's other end).
  std::string_view peer;

  /// The first header of that name (ASCII case-insensitive), if any.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const noexcept;
};

/// One check a request must pass.
struct planned_check {
  std::size_t policy = 0;  ///< index into the configuration's policies
  std::string key;
  std::int64_t cost = 1;
  bool shadow = false;
  std::size_t rule = 0;  ///< index into the configuration's rules
  /// A shadow check whose rule could not read the request safely (a key
  /// too long, a bad cost, an invalid path, query or header): counted as
  /// invalid, not decided. Never set on an enforced check.
  bool invalid = false;
};

/// The rules of one configuration, ready to match requests. Immutable once
/// built: any number of threads may call `plan` at once.
class rule_set {
 public:
  /// Requires `c` to be a configuration parse_config accepted (every rule's
  /// policy defined). Keeps no reference to `c`.
  explicit rule_set(const config& c);

  /// Writes to `out` (cleared first) one check per rule that matches `r`, in
  /// the rules' order. The rules read the target as semantics.md says ("The
  /// request the rules see"): the normalised path, decoded query values, an
  /// absolute-form target's host. A rule whose key names something the
  /// request lacks (a header, a path segment, a query parameter) does not
  /// apply. The error names what an enforced rule could not read: a key
  /// longer than the limit ("key"), a cost header that is not a whole
  /// number ≥ 1 ("cost"), an invalid target or path ("path"), an invalid
  /// query ("query"), a header given twice or a forwarded client address
  /// that cannot be read (forwarded.hpp) ("header"), more than max_checks
  /// enforced checks ("checks"). A shadow rule never gives an error: its
  /// check is marked `invalid` instead, and shadow checks do not count
  /// toward max_checks.
  std::optional<error> plan(const request_view& r, std::vector<planned_check>& out) const;

 private:
  struct compiled_rule {
    match_spec match;
    std::size_t policy = 0;
    std::vector<key_part> key;
    cost_spec cost;
    bool shadow = false;
    std::string name;
  };
  std::vector<compiled_rule> rules_;
  forwarded_reader forwarded_;  // key part "client"
  std::size_t key_bytes_ = 256;
};

/// Appends `value` to `key` with ':' and '%' written %3A and %25 (how key
/// parts are joined without ambiguity).
void append_key_part(std::string& key, std::string_view value);

/// The path of a target (before '?'), as sent.
std::string_view path_of(std::string_view target) noexcept;

/// The N-th (1-based) non-empty segment of a path, if present.
std::optional<std::string_view> path_segment(std::string_view path, std::size_t n) noexcept;

/// ASCII case-insensitive equality (header names).
bool iequals(std::string_view a, std::string_view b) noexcept;

/// `s` without leading and trailing spaces and tabs (RFC 9110's OWS).
std::string_view trim_ows(std::string_view s) noexcept;

}  // namespace sluice::serve
