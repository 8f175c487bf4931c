// The store interface's refund by request id: names and the default.
#include "sluice/store.hpp"

namespace sluice {

std::string_view name_of(refund_status s) noexcept {
  switch (s) {
    case refund_status::refunded:
      return "refunded";
    case refund_status::unknown_id:
      return "unknown-id";
    case refund_status::already_refunded:
      return "already-refunded";
    case refund_status::not_refundable:
      return "not-refundable";
    case refund_status::error:
      return "error";
  }
  return "error";
}

refund_answer store::refund_at(std::string_view /*id*/, tick now, std::span<decision> /*per_check*/,
                               std::span<std::int64_t> /*given*/) {
  refund_answer a;
  a.at = now;
  return a;
}

}  // namespace sluice
