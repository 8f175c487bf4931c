// What src/keyed/release.cpp needs of the memory store's internals
// (memory_store.cpp). Private to sluice::keyed.
#pragma once

#include <functional>
#include <string_view>

#include "sluice/core/store.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::keyed_detail {

/// Calls `fn` with the keyed store that holds `key`'s state under policy
/// `id` now (the key carried over from an earlier configuration first),
/// inside a store read section with the policy's gate open, so that a
/// redefinition waits for it. False for an unknown policy.
bool with_current(memory_store& m, policy_id id, std::string_view key, const std::function<void(keyed_limiter&)>& fn);

/// Whether policy `id` is defined in `m` (policies are never removed).
bool knows(memory_store& m, policy_id id) noexcept;

}  // namespace sluice::keyed_detail
