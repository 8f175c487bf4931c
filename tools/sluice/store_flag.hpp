// `--store SPEC`: where a command's states live. "memory" (the default) is
// this process's memory; every other spec is a store URL, opened through the
// program's store registry (store_kinds.hpp), which has the Redis store's
// schemes when its target is built.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/core/result.hpp"
#include "sluice/core/store.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::cli {

/// Adds --store SPEC to `cmd`, filling `spec`, and --store-prefix P
/// (the remote store's key prefix), filling `prefix`.
void add_store_flag(CLI::App& cmd, std::string& spec, std::string* prefix = nullptr);

/// What a store is built with, whichever its kind.
struct store_setup {
  /// The memory store's keyed stores.
  keyed_options keyed{};
  /// A remote store's keys begin with this (one run's keys apart from
  /// another's); empty: a fresh random prefix per run.
  std::string key_prefix;
  /// A remote store's ticks are a trace's, not real time: its keys expire
  /// this long after they are written (docs/redis.md, "TTL").
  std::chrono::milliseconds remote_ttl{std::chrono::hours(1)};
};

/// A store built from a spec; `memory` is set when it is the memory store
/// (snapshots need it).
struct made_store {
  std::unique_ptr<store> s;
  memory_store* memory = nullptr;
};

/// The store `spec` names: "memory", or a URL of a scheme the program's
/// registry opens (program_stores(): redis://, rediss://, unix://,
/// redis+cluster://, redis+sentinel://, ... when built with sluice::redis).
/// The error names "--store" and lists the kinds this build opens.
result<made_store> make_store(std::string_view spec, const store_setup& setup);

}  // namespace sluice::cli
