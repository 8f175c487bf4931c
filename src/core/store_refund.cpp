// The store interface's refund by request id: the names of its statuses.
#include "sluice/core/store.hpp"

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

}  // namespace sluice
