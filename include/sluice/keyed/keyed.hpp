// A keyed limiter: one state per key (an IP, a user, an API key) under one
// policy, for millions of keys and any number of threads.
//
// Every key decides exactly as its own `limiter` would (the core `decide`,
// bit for bit), and no key's traffic changes another key's decisions
// (semantics.md, "Keys"). A key the store holds a state for decides on it at
// the request's own `now`. Dropping a fresh state is lossless when no later
// request on its key is stamped before the instant it was judged fresh at:
// that instant is the owner's promise (`purge(P)`: the store's horizon), or,
// for a store told its requests come in time order, the `now` of the request
// that triggers a sweep — never a time another key's client chose. A request
// on a key without a state, stamped before the latest drop in its shard (in
// flight across a purge, or breaking the promise), is read as at that drop.
//
// Design, in short (docs/keyed.md has the details):
//   * Keys are spread over shards by hash. Each shard is an open-addressing
//     table of 8-byte slots (21 bits of hash, a 43-bit record address); a
//     record holds the state and the key's bytes, and never moves.
//   * GCRA and token bucket with S·W < 2^63 keep a 16-byte state
//     {debt, last} in the record and decide with ONE 16-byte compare-and-swap,
//     lock-free; the key lookup takes no lock and writes nothing shared.
//     Every other policy (and a wider GCRA) keeps an `any_state` per key and
//     decides under the shard's lock.
//   * A new key, a purge and an eviction take the shard's lock; records and
//     tables that lock-free readers may still see are freed after a grace
//     period (a per-thread read counter; writers wait, readers never do).
//   * Purging is incremental: `purge` sweeps in slices of bounded length. A
//     shard grows at 85 % load whatever its sweeps drop, so its load stays
//     even (a sweep never packs the rest of the table).
//   * Two bounds: `max_keys` evicts the state nearest to fresh among the
//     slots it sweeps (counted, with the units it still held); a shared
//     `keyed_budget` refuses new keys instead (`keyed_refused`), so no held
//     state is ever given a fresh limit.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// The `part` of a decision a keyed store refused for want of room (its
/// `keyed_budget` is spent and nothing fresh was found): denied, `remaining`
/// 0, `retry_after = never` (the store cannot tell when room frees). Stores
/// over the keyed store answer it by their failure mode (memory.hpp).
inline constexpr std::int32_t keyed_refused = -2;

namespace detail {
struct keyed_internals;  // src/keyed/internals.hpp: what keyed's own files reach, not API
}  // namespace detail

/// A bound on the states one or more keyed stores hold together (the memory
/// store shares one over all its policies). A store with a budget never
/// holds a state past it: a new key that would be admitted while the budget
/// is spent first drops the fresh states among a few slots of its shard
/// (judged as every sweep is: keyed_options::in_time_order), and is refused
/// (`keyed_refused`, counted) when that frees none. Held keys are never
/// dropped for room. `restore` is never refused (it may pass the budget; new
/// keys are then refused until states are dropped). Thread-safe.
class keyed_budget {
 public:
  /// A budget of `max_states` states (0: every new key is refused).
  explicit keyed_budget(std::size_t max_states) noexcept : max_(max_states) {}
  keyed_budget(const keyed_budget&) = delete;
  keyed_budget& operator=(const keyed_budget&) = delete;

  /// The bound.
  [[nodiscard]] std::size_t max_states() const noexcept { return max_; }
  /// States held now by every store on this budget.
  [[nodiscard]] std::size_t held() const noexcept { return held_.load(std::memory_order_relaxed); }
  /// New keys refused so far by every store on this budget.
  [[nodiscard]] std::uint64_t refused() const noexcept { return refused_.load(std::memory_order_relaxed); }

