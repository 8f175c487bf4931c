// The stores this program opens: one store_registry (sluice/store/registry.hpp)
// for every command, the memory store built in and the Redis store's schemes
// registered when its target is linked. `--store` and `sluice serve`'s
// `store.url` both open through it.
#pragma once

#include "sluice/keyed/registry.hpp"

namespace sluice::cli {

/// The program's registry: built at the first call (thread-safe), then
/// read-only.
const store_registry& program_stores();

}  // namespace sluice::cli
