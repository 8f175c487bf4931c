// The in-process store: the `store` interface (store.hpp) over the keyed
// store, one `keyed_limiter` per defined policy, in this process's memory.
//
// A request of one check goes straight to its policy's keyed store (for
// GCRA and the token bucket, one lock-free compare-and-swap); a request of
// several checks is decided atomically as all_of by the keyed store's
// multi-key form (`keyed_limiter::try_acquire_all_at`), whatever other
// threads decide meanwhile on the same keys.
//
// `define` of a name already defined reconfigures, live, every state that
// policy holds (reconfigure.hpp): the policy's gate closes, decisions in
// flight on it finish (a grace period, as the keyed store's reclaim waits
// for its readers; the deciding threads pay two plain stores for it), an
// empty keyed store under the new policy takes over, and the gate opens.
// The states follow lazily — each on its key's next decision, the rest by
// a carrier thread a slice at a time — exactly as an eager carry-over at
// the redefinition's instant (semantics.md, "Reconfiguration"). A decision
// that meets the closed gate waits for it (one grace period, never the
// carry-over), so each is wholly old or wholly new, and none is lost.
//
// With `max_keys`, the store never holds more states than that over all its
// policies (one keyed_budget shared by their keyed stores): a new key whose
// request would be admitted at the bound is answered by `on_full`, after
// the fresh states a sweep of its shard finds are dropped; held keys always
// decide on their state (semantics.md, "Keys": Bounded memory).
//
// Request ids (idempotent charging) are remembered for a window of the
// store's ticks (default 60 s of nanoseconds), each with its request's
// identity (store.hpp); a repeat within it gets the first decision again,
// `source::replayed`, and a repeat with other checks is refused,
// `source::id_conflict`.
//
// Thread safety: every member function may be called from any number of
// threads at once (store.hpp).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/store.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice {

/// How a memory_store is sized.
struct memory_store_options {
  /// The options of every policy's keyed store (max_keys, shards,
  /// auto_purge, in_time_order, hash seed) — each policy has its own, so
  /// keyed.max_keys (eviction) bounds the keys of each policy.
  keyed_options keyed{};
  /// The most states the store holds over all its policies (0: no bound);
  /// past it new keys are refused, never evicted for (see the overview).
  std::size_t max_keys = 0;
  /// How a refused new key is answered: fail-open (admitted, nothing
  /// stored, `source::fail_open`), fail-closed (denied, `retry_after =
  /// full_retry_after`, `source::fail_closed`) or local (decided on a fresh
  /// state that is not kept, `source::fallback`). Each is counted in
  /// `store_stats::fallbacks`.
  failure_mode on_full = failure_mode::fail_closed;
  /// The `retry_after` of a fail-closed answer at the bound, in ticks.
  tick full_retry_after = 1'000'000'000;
  /// How long a request id is remembered, in the store's ticks (ns for the
  /// Unix clock): a repeat of an id remembered at `t` is replayed while its
  /// instant (see `ids_on_clock`) is before `t + idempotency_window`. 0
  /// turns ids off (every request is decided).
  tick idempotency_window = 60'000'000'000;
  /// Which instant an id's life is read at. False: the requests' own `now`
  /// (a replayed trace's time; a request far ahead ends every older id's
  /// window, so the caller must trust its times). True: the store's clock
  /// (`now()`) alone, as the Redis store's records expire by Redis's clock
  /// — no request's `now` can shorten an id's life (`sluice serve`, whose
  /// clients may give their own `now`).
  bool ids_on_clock = false;
  /// The most bytes the remembered ids may hold at once (an estimate of
  /// each id's heap: its identity, keys, figures and receipts; about 600
  /// bytes for one check of a short key). Ids whose window has ended are
  /// forgotten first; past it a new id is answered by `on_full` — nothing
  /// charged, the id not remembered, counted in `store_stats::fallbacks` —
  /// so a retry is never charged twice; no id is forgotten within its window.
  std::size_t max_id_bytes = std::size_t{256} << 20;
  /// The most policies the store can define (names; a redefinition keeps
  /// its id).
  std::size_t max_policies = 1024;
  /// The most overrides (semantics.md, "Overrides") the store holds over
  /// all its policies; a new one past it is refused naming "overrides".
  std::size_t max_overrides = 10'000;
  /// The clock `now()` reads: null for the Unix clock (`unix_clock`, ns
  /// since the epoch: windows aligned to it stay so across restarts, as in
  /// the Redis store); otherwise a manual clock that must outlive the store
  /// (tests, simulations).
  const manual_clock* clock = nullptr;
};

