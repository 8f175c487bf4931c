// `--store SPEC`: where a command's states live. "memory" (the default) is
// this process's memory; every other spec is a store URL, opened through the
// program's store registry (store_kinds.hpp), which has the Redis store's
// schemes when its target is built.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/keyed.hpp"
#include "sluice/result.hpp"
#include "sluice/store.hpp"
#include "sluice/store/memory.hpp"
#include "sluice/store_refund.hpp"

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

/// A store with one policy defined, deciding requests of one check each: the
/// replay's view of a store (`try_acquire_at` answers the check's own
/// decision, as the keyed store would).
class single_policy_store {
 public:
  /// Defines `p` in `made.s` under `name`; the error names "--store" when
  /// the store refuses the policy.
  static result<single_policy_store> make(made_store made, std::string_view name, const any_policy& p);

  /// The check's decision for `key` at `now` (a store failure or a bad
  /// request: the store's answer for the request, and `last_source()`
  /// says so).
  /// `id`, when not empty, is the request's id (semantics.md, "Request
  /// ids": a repeat answers the first decision, `source::replayed`).
  decision try_acquire_at(std::string_view key, tick now, std::int64_t cost, std::string_view id = {});

  /// Reports `cost` units spent by `key` at `now` (semantics.md,
  /// "Reports"): the check's figures after the charge; `last_source()`
  /// says where the answer came from.
  decision report_at(std::string_view key, tick now, std::int64_t cost);

  /// What a decision of `cost` for `key` at `now` would answer, taking
  /// nothing; `last_source()` says where the answer came from.
  decision peek_at(std::string_view key, tick now, std::int64_t cost);

  /// Releases the lease `nonce` that `key` holds (semantics.md, "Leases"):
  /// the units freed (0: not held); `last_source()` says where the answer
  /// came from.
  std::int64_t release_at(std::string_view key, std::uint64_t nonce, tick now);

  /// Refunds the decision with request id `id` (semantics.md, "Refunds"),
  /// wherever its check was; `last_source()` is `error` when the store
  /// failed.
  refund_status refund_at(std::string_view id, tick now);

  /// The lease nonce the latest decision took (0: none).
  [[nodiscard]] std::uint64_t last_lease() const noexcept { return lease_; }

  /// One request of a batch: its key (owned: a trace reader's key lives
  /// only until its next line), instant and cost.
  struct request {
    std::string key;
    tick now = 0;
    std::int64_t cost = 1;
    std::string id;  ///< empty: none
  };

  /// Decides `requests` in order, as that many `try_acquire_at` calls would
  /// (a key repeated in the batch sees its earlier admits), in one call of
  /// the store (a remote store sends them in one pipeline): `out[i]` is
  /// request i's decision and `from[i]` where it came from. Requires both
  /// to be as long as `requests`.
  /// `leases[i]`, when `leases` is not empty (then as long as `requests`),
  /// is the lease nonce request i took (0: none).
  void try_acquire_many_at(std::span<const request> requests, std::span<decision> out, std::span<source> from,
                           std::span<std::uint64_t> leases = {});

  /// Where the latest decision came from.
  [[nodiscard]] source last_source() const noexcept { return last_; }

  /// Replaces every state (memory store only; see keyed_limiter::restore).
  void restore(const std::vector<std::pair<std::string, any_state>>& entries);

  /// The memory store, if it is one.
  [[nodiscard]] memory_store* memory() const noexcept { return made_.memory; }
  /// The store's message about its latest failed call (store_figures::
  /// last_failure; never a password), or "" when it has none.
  [[nodiscard]] std::string last_failure() const;
  /// The policy's id in the store.
  [[nodiscard]] policy_id id() const noexcept { return id_; }

 private:
  single_policy_store(made_store made, policy_id id) : made_(std::move(made)), id_(id) {}
  made_store made_;
  policy_id id_ = 0;
  source last_ = source::store;
  std::uint64_t lease_ = 0;
};

}  // namespace sluice::cli