 private:
  // The stores' own calls (src/keyed/internals.hpp), not the API.
  friend struct detail::keyed_internals;
  bool take() noexcept {
    if (held_.fetch_add(1, std::memory_order_relaxed) < max_) return true;
    held_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  void give(std::size_t n) noexcept { held_.fetch_sub(n, std::memory_order_relaxed); }
  void add(std::size_t n) noexcept { held_.fetch_add(n, std::memory_order_relaxed); }
  void count_refused() noexcept { refused_.fetch_add(1, std::memory_order_relaxed); }

  std::size_t max_;
  std::atomic<std::size_t> held_{0};
  std::atomic<std::uint64_t> refused_{0};
};

/// How a keyed_limiter is sized and how it makes room.
struct keyed_options {
  /// The most keys the store holds at once; 0 for no bound. The bound is
  /// split evenly over the shards (each holds at most its share, so
  /// eviction can begin a little before the whole store holds max_keys when
  /// keys hash unevenly); the shard count is lowered so every shard's share
  /// is at least 1. When a full shard meets a new key whose request is
  /// admitted, it first drops any fresh state it finds among a few slots
  /// (lossless) and otherwise evicts the state nearest to fresh among them
  /// (that key's next request starts from a fresh state: counted in
  /// `keyed_stats::evicted` and `units_forgiven`). For a bound that never
  /// evicts, see `budget`.
  std::size_t max_keys = 0;
  /// Number of shards, rounded up to a power of two (1 to 65536); 0 picks
  /// 64. More shards mean less contention on new keys and shorter resizes.
  std::size_t shards = 0;
  /// Whether a shard about to grow first sweeps a few slots and drops the
  /// states fresh among them (their memory is reused). It never delays the
  /// growth: the store is kept near the keys in use by `purge` and
  /// `purge_step` (the memory store's owner runs them on a schedule).
  bool auto_purge = true;
  /// Whether requests come in time order: one clock stamps them all, and
  /// each `now` is at least that of every request decided before it (up to
  /// requests in flight at once) — the steady clock of `try_acquire`, a
  /// service deciding by its own clock, a replay in order. Then a sweep a
  /// request triggers (before a shard grows, at a bound) judges freshness
  /// at that request's `now` as well as at the horizon. Off (the default:
  /// clients may choose their times, ahead of or behind one another), sweeps
  /// judge at the horizon only, which only `purge` and `purge_step` move, so
  /// no request's time ever makes another key's state look fresh.
  bool in_time_order = false;
  /// Seed of the key hash; 0 draws one at random per store (resists
  /// flooding with colliding keys). Decisions never depend on it.
  std::uint64_t hash_seed = 0;
  /// Whether GCRA and the token bucket (with S·W < 2^63) keep the 16-byte
  /// cell that decides lock-free. Off, they decide under the shard lock as
  /// every other policy does, and hold any state of their type — also one
  /// out of the cell's range, such as the debt a reconfiguration to a
  /// smaller burst leaves (the memory store's live `define` needs that).
  bool compact = true;
  /// A bound shared with other stores (see keyed_budget): new keys are
  /// refused, never evicted for, when it is spent. Null: none.
  std::shared_ptr<keyed_budget> budget{};
};

/// Counts a keyed_limiter keeps. Each is exact when the store is quiet, and
/// a recent value while other threads use it.
struct keyed_stats {
  std::uint64_t keys = 0;            ///< states held now
  std::uint64_t purged = 0;          ///< fresh states dropped (lossless)
  std::uint64_t evicted = 0;         ///< states dropped at max_keys while not fresh
  std::uint64_t units_forgiven = 0;  ///< units of cost the evicted states still counted
  std::uint64_t refused = 0;         ///< new keys refused: the budget was spent (keyed_refused)
  /// Bytes the store holds for its states: slot tables, record arenas (keys
  /// included, the free lists' and the last chunks' slack too) and, in the
  /// general mode, each state's `any_state` (not what a state allocates
  /// itself, nor the allocator's overhead).
  std::uint64_t bytes = 0;
};

/// One request for `keyed_limiter::try_acquire_many_at`.
struct keyed_request {
  std::string_view key;
  tick now = 0;
  std::int64_t cost = 1;
};

class keyed_limiter;

/// One check of a multi-key decision (`keyed_limiter::try_acquire_all_at`):
/// a store, a key in it, and its own cost. The key's bytes must stay valid
/// for the call.
struct keyed_check {
  keyed_limiter* limiter = nullptr;
  std::string_view key;
  /// Units this check is decided at and consumes (≥ 1); 0: the call's `cost`.
  std::int64_t cost = 0;
};

/// One state per key under one policy; safe for any number of threads.
///
/// Keys are byte strings of any length (up to 4 GiB), looked up without
/// allocating. A key the store holds a state for decides as the core
/// `decide` on that state at `now`. A key without one decides on a fresh
/// state at `max(now, drop_bound(key))`, durations still counted from the
/// caller's `now` (a duration that is neither 0 nor `never` grows by the
/// difference): the bound is behind every request that keeps the purge
/// promise, so it only shows for requests stamped before a drop. A denied
/// request changes nothing and stores nothing (a key that was never
/// admitted holds no memory).
///
/// Thread safety: every member function may be called concurrently with any
/// other, except construction, destruction and `restore`, which must not
/// overlap a call of the lock-free kind on the same store from another
/// thread if the caller needs the restore to be atomic as a whole (each
/// shard switches atomically).
class keyed_limiter {
 public:
  /// A store that reads the Unix clock (`unix_clock`: nanoseconds since
  /// the epoch, so windows stay aligned across restarts) in `try_acquire`.
  /// Throws std::bad_alloc only.
  explicit keyed_limiter(any_policy policy, keyed_options options = {});
  /// A store that reads `clock`, which must outlive it (tests, simulations).
  keyed_limiter(any_policy policy, keyed_options options, const manual_clock& clock);
  /// Frees every state. Requires that no other thread still uses the store.
  ~keyed_limiter();
  keyed_limiter(const keyed_limiter&) = delete;
  keyed_limiter& operator=(const keyed_limiter&) = delete;