/// The in-process store; see the overview.
class memory_store final : public store, public store_refunds, public store_leases, public store_overrides {
 public:
  /// An empty store (no policy defined). Throws std::bad_alloc only.
  explicit memory_store(memory_store_options options = {});
  /// Requires that no other thread still uses the store.
  ~memory_store() override;
  memory_store(const memory_store&) = delete;
  memory_store& operator=(const memory_store&) = delete;

  /// Defines `name` (new: a new id) or redefines it (the same id; its
  /// states are reconfigured at `now()`, see the overview; the same policy
  /// again changes nothing). The error names
  /// "name" for an empty name, "policies" past `max_policies`, "algorithm"
  /// when the new policy is another algorithm than the old (a throttled
  /// client must not get a fresh limit), "parts" for composites whose parts
  /// differ in number or kind.
  result<policy_id> define(std::string_view name, const any_policy& policy) override;

  /// `define` with an explicit instant for the reconfiguration.
  result<policy_id> define_at(std::string_view name, const any_policy& policy, tick now);

  /// Decides `r` (store.hpp). A request with no check or more than
  /// `max_checks`, an unknown policy id, a check whose cost is below 1, a (policy, key)
  /// named twice, or a `per_check` shorter than its checks is answered as
  /// `source::error` (denied, `retry_after = never`), counted, and changes
  /// nothing. `grows_after` (store.hpp) is read on each check's state right
  /// after the decision, in process (a decision another thread makes on
  /// that key in between is seen).
  store_decision decide_at(const store_request& r, std::span<decision> per_check = {},
                           std::span<std::optional<tick>> grows_after = {});

  /// Decides `requests` in order (store.hpp).
  void decide_many_at(std::span<const store_request> requests, std::span<store_decision> out) override;

  /// What `decide_at` would answer, changing nothing (a remembered id's
  /// first decision, as `source::replayed`; an id is never remembered by a
  /// peek).
  store_decision peek_at(const store_request& r, std::span<decision> per_check = {});

  /// Reports `r` (store.hpp): every check charged its cost atomically, on
  /// the keyed store's multi-key form. A request with an id, or one
  /// `decide_at` would answer as an error, is `source::error`, nothing
  /// charged; a new key refused at `max_keys` is answered by `on_full`,
  /// nothing charged.
  /// Releases `nonce` on each check (store.hpp), each under its key's
  /// shard lock (a release only frees, so no decision can see a state that
  /// admits more than one of these steps made). Defined in
  /// src/keyed/release.cpp.
  release_result release_at(std::span<const check> checks, std::uint64_t nonce, tick now) override;
  store_decision report_at(const store_request& r, std::span<decision> per_check = {});

  /// decide_at, peek_at or report_at (store.hpp, the store's one entry for
  /// the three).
  store_decision run_at(store_op op, const store_request& r, std::span<decision> per_check,
                        std::span<std::optional<tick>> grows_after) override;

  /// Refunds, leases and overrides: every capability but introspection
  /// (its key count is `stats().keys`, and it keeps no figures of its own).
  [[nodiscard]] store_capabilities capabilities() const noexcept override;

  /// Refunds request id `id` (store.hpp; semantics.md, "Refunds"): the
  /// receipts its first decision took, kept beside it for the idempotency
  /// window.
  refund_answer refund_at(std::string_view id, tick now, std::span<decision> per_check = {},
                          std::span<std::int64_t> given = {}) override;
  using store::refund_id;

  /// The store's clock (Unix ns, or the manual clock of the options).
  [[nodiscard]] tick now() const noexcept override;

  /// Decisions by source (peeks are not counted), and the keys held over
  /// every policy.
  [[nodiscard]] store_stats stats() const override;

  /// The keyed stores' counts summed over every policy (keys, purged,
  /// evicted, refused, bytes).
  [[nodiscard]] keyed_stats keyed_totals() const;

  /// The id of a defined name, if any.
  [[nodiscard]] std::optional<policy_id> find(std::string_view name) const;

