// The lease id `sluice serve` hands out (semantics.md, "Leases"; docs/serve.md,
// "Leases"): the nonce of a request's leases and, for each of its checks
// whose policy holds a concurrency part, the policy's name and the key —
// self-contained, so any process of a fleet can release it.
//
//   l1.<16 hex digits: the nonce>(.<policy name>.<key>)+
//
// name and key in base64url without padding (RFC 4648 §5): every byte of a
// key survives, and the id is one token of URL-safe characters, fit for a
// header (nginx passes `Sluice-Lease` on) and a JSON string alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::serve {

/// A lease id, read.
struct lease_token {
  std::uint64_t nonce = 0;
  std::vector<std::pair<std::string, std::string>> checks;  ///< (policy name, key), in the request's order
};

/// Writes the id of `t` (its nonce must not be 0, its checks not empty).
std::string format_lease(const lease_token& t);

/// Reads an id; nullopt when it is not one (a bad prefix, nonce or
/// base64url, no check, more than `most` checks, a nonce of 0, longer than
/// any id of `most` checks and keys of longest_key_bytes).
std::optional<lease_token> parse_lease(std::string_view text, std::size_t most);

/// The longest id format_lease writes for `checks` checks with policy names
/// of up to longest_policy_name bytes and keys of up to `key_bytes`.
std::size_t longest_lease(std::size_t checks, std::size_t key_bytes) noexcept;

/// The longest body POST /v1/release must take to release any id the
/// service issues with keys of up to `key_bytes` (max_checks checks):
/// `{"lease":"<id>"}` and room for whitespace around it.
std::size_t longest_release_body(std::size_t key_bytes) noexcept;

}  // namespace sluice::serve
