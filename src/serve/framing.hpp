// HTTP/1.1 message framing and Host, as RFC 9112 requires of a server
// (semantics.md, "HTTP/1.1 framing"): the checks the HTTP parser (Beast)
// leaves to its user. Independent of the HTTP library, so the fuzz target
// and the tests drive it with plain strings.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "rules.hpp"

namespace sluice::serve {

/// Why a request's framing fields or Host make it unanswerable (a message
/// for a 400 after which the connection is closed), or nothing. `version`
/// is 10 or 11 (HTTP/1.0, HTTP/1.1). Refused: a Transfer-Encoding other
/// than exactly "chunked" (one field, one coding), one on HTTP/1.0, one
/// beside Content-Length; more than one Content-Length (fields or list
/// members) or one that is not 1*DIGIT; no Host on HTTP/1.1, more than one
/// Host, a Host that is not host[:port].
std::optional<std::string_view> framing_error(std::span<const header_view> headers, unsigned version) noexcept;

}  // namespace sluice::serve
