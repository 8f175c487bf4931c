// The stores `sluice serve` builds from its configuration, and the memory
// store's snapshots: one file per policy, `<snapshot>/<policy>.snap`
// (docs/snapshot-format.md), saved at shutdown and loaded at start.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "config.hpp"
#include "sluice/result.hpp"
#include "sluice/store.hpp"

namespace sluice::serve {

/// The in-process store for `c` (c.is_memory()).
result<std::unique_ptr<store>> make_memory_store(const store_config& c);

/// What a snapshot save or load did.
struct snapshot_report {
  std::uint64_t policies = 0;        ///< files written or read
  std::uint64_t keys = 0;            ///< states written or restored
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