  /// The store's clock now (the Unix clock's ns, or the manual clock's).
  [[nodiscard]] tick now() const noexcept;

  /// Decides a request of `cost` units for `key` at the explicit instant
  /// `now` (ticks). Lock-free for an existing key of a compact policy; a new
  /// key that is admitted takes its shard's lock and may allocate (throws
  /// std::bad_alloc when memory runs out, std::length_error for a key over
  /// 4 GiB). With a spent `budget`, such a key may be refused instead:
  /// denied, `retry_after = never`, `part = keyed_refused`, nothing stored.
  decision try_acquire_at(std::string_view key, tick now, std::int64_t cost = 1);

  /// Decides a request of `cost` units for `key` now. The clock is read
  /// once, as the call begins; when the key's state holds a later admit
  /// (another thread's, made meanwhile), `now` is read as that admit's time
  /// (the core's max(now, last)), so a timestamp taken before it never
  /// earns an admit the newer state refuses (golang/go#71360).
  decision try_acquire(std::string_view key, std::int64_t cost = 1);

  /// Decides `requests` in order, exactly as that many `try_acquire_at`
  /// calls one after another would (a key repeated in the batch sees its
  /// earlier admits), writing `out[i]` for `requests[i]`. Faster per
  /// decision on a store larger than the CPU's cache: the memory accesses
  /// of up to 16 lookups at a time are overlapped (hashed and prefetched
  /// together) instead of waiting for each in turn. Throws
  /// std::invalid_argument when `out` is shorter than `requests` (before
  /// deciding any), and as `try_acquire_at`; on a throw, the requests
  /// before the one that threw are decided and their `out` written.
  void try_acquire_many_at(std::span<const keyed_request> requests, std::span<decision> out);

  /// `try_acquire_many_at` of `keys`, each with `cost`, at one reading of
  /// the clock taken when the call begins (a batch is one instant).
  void try_acquire_many(std::span<const std::string_view> keys, std::span<decision> out, std::int64_t cost = 1);

  /// Decides one request over several checks (each a store and a key; the
  /// stores may differ, and so may their policies) atomically, as `all_of`:
  /// it is admitted iff every check admits at `now` (a check on a key
  /// without a state at its shard's drop bound, as try_acquire_at) at its cost (`keyed_check::cost`, or `cost` when
  /// that is 0), and only then does every check consume its cost; a denied
  /// request changes no state. No other decision on any of these
  /// keys, single- or multi-key, from any thread, interleaves with it.
  ///
  /// Writes each check's own decision to `per_check[i]` when it is not
  /// empty: on an admit, what the check's store answered; on a denial, a
  /// check that denies gives its own (pure) answer, and a check that would
  /// have admitted reports `allowed = false`, `retry_after = 0`, no
  /// `release_after`, and the `remaining` and `reset_after` of its
  /// untouched state. Returns the request's decision: on an admit the
  /// smallest `remaining` (its check in `part`), the largest `reset_after`
  /// and `release_after`; on a denial the largest `retry_after` of the
  /// checks that deny (its check in `part`), the smallest `remaining`, the
  /// largest `reset_after`, each read after the decision.
  ///
  /// How: the shard locks of every check are taken in address order, and
  /// each lock-free cell is held for the decision (a single-key decision
  /// that meets it takes the shard lock, so waits); then every check is
  /// decided on a copy, and all or none are written.
  ///
  /// Throws std::invalid_argument (before deciding) when `checks` is
  /// empty, names a null store or one (store, key) twice, gives a check a
  /// negative cost, or `per_check` is
  /// not empty and shorter than `checks`; and as `try_acquire_at`. A request
  /// that would be admitted but needs room for a new key that a spent budget
  /// refuses is refused whole (`part = keyed_refused`, no check charged; its
  /// checks' own decisions as on a denial). Under
  /// std::bad_alloc a request may be left charged on some checks only.
  static decision try_acquire_all_at(std::span<const keyed_check> checks, tick now, std::int64_t cost = 1,
                                     std::span<decision> per_check = {});

