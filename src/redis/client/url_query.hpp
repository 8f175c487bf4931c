// The query of a redis:// or rediss:// URL: the TLS settings
// (tls_settings in client.hpp), usable wherever a store URL is. Private to
// sluice::redis.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "redis/client/client.hpp"
#include "sluice/result.hpp"

namespace sluice::redis {

/// Percent-decodes `in` into `out`; false on a malformed escape (url.cpp).
bool percent_decode(std::string_view in, std::string& out);

/// Reads `name=value&...` (values percent-decoded) into `u.tls`: `ca_file`,
/// `cert_file`, `key_file`, `server_name`, `verify` (`yes` or `no`). Each is
/// refused on a redis:// URL (they need rediss://). Either scheme takes
/// `wait_replicas` (0..1000) and `wait_timeout` (1..60000 ms, "50ms" or
/// "50"; only with wait_replicas >= 1) and `module` (auto, on, off).
/// Refused too: an unknown name,
/// a repeated one, an empty value, and a `cert_file` without `key_file` or
/// the reverse. The error names the parameter ("query" for its shape).
std::optional<error> apply_url_query(std::string_view query, url& u);

}  // namespace sluice::redis
