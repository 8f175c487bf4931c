// A receipt's fields, to save one and build it back: the memory store keeps
// its request ids' receipts in a snapshot (docs/snapshot-format.md, "The
// request ids file"). Internal to sluice (installed because two targets
// share it); not part of the API, may change between versions.
#pragma once

#include <cstdint>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/time.hpp"

namespace sluice::detail {

/// Every field of a receipt but its parts (refund.hpp keeps them private).
struct receipt_fields {
  algorithm algo = algorithm::always_deny;
  tick at = 0;
  std::int64_t cost = 0;
  std::int64_t key = 0;
  i128 before = 0;
  i128 after = 0;
  std::int64_t p1 = 0;
  std::int64_t p2 = 0;
  std::int64_t p3 = 0;
  std::int32_t part = -1;
};

/// The fields of `r`.
[[nodiscard]] receipt_fields fields_of(const receipt& r) noexcept;

/// The receipt of `f` and `parts` (moved in). A receipt whose fields no
/// admit made refunds nothing (refund checks them against the policy and
/// the state), so this cannot make a refund give more than an admit took.
[[nodiscard]] receipt receipt_of(const receipt_fields& f, std::vector<receipt> parts);

}  // namespace sluice::detail
