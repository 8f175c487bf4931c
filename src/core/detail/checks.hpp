// Private to sluice::core: the checks every policy's `make` runs on its
// parameters, so that each error names its field the same way, and the
// default of a size (a burst, a queue) that a spec or an expression omits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/core/policy_expr.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/result.hpp"

namespace sluice::detail {

/// How the largest count sluice accepts is written in an error.
inline const std::string max_text = "2^62 (4611686018427387904)";

/// Checks a count that must lie in [low, 2^62]; names `field`.
inline std::optional<error> check_count(const char* field, std::int64_t v, std::int64_t low) {
  if (low == 0 && v < 0) return error{field, "must not be negative (got " + std::to_string(v) + ")"};
  if (v < low) return error{field, "must be at least " + std::to_string(low) + " (got " + std::to_string(v) + ")"};
  if (v > max_quantity) return error{field, "must be at most " + max_text + " (got " + std::to_string(v) + ")"};
  return std::nullopt;
}

/// Checks L (0 to 2^62, "limit") and W (1 to 2^62 ticks, "window").
inline std::optional<error> check_rate(rate r) {
  if (auto e = check_count("limit", r.limit, 0)) return e;
  if (r.window <= 0) return error{"window", "must be positive (got " + std::to_string(r.window) + ")"};
  if (r.window > max_quantity)
    return error{"window", "must be at most " + max_text + " ticks (got " + std::to_string(r.window) + ")"};
  return std::nullopt;
}

/// The size (a burst S, a queue Q) of a policy of rate `r` when none is
/// given: L, or 1 when L is 0 (a size is at least 1).
inline std::int64_t default_size(rate r) noexcept { return r.limit == 0 ? 1 : r.limit; }

/// `given`, or the default size for `r`.
inline std::int64_t size_or_default(const std::optional<std::int64_t>& given, rate r) noexcept {
  return given ? *given : default_size(r);
}

/// "NAME RATE", and " OPTION=SIZE" when the size is not the default: how a
/// policy expression writes a rate with a size.
inline std::string sized_text(std::string_view name, rate r, std::string_view option, std::int64_t size) {
  std::string out = std::string(name) + " " + format_rate(r);
  if (size != default_size(r)) out += " " + std::string(option) + "=" + std::to_string(size);
  return out;
}

}  // namespace sluice::detail
