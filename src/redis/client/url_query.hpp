// The query of a Redis URL: one table of parameters (url_query.cpp), each
// saying on which schemes it may stand and what it sets in a `url` — the
// TLS settings (tls_settings in client.hpp), the WAIT settings, and what
// the URL tells the store (url_store_settings). Usable wherever a store URL
// is. Private to sluice::redis.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "redis/client/client.hpp"
#include "sluice/core/result.hpp"

namespace sluice::redis {

/// Percent-decodes `in` into `out`; false on a malformed escape (url.cpp).
bool percent_decode(std::string_view in, std::string& out);

/// Which URL a query stands on: its parameters are those of the table that
/// name it.
enum class url_kind {
  tcp,         ///< redis://, rediss:// (TLS settings only there), a Sentinel URL's
  cluster,     ///< redis+cluster://
  unix_socket  ///< unix:// (whose own `db` its parser reads)
};

/// The table's parameters already given in one query (one bit each).
using query_seen = std::uint32_t;

/// Reads one item `name=value` of a query (the value percent-decoded) into
/// `u`. Refused: a name the table does not hold on `kind` ("query", with the
/// names it holds there; on a redis:// URL a TLS setting is refused naming
/// it: it needs rediss://), one given twice, one without a value or with an
/// empty one, and a bad value (each naming the parameter). A value is never
/// echoed but in a bad value's message.
std::optional<error> apply_url_parameter(std::string_view item, url& u, url_kind kind, query_seen& seen);

/// Reads `name=value&...` into `u` (apply_url_parameter on each item), then
/// checks what needs two parameters: a `cert_file` without `key_file` or
/// the reverse, `wait_timeout` without `wait_replicas` >= 1. An empty query
/// is refused ("query").
std::optional<error> apply_url_query(std::string_view query, url& u, url_kind kind = url_kind::tcp);

/// What the URL `text` (any scheme of the Redis store) tells the store
/// (url_store_settings): its query read as the scheme's parser reads it.
/// Errors as that parser's.
result<url_store_settings> store_settings_of(std::string_view text);

}  // namespace sluice::redis
