// An exact client-side deny cache for any remote store (sluice::remote; the
// Redis store's `deny_cache` option) (semantics.md, "Keys" and "Remote
// stores"): once the store has said "denied, retry after r" to a request of
// cost c on a key at the caller's time t, every request on that key of cost
// ≥ c before t + r is denied too, whatever other clients do (every algorithm
// only gets more permissive with time and less with consumption). So such
// requests can be answered here, in tens of nanoseconds, without a round
// trip. A "never" denial (a cost no state could admit) holds for costs ≥ c
// until the policy's configuration changes.
//
// The time rule (semantics.md, "Time and arithmetic", "Keys") reads a
// request stamped before a key's latest admit at that admit's time. So an
// entry holds only while no request on its key stamped at or past its end
// has gone to the store since: the cache keeps, per bucket of keys, the
// latest `now` it was asked about (`lookup` records it; `note` for a request
// that bypasses the lookup), and an entry whose end that mark has reached
// never answers again, whatever the order of the stamps. A `never` entry (a
// cost no state admits, or an end past the last tick, which an earlier
// stamp may bring back within it) answers only requests stamped at or after
// its denial, and is kept only for a denial stamped at tick 0 or later
// (before it, a `never` may be a wait too long for a tick count, which a
// later stamp brings within one).
//
// The answer is exact in `allowed` for the requests of the process that
// holds the cache (between processes whose clocks disagree it may over-deny,
// never over-admit). Its `retry_after` (until - now) is a lower bound: exact
// unless someone else consumed meanwhile, never longer than the store would
// say. Keys: (policy id, policy version, key bytes),
// compared in full (no hash-only matches, so no collision can deny a key
// that was not denied).
//
// What must clear it, because it makes a state *more* permissive: a refund
// or reset of a key (`forget(policy, key)`, `forget_key`), a reconfiguration
// (a new version: old entries stop matching; `forget(policy)` frees them).
// A forget that races with the store call whose denial is then inserted
// would leave a stale entry; `generation()` read before the call and
// passed to `insert` makes such an insert a no-op (a forget or clear of
// any key since moves it: coarse, never stale).
//
// Bounded: a fixed number of slots (sharded by key hash, 4-way buckets),
// overwriting the entry that expires first. Thread safety: every member may
// be called from any thread; a shard is guarded by its own mutex.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/store.hpp"
#include "sluice/core/time.hpp"

namespace sluice::remote {

/// The exact deny cache; see the file comment.
class deny_cache {
 public:
  /// A generation that matches any (insert without the race check).
  static constexpr std::uint64_t any_generation = ~0ULL;

  /// About `capacity` entries (rounded up to a power of two, at least 4 per
  /// shard) over `shards` shards (a power of two, rounded up).
  explicit deny_cache(std::size_t capacity = 1 << 16, std::size_t shards = 64);
  /// Requires that no other thread still uses the cache.
  ~deny_cache();
  deny_cache(const deny_cache&) = delete;
  deny_cache& operator=(const deny_cache&) = delete;

  /// The cached answer for a request of `cost` on `key` under (`policy`,
  /// `version`) at the caller's `now`: `retry_after` of a denial (`never`
  /// for a never-denial, or a wait past the largest tick), or nullopt when
  /// the cache cannot answer (ask the store). Records `now` as sent to the
  /// store for the key (see the file comment). Requires cost ≥ 1.
  [[nodiscard]] std::optional<tick> lookup(policy_id policy, std::uint64_t version, std::string_view key,
                                           std::int64_t cost, tick now);

  /// Records that a request on (`policy`, `key`) at `now` goes to the store
  /// without a lookup (one with a request id): an entry of that key whose
  /// end `now` reaches no longer answers.
  void note(policy_id policy, std::string_view key, tick now);

  /// Records a store denial: a request of `cost` on `key` at the caller's
  /// `now` was denied with `retry_after` (> 0, or `never`). An entry for the
  /// same (policy, key) is replaced. Ignored when `retry_after` ≤ 0, for a
  /// `never` at a `now` below 0 (see the file comment), or when
  /// `seen_generation` (from `generation()` before the store call) is no
  /// longer the cache's generation.
  void insert(policy_id policy, std::uint64_t version, std::string_view key, std::int64_t cost, tick now,
              tick retry_after, std::uint64_t seen_generation = any_generation);

  /// Drops the entry of (`policy`, `key`), any version (refund, reset).
  void forget(policy_id policy, std::string_view key);
  /// Drops every entry of `key`, under every policy.
  void forget_key(std::string_view key);
  /// Drops every entry of `policy` (reconfiguration); sweeps the whole table.
  void forget(policy_id policy);
  /// Drops everything.
  void clear();

  /// The cache's generation: it moves on every forget and clear (of any
  /// key). Read it before a store call, pass it to insert.
  [[nodiscard]] std::uint64_t generation() const noexcept;

  /// Entries held now (a sweep; for tests and stats).
  [[nodiscard]] std::size_t size() const;
  /// Slots in all (the bound on size()).
  [[nodiscard]] std::size_t capacity() const noexcept { return shard_count_ * slots_per_shard_; }

 private:
  struct slot;
  struct shard;
  shard& shard_of(std::uint64_t h) const;
  std::size_t bucket_of(std::uint64_t h, policy_id policy) const;

  std::size_t shard_count_;
  std::size_t slots_per_shard_;
  unsigned shard_shift_;
  std::unique_ptr<shard[]> shards_;
  std::atomic<std::uint64_t> generation_{0};  // moved under the lock of the shard a forget concerns
};

}  // namespace sluice::remote