  /// Calls `fn` with the keyed store that holds `id`'s states (to save or
  /// restore a snapshot, purge, inspect), while no redefinition of that
  /// policy can run; decisions go on meanwhile. Returns false (without
  /// calling it) for an unknown id. `fn` must not call `define`.
  bool with_keyed(policy_id id, const std::function<void(keyed_limiter&)>& fn);

  /// Drops every fresh state of every policy at `now` (keyed_limiter::purge,
  /// in slices of 1024 slots: lock-free decisions never wait, a new key at
  /// most one slice) and forgets request ids older than the window. `now`
  /// is the purge promise: no request will be stamped before it. Returns
  /// the states dropped.
  std::size_t purge(tick now);

  /// Calls `fn` with each defined policy's name and keyed store, in the
  /// order they were defined, each under its policy's redefinition lock (no
  /// `define` of that name meanwhile; decisions go on). For snapshots: `fn`
  /// may read the states (save_snapshot) or, before the store serves,
  /// replace them (load_snapshot).
  void for_each_policy(const std::function<void(std::string_view name, keyed_limiter& states)>& fn);

  /// Overrides (semantics.md, "Overrides"). An overridden key's state
  /// lives in a keyed store of its own, under the override; setting or
  /// deleting one closes its policy's gate for one grace period (as a
  /// redefinition does), moves the key's state across with `reconfigure`
  /// at `now`, and opens it. Decisions on other keys pay one load of the
  /// policy's override count. Defined in src/keyed/overrides.cpp.
  result<override_change> set_override_at(policy_id policy, std::string_view key, const any_policy& limit,
                                          tick now) override;
  /// See set_override_at.
  result<bool> delete_override_at(policy_id policy, std::string_view key, tick now) override;
  /// See set_override_at.
  result<std::optional<any_policy>> override_of(policy_id policy, std::string_view key) override;
  /// See set_override_at.
  result<override_page> list_overrides(policy_id policy, std::string_view after, std::size_t limit) override;
  /// The overrides held over every policy.
  [[nodiscard]] std::optional<std::uint64_t> override_count() const override;
  using store::override_seen;

  /// Every override of `id` with its key's state (for a snapshot), in byte
  /// order of the keys; empty for an unknown id.
  [[nodiscard]] std::vector<override_state> override_states(policy_id id);

  /// Replaces every override of `id` with `overrides` (a snapshot's), each
  /// key's state as given — for a store that does not serve yet. Errors
  /// (nothing changed): "policy" for an unknown id or an override that
  /// cannot continue the policy's states (or a state not of its type),
  /// "overrides" past the bound.
  result<std::size_t> restore_overrides(policy_id id, const std::vector<override_state>& overrides);

  /// As for_each_policy, with each policy's overrides and their keys'
  /// states read under the same lock (a snapshot saves both at once).
  void for_each_policy_with_overrides(const std::function<void(std::string_view name, keyed_limiter& states,
                                                               std::span<const override_state> overrides)>& fn);

  /// Saves every remembered request id — its identity, first decision and
  /// receipts — to `path`, atomically (docs/snapshot-format.md, "The request
  /// ids file"). Decisions go on meanwhile (each id stripe is read under its
  /// lock). Returns the ids saved; the error ("snapshot") names the file.
  /// Defined in src/keyed/id_snapshot.cpp.
  result<std::size_t> save_ids(const std::string& path);

  /// Loads the ids `save_ids` wrote, for a store that does not serve yet
  /// and whose policies are defined: every instant comes back as it was (the
  /// store's clock), so an id keeps the rest of its window. Left out: an id
  /// whose window has ended (with `ids_on_clock`), one with a check of a
  /// policy not defined here, one already held, and any past
  /// `max_id_bytes`. Returns the ids loaded; a file that fails any check is
  /// an error ("snapshot", naming the file and the fault) and loads nothing.
  result<std::size_t> load_ids(const std::string& path);

  /// The implementation (src/keyed/memory_store.cpp); not part of the API.
  struct impl;

 private:
  // keyed's own files' way into the implementation (src/keyed/internals.hpp).
  friend struct detail::keyed_internals;
  std::unique_ptr<impl> impl_;
};

}  // namespace sluice
