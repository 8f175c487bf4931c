// The stores `sluice serve` builds from its configuration (through a
// store_registry: sluice/store/registry.hpp), and the memory store's
// snapshots: one file per policy, `<snapshot>/<policy>.snap`
// (docs/snapshot-format.md), saved at shutdown and loaded at start.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "config.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/store.hpp"
#include "sluice/keyed/registry.hpp"

namespace sluice::serve {

/// What `c` opens a store with (its URL, the memory store's bound and
/// time order, a remote store's timeouts, pool, failure mode, deny cache;
/// ticks of the realtime clock in ns, which the machines of a fleet share).
store_options store_options_of(const store_config& c);

/// Opens the store `c` names through `stores`: the memory store (built into
/// every registry), or a remote one when `stores` has its scheme (the
/// command registers the Redis store's). `on_health_change` gets a remote
/// store's health lines (store_options). The error is placed at the URL in
/// the file ("FILE:LINE:COLUMN: store.url: ..."), or names "store.url".
result<std::unique_ptr<store>> make_store(const store_config& c, const store_registry& stores = store_registry{},
                                          std::function<void(std::string_view)> on_health_change = {});

/// The in-process store for `c` (c.is_memory()).
result<std::unique_ptr<store>> make_memory_store(const store_config& c);

/// What a snapshot save or load did.
struct snapshot_report {
  std::uint64_t policies = 0;        ///< files written or read
  std::uint64_t keys = 0;            ///< states written or restored
  std::uint64_t overrides = 0;       ///< load: overrides restored
  std::uint64_t ids = 0;             ///< request ids saved or restored
  std::vector<std::string> skipped;  ///< load: policies started fresh, and why
};

/// Saves every policy's states of a memory store under the folder `dir`
/// (created if missing), each file atomically. The error names the file.
result<snapshot_report> save_snapshots(store& st, const config& c, const std::string& dir);

/// Loads `dir`'s files into a memory store whose policies are defined: a
/// policy without a file, or whose file was saved for another policy, starts
/// fresh (said in `skipped`); a corrupt file is an error and nothing of it
/// is loaded.
result<snapshot_report> load_snapshots(store& st, const config& c, const std::string& dir);

}  // namespace sluice::serve
