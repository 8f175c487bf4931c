// Secrets kept out of what sluice prints. Every message, log line and metric
// that may show a store URL (or a part of one) writes it through
// `redact_url`, the one place that hides a password (docs/redis.md, "URLs,
// passwords, and what is printed").
#pragma once

#include <string>
#include <string_view>

namespace sluice {

/// What stands for a hidden password.
inline constexpr std::string_view redacted_password = "***";

/// `text` (a URL, or text that failed to parse as one) with every password
/// it may hold replaced by "***". In a well-formed "scheme://user:pw@..."
/// the userinfo after its first ':' is hidden (it ends at the last '@'; the
/// user name is kept). In any other text with an '@' — a mistyped URL such
/// as "redis:/u:pw@h", "redis//u:pw@h" or "rediss:u:pw@h" — everything from
/// the end of its scheme-like start (a word and the ':' and '/' after it; the
/// text's start when there is none) to the last '@' is hidden, user name
/// included. The value of every query parameter named `password` is hidden
/// too. Never fails; it may hide more than the password, never less.
[[nodiscard]] std::string redact_url(std::string_view text);

/// Whether `text` gives a password where `redact_url` would hide one (a
/// userinfo with a ':', or a `password=` query parameter): how a
/// configuration tells that the URL is one of the password's sources
/// without parsing it.
[[nodiscard]] bool url_gives_password(std::string_view text);

}  // namespace sluice
