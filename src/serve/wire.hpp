// The decision on the wire (semantics.md, "On the wire (HTTP)"): whole
// seconds rounded up, and the RateLimit-Policy / RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers in their named-policy list form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/any.hpp"
#include "sluice/store.hpp"
#include "sluice/time.hpp"

namespace sluice::serve {

/// Nanoseconds as whole seconds, rounded up: 1 ns is 1 s, 1 s is 1 s.
/// Requires ns ≥ 0 and ns != never.
std::int64_t ceil_seconds(tick ns) noexcept;

/// The largest Integer a Structured Field carries (RFC 9651: 15 digits);
/// larger values are written as this.
inline constexpr std::int64_t sf_integer_max = 999'999'999'999'999;

/// The quota and window a policy advertises: `q` = L and `w` = W (ns) for a
/// rate-based limiter, `q` = N and no window for a quota; a composite
/// advertises its first part's. Nothing for always-allow / always-deny.
struct advertised {
  std::int64_t quota = 0;
  std::optional<tick> window;
};
std::optional<advertised> advertised_of(const any_policy& p);

/// One RateLimit-Policy list member: "NAME";q=Q;w=W (w rounded up to
/// seconds, at least 1). Empty when the policy advertises nothing. The name
/// must be valid_policy_name (no escaping needed).
std::string policy_member(std::string_view name, const any_policy& p);

/// One RateLimit list member: "NAME";r=R;t=T, with t left out when nothing
/// will ever free up (`t_ns` nullopt or never).
std::string ratelimit_member(std::string_view name, std::int64_t remaining, std::optional<tick> t_ns);

/// Whether an answer from `s` carries the checks' real figures (remaining,
/// the time until it grows): not when a failure mode or a rule answered
/// without the store (fail-open, fail-closed, rule), the store answered
/// with an error, or refused a request id. Such an answer carries
/// RateLimit-Policy but no RateLimit field.
[[nodiscard]] constexpr bool figures_known(source s) noexcept {
  return s != source::fail_open && s != source::fail_closed && s != source::error && s != source::id_conflict &&
         s != source::rule;
}

/// Writes `s` as a JSON string body fragment (quotes included), escaping
/// quotes, backslashes and every control byte; bytes ≥ 0x80 that are not
/// valid UTF-8 are written as \ufffd.
void append_json_string(std::string& out, std::string_view s);

}  // namespace sluice::serve
