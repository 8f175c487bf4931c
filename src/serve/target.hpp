// A request target as the rules read it (semantics.md, "The request the
// rules see"): origin-form or absolute-form split into authority, path and
// query; the path normalised as nginx normalises $uri (percent-decoded,
// slashes merged, dot segments removed) or found invalid; query parameters
// percent-decoded. Pure functions on strings: the rules, the service's
// routing, the fuzz target and the tests share them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sluice::serve {

/// A request target split into its parts (views into the target).
struct target_parts {
  /// The path as sent (not normalised): "/" for an absolute-form target
  /// without one.
  std::string_view path;
  /// What follows the first '?' (without it); empty when none.
  std::string_view query;
  /// Absolute-form only: the authority (host[:port]), which replaces the
  /// Host header (RFC 9112 3.2.2).
  std::optional<std::string_view> authority;
};

/// Splits an origin-form ("/path?query") or absolute-form
/// ("http://host/path?query", also https, the scheme in any case) target.
/// Nothing for any other form (authority-form, "*", a relative path, an
/// authority with userinfo or empty).
std::optional<target_parts> split_target(std::string_view target) noexcept;

/// What normalise_path found.
enum class path_form : unsigned char {
  normal,     ///< the path is already normalised; `out` is untouched
  rewritten,  ///< `out` holds the normalised path
  invalid,    ///< it cannot be normalised safely; `out` is unspecified
};

/// Normalises a raw path: every %XX decoded, empty segments dropped, then
/// "." dropped and ".." removing the segment before it (RFC 3986 5.2.4),
/// a trailing '/' kept when the last segment is empty, "." or "..".
/// Invalid: a path not starting with '/', a '%' without two hex digits, an
/// encoded '/', a byte below 0x20 or 0x7F (raw or encoded), a '\' (raw or
/// encoded), a '#', a ".." above the root, a "." or ".." segment followed
/// by ';'. The normal case (no '%', no empty or dot segment) costs one scan
/// and no allocation.
path_form normalise_path(std::string_view raw, std::string& out);

/// The normalised path of a target, by which sluice's own endpoints are
/// routed (`//v1/decide` is `/v1/decide`): a view into `target` or into
/// `buf`; nullopt when the target has no path that can be normalised.
std::optional<std::string_view> routed_path(std::string_view target, std::string& buf);

/// What query_value found.
enum class query_form : unsigned char { found, absent, invalid };

/// The decoded value of the query parameter whose decoded name is `name`
/// (pairs split at '&', "%XX" decoded, '+' a space; a pair without '=' has
/// an empty value), written to `out`. Invalid when that name is given more
/// than once, or a pair that might be it has a bad '%' escape, or the query
/// holds a '#'.
query_form query_value(std::string_view query, std::string_view name, std::string& out);

}  // namespace sluice::serve