  /// Reports `cost` units spent on `key` at `now` (semantics.md,
  /// "Reports"; report.hpp): charged whatever the limit says, never
  /// denied. Returns the figures after the charge (`allowed = true`). A new
  /// key that a spent budget refuses is not charged: `allowed = false`,
  /// `part = keyed_refused`. Takes the key's shard lock. A cost < 1 charges
  /// nothing and answers as `try_acquire_at` does for it.
  decision report_at(std::string_view key, tick now, std::int64_t cost);

  /// Reports one request over several checks atomically: every check is
  /// charged its cost (its own, or `cost` when 0), whatever the limits say,
  /// with no other decision on these keys interleaving. `per_check[i]` (when
  /// not empty) gets check i's report figures; the request's combine them
  /// as `combine_reports` (report.hpp). Refused whole, nothing charged, when
  /// a spent budget refuses a new key (`part = keyed_refused`). Throws as
  /// `try_acquire_all_at`, and std::invalid_argument for a check's cost
  /// below 1.
  static decision report_all_at(std::span<const keyed_check> checks, tick now, std::int64_t cost = 1,
                                std::span<decision> per_check = {});

  /// `try_acquire_all_at` that also takes a receipt (refund.hpp) per check
  /// of an admit: `receipts[i]` (it must hold at least `checks.size()`)
  /// gets what check i took, empty on a denial or a refusal. The same
  /// decision and state change; for the refund by request id
  /// (semantics.md, "Refunds"). Computes each receipt with the core `admit`
  /// on the check's state as found (a compact cell read as its core state).
  static decision admit_all_at(std::span<const keyed_check> checks, tick now, std::int64_t cost,
                               std::span<decision> per_check, std::span<receipt> receipts);

  /// Gives back, atomically over all `checks`, what `receipts[i]` took on
  /// check i (each by its policy's rule, refund.hpp; an empty receipt, a key
  /// without a state, or a receipt of another policy gives nothing), and
  /// uses the receipts up. Writes check i's figures after the refund to
  /// `per_check[i]` (a report's figures: as a decision of cost 1 at `now`
  /// reads them, `allowed = true`) and the whole units given back to
  /// `given[i]`, when those are not empty. Returns the checks' figures
  /// combined as `combine_reports`. Throws std::invalid_argument as
  /// `try_acquire_all_at` does.
  static decision refund_all_at(std::span<const keyed_check> checks, tick now, std::span<receipt> receipts,
                                std::span<decision> per_check = {}, std::span<std::int64_t> given = {});

  /// What `try_acquire_all_at` would answer, changing nothing (read as one
  /// atomic instant over all the checks' keys).
  static decision peek_all_at(std::span<const keyed_check> checks, tick now, std::int64_t cost = 1,
                              std::span<decision> per_check = {});

  /// What `try_acquire_at` would answer, changing nothing. Never allocates.
  [[nodiscard]] decision peek_at(std::string_view key, tick now, std::int64_t cost = 1) const;

  /// Drops every state that is fresh at `now` (is_fresh), shard by shard in
  /// slices of at most `slice` slots each (each slice holds one shard's
  /// lock; lock-free decisions on existing keys never wait). `now` is the
  /// caller's promise that no request on any key will from now on be
  /// stamped before it: it raises the horizon to `now` first. Returns how
  /// many states it dropped.
  std::size_t purge(tick now, std::size_t slice = 4096);

