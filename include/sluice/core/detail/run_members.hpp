// `store::run_at` (store.hpp) of a store whose decide_at, peek_at and
// report_at are members of its own (the memory store, the Redis store): the
// one dispatch on `store_op`, so that no store writes the switch again.
//
// Internal to sluice's stores (installed because stores in other targets
// share it); not part of the API, may change between versions.
#pragma once

#include <optional>
#include <span>
#include <stdexcept>

#include "sluice/core/store.hpp"

namespace sluice::detail {

/// `op` on `r` through `s`'s own decide_at, peek_at or report_at.
template <class S>
store_decision run_members(S& s, store_op op, const store_request& r, std::span<decision> per_check,
                           std::span<std::optional<tick>> grows_after) {
  switch (op) {
    case store_op::decide:
      return s.decide_at(r, per_check, grows_after);
    case store_op::peek:
      return s.peek_at(r, per_check);
    case store_op::report:
      return s.report_at(r, per_check);
  }
  throw std::invalid_argument("sluice::store::run_at: not an operation");
}

}  // namespace sluice::detail
