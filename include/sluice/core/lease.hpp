// Leases over any policy: whether a policy holds a concurrency part, and
// the release of a lease in every concurrency part of a state
// (semantics.md, "Leases"). What the stores build `release_at` on.
#pragma once

#include <cstdint>

#include "sluice/core/any.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// Whether `p` is, or holds at any depth, a concurrency part.
[[nodiscard]] bool holds_concurrency(const any_policy& p) noexcept;

/// Releases the lease with `nonce` in every concurrency part of `s` (a
/// state of `p`): the units freed, summed over the parts (0: none held).
/// Other parts are untouched; never moves a part's time.
std::int64_t release(const any_policy& p, any_state& s, tick now, std::uint64_t nonce) noexcept;

/// Whether `s` holds, in some concurrency part, a lease with `nonce` that
/// is held at `now` (expiry > max(now, the part's latest admit)).
[[nodiscard]] bool holds_lease(const any_policy& p, const any_state& s, tick now, std::uint64_t nonce) noexcept;

}  // namespace sluice