  /// One slice of an incremental purge: sweeps at most `max_slots` slots of
  /// one shard (the next in turn) from where its last sweep stopped, as
  /// `purge` (the same promise; raises the horizon). Returns how many states
  /// it dropped.
  std::size_t purge_step(tick now, std::size_t max_slots);

  /// The horizon: the latest instant promised by `purge` or `purge_step`,
  /// at which the store's own sweeps judge freshness (INT64_MIN before the
  /// first).
  [[nodiscard]] tick horizon() const noexcept;

  /// The drop bound of `key`'s shard: the latest instant at which it dropped
  /// or evicted a state (INT64_MIN before the first). A request on `key`
  /// while the store holds no state for it is read as at least this.
  [[nodiscard]] tick drop_bound(std::string_view key) const;

  /// The counts (keys, purged, evicted, units forgiven, refused, bytes).
  [[nodiscard]] keyed_stats stats() const noexcept;

  /// States held now (as `stats().keys`).
  [[nodiscard]] std::size_t size() const noexcept;

  /// Whether existing keys decide lock-free (GCRA or token bucket with
  /// S·W < 2^63).
  [[nodiscard]] bool lock_free() const noexcept;

  /// The policy every key follows.
  [[nodiscard]] const any_policy& policy() const noexcept;

  /// The number of shards in use.
  [[nodiscard]] std::size_t shard_count() const noexcept;

  /// The state held for `key`, if any (a key without one is fresh).
  [[nodiscard]] std::optional<any_state> state_of(std::string_view key) const;

  /// Calls `fn(key, state)` for every key held, shard by shard, each shard
  /// under its lock (new keys in that shard wait; decisions on existing keys
  /// go on). Each state is an atomic reading of that key; the whole is not a
  /// single instant when other threads decide meanwhile.
  void for_each(const std::function<void(std::string_view, const any_state&)>& fn) const;

  /// Replaces every state with `entries` (key, state for this policy),
  /// shard by shard; fresh states are not stored. Requires each state to
  /// hold the policy's state type and to be valid for it (snapshot.hpp's
  /// reader checks that). Throws std::invalid_argument, before changing
  /// anything, when a state does not fit (wrong type, or out of range for a
  /// compact policy), and std::bad_alloc.
  void restore(const std::vector<std::pair<std::string, any_state>>& entries);

  /// Drops every state (not counted as purged or evicted).
  void clear();

  /// Moves `key`'s state out of the store: if it holds one, calls
  /// `fn(state)` while the key's shard is locked (a `take` of the same key
  /// from another thread waits until `fn` has returned, and then finds
  /// nothing), then drops the state (not counted as purged or evicted).
  /// Returns whether there was a state. If `fn` throws, nothing is dropped.
  /// For the memory store's carry-over after a redefinition.
  bool take(std::string_view key, const std::function<void(any_state&&)>& fn);

  /// Moves up to `max` states out of one shard, as `take` does each (under
  /// the shard's lock): `fn(key, state)` for each. A call takes from the
  /// last call's shard unless a `take` waits for its lock, which then gets
  /// it before this caller's next slice there. Returns how many it moved
  /// (0: the store is empty).
  std::size_t take_some(std::size_t max, const std::function<void(std::string_view, any_state&&)>& fn);

  /// Stores `st` for `key` unless the key holds a state already or `st` is
  /// fresh; returns whether it stored it. Throws std::invalid_argument
  /// (changing nothing) for a state of another algorithm or, for a compact
  /// policy, one out of the cell's range; std::bad_alloc.
  bool put(std::string_view key, const any_state& st);

  /// Releases the lease with `nonce` in every concurrency part of `key`'s
  /// state, under the key's shard lock (semantics.md, "Leases"): the units
  /// freed, 0 when the key holds no such lease (or no state). Never moves
  /// the key's time. Defined in src/keyed/release.cpp.
  std::int64_t release_at(std::string_view key, std::uint64_t nonce, tick now);

  /// The implementation (src/keyed/keyed.cpp); not part of the API.
  struct impl;

 private:
  // The memory store's paths straight into the implementation
  // (src/keyed/internals.hpp).
  friend struct detail::keyed_internals;
  std::unique_ptr<impl> impl_;
};

}  // namespace sluice
