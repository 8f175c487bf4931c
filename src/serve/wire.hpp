// The decision on the wire (semantics.md, "On the wire (HTTP)"): whole
// seconds rounded up, and the RateLimit-Policy / RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers in their named-policy list form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/core/any.hpp"
#include "sluice/core/store.hpp"
#include "sluice/core/time.hpp"

namespace sluice::serve {

/// Nanoseconds as whole seconds, rounded up: 1 ns is 1 s, 1 s is 1 s.
/// Requires ns ≥ 0 and ns != never.
std::int64_t ceil_seconds(tick ns) noexcept;

/// The largest Integer a Structured Field carries (RFC 9651: 15 digits);
/// larger values are written as this.
inline constexpr std::int64_t sf_integer_max = 999'999'999'999'999;

/// One limit as Envoy's `current_limit` holds it: L per W (ns) for a
/// rate-based limiter, a quota's N with no window; a composite's first
/// part's (one limit is all that message holds). Nothing for always-allow /
/// always-deny.
struct current_limit {
  std::int64_t quota = 0;
  std::optional<tick> window;
};
std::optional<current_limit> current_limit_of(const any_policy& p);

/// One RateLimit-Policy item (semantics.md, "On the wire (HTTP)"): `q`
/// units in `w` seconds, `w` absent when nothing is given back. A
/// rate-based limiter's q / w is its L / W exactly and q is at least its
/// capacity (L, the burst S or the queue Q), or, when the exact pair would
/// pass an SF Integer, the rate rounded down.
struct advertised {
  std::int64_t quota = 0;              ///< q, 0 to sf_integer_max
  std::optional<std::int64_t> window;  ///< w in seconds, 1 to sf_integer_max
  /// A concurrency limit's item: q units in flight, `qu="concurrent-requests"`.
  bool concurrent = false;
  friend bool operator==(const advertised&, const advertised&) = default;
};
/// The item of a plain limiter: nothing for always-allow, and for a
/// composite (whose parts advertise, see policy_member).
std::optional<advertised> advertised_of(const any_policy& p);

/// The RateLimit-Policy items of a check of policy `name`, joined by ", ":
/// `"NAME";q=Q;w=W` for a plain limiter; for a composite every part's item,
/// depth first, named `NAME/i` for its i-th part (1-based, `NAME/i/j` for a
/// part of a part). Empty when nothing is advertised. The name must be
/// valid_policy_name (no escaping needed).
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
