// A store's refund by request id (semantics.md, "Refunds"): the outcome of
// `store::refund_at`. Its own header so that the store interface only
// names it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sluice/core/decision.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// What a refund by request id did.
enum class refund_status : std::uint8_t {
  refunded,          ///< the id's admit was given back (each check by its rule)
  unknown_id,        ///< no decision with that id is remembered (never, peeks only, past the window)
  already_refunded,  ///< refunded before: nothing given, nothing changed
  not_refundable,    ///< the id's decision took nothing (a denial, a bound's mode)
  error,             ///< the store failed (or keeps no receipts): nothing refunded; may be sent again
};

/// How many statuses there are (for tables indexed by status).
inline constexpr std::size_t refund_status_count = 5;

/// "refunded", "unknown-id", "already-refunded", "not-refundable", "error".
std::string_view name_of(refund_status s) noexcept;

/// A store's answer to a refund.
struct refund_answer {
  refund_status status = refund_status::error;
  /// refunded: the checks' figures after the refund combined as all_of
  /// (`combine_reports`: `allowed = true`, a report's figures); otherwise
  /// denied, `retry_after = never`.
  decision d{false, 0, never, 0, 0, -1};
  /// refunded: how many checks the id's request had (the entries of
  /// `per_check` and `given` written); 0 otherwise.
  std::size_t checks = 0;
  /// The instant the refund was made at, in the store's ticks.
  tick at = 0;
};

}  // namespace sluice
