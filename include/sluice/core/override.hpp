// What may stand as a key's override of a configured policy (semantics.md,
// "Overrides"): the one rule every store checks before it keeps one.
#pragma once

#include "sluice/core/any.hpp"
#include "sluice/core/result.hpp"

namespace sluice {

/// Whether `limit` may be a key's override of `configured`: their states
/// carry over both ways (the same algorithm, composites part by part). The
/// error names "policy".
[[nodiscard]] result<bool> check_override(const any_policy& configured, const any_policy& limit);

}  // namespace sluice
