// A store: where the states of many keys, under named policies, live — in
// this process (`memory_store`, store/memory.hpp) or in Redis
// (`redis_store`, redis.hpp) — and the one call every front end (the
// command, the HTTP service, the Envoy protocol) makes to decide.
//
// A request names one or more checks, each a (policy, key) pair with its own
// cost (or the request's). It is decided atomically as `all_of` over its
// checks (semantics.md, "Composition" and "Remote stores"): it is admitted
// iff every check admits at its cost, and only then does every check consume
// its cost; a denied request charges no check.
// Each check's own figures (`remaining`, `reset_after`, ...) are read on its
// state after the decision, so a front end can answer with one RateLimit
// list member per check — its `t` too (`grows_after`), computed by the
// store from the state it decided on, without another call.
//
// Every store decides exactly as the core `decide` on each key's own state
// (one conformance suite runs the same traces through every store). A store
// that cannot answer (Redis down, slow, full) decides by its configured
// failure mode, and says so in `store_decision::from` — except a request
// whose answer needs no state (semantics.md, "Answers that need no state"):
// one that holds no state at all (always-allow, always-deny and composites
// of them only) is decided in process with no call; one whose answer the
// rules know (a cost past a leaf's capacity, all(X, always-deny), ...)
// keeps that answer (`source::rule`) when the store fails.
//
// Thread safety: every member function of a store may be called from any
// number of threads at once, `define` included: a decision that overlaps a
// redefinition of its policy is decided wholly under the old policy or
// wholly under the new one, and no admit is lost by the change.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/store_refund.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// A policy registered in a store by `store::define`; an index, cheap to copy.
using policy_id = std::uint32_t;

/// One check of a request: a registered policy, the key it limits, and the
/// units it charges. The key's bytes must stay valid for the duration of
/// the call.
struct check {
  policy_id policy = 0;
  std::string_view key;
  /// Units of cost this check is decided at and charged when the request is
  /// admitted (≥ 1); 0: the request's `cost`. One request may mix costs
  /// (an API call costing 1 request and 40 tokens) and is still decided
  /// atomically.
  std::int64_t cost = 0;
};

/// The most checks one request may name. A longer request is answered as
/// `source::error` (and counted) without deciding any check.
inline constexpr std::size_t max_checks = 16;

/// Where a decision came from.
enum class source : std::uint8_t {
  store,        ///< the store decided (in process, or Redis answered)
  deny_cache,   ///< the exact local deny cache answered (a denial only)
  replayed,     ///< a repeated request id: the first decision, not charged again
  fallback,     ///< the store failed: the local in-process limiter decided
  fail_open,    ///< the store failed: admitted by the configured mode
  fail_closed,  ///< the store failed: denied by the configured mode
  error,        ///< a bad state at a key, or a bad request: denied, counted
  id_conflict,  ///< a repeated request id with other checks: refused, nothing decided or charged
  rule,         ///< the store failed, but the answer needs no state: decided by rule (semantics.md)
};

/// What a remote store does when it cannot answer in time, answers with an
/// error (maxmemory, a busy script, ...), or its circuit breaker is open
/// (semantics.md, "Remote stores": Failures). The Redis store's option, and
/// `sluice serve`'s `store.on_failure`.
enum class failure_mode : std::uint8_t {
  fail_open,    ///< admit (source::fail_open)
  fail_closed,  ///< deny, retry_after = the configured back-off (source::fail_closed)
  local,        ///< decide in process, with the same policy (source::fallback)
};

/// Whose clock decides a remote store's requests (semantics.md, "Clocks of
/// a fleet"): the request's own `now` (`local`), or the store's clock,
/// read inside each call (`store`: one clock for a fleet). The Redis
/// store's option, and `sluice serve`'s `store.clock`.
enum class store_clock : std::uint8_t {
  local,  ///< each request at its `now` (explicit instants)
  store,  ///< each call at the store's clock (Redis TIME), reported in `at`
};

/// How many sources there are (for tables indexed by source).
inline constexpr std::size_t source_count = 9;

/// The name of a source, for logs, metrics and the command's output:
/// "store", "deny-cache", "replayed", "fallback", "fail-open",
/// "fail-closed", "error", "id-conflict", "rule".
std::string_view name_of(source s) noexcept;

/// One request: its checks, decided atomically as all_of, at `now`.
struct store_request {
  std::span<const check> checks;
  /// The instant, in the store's ticks.
  tick now = 0;
  /// Units of cost (≥ 1) of every check whose own `cost` is 0. A request in
  /// which some check's cost (its own, or this) is below 1 is a bad request
  /// (`source::error`).
  std::int64_t cost = 1;
  /// An optional idempotency id (empty: none; semantics.md, "Request ids").
  /// The request's identity is its ordered checks, each as (policy name,
  /// key bytes, `cost_of` the check), and their number — not `now`, nor the
  /// policies' configurations. A repeat of an id already decided within the
  /// store's idempotency window with the same identity gets the first
  /// decision again (`source::replayed`, its figures too) and is not
  /// charged twice; with another identity it is refused
  /// (`source::id_conflict`: denied, `retry_after = never`, nothing decided
  /// or charged, the first decision still remembered), in every store.
  std::string_view id;
};

/// The units check `c` of request `r` is decided at: its own cost, or the
/// request's when that is 0.
[[nodiscard]] constexpr std::int64_t cost_of(const store_request& r, const check& c) noexcept {
  return c.cost != 0 ? c.cost : r.cost;
}

/// When check `remaining` grows by one on `state` of `policy`, read at
/// `now`: the `retry_after` of a request of cost `remaining + 1` on that
/// state alone (semantics.md, "On the wire": the RateLimit field's `t`), in
/// ticks from `now`; `never` when no such request will ever be admitted
/// (`remaining + 1` past what the policy admits at once, a spent quota, a
/// limit of 0, or a `remaining` already the largest cost). What a store
/// writes to `decide_at`'s `grows_after` for a check, with the check's
/// `remaining` and its state after the decision.
[[nodiscard]] inline tick grows_after_of(const any_policy& policy, const any_state& state, tick now,
                                         std::int64_t remaining) {
  if (remaining < 0 || remaining == std::numeric_limits<std::int64_t>::max()) return never;
  return peek(policy, state, now, remaining + 1).retry_after;
}

/// A store's answer to one request.
struct store_decision {
  /// The request's decision: all_of over its checks (`allowed` iff every
  /// check admits; `retry_after` the largest of the checks', `remaining` the
  /// smallest, `reset_after` the largest, read after the decision).
  /// `d.part` is the index of the check that binds (on a denial the one with
  /// the longest wait, on an admit the one with the least room left).
  decision d;
  /// Where the decision came from.
  source from = source::store;
  /// The instant the request was decided at, in the store's ticks: its
  /// `now`, unless the store reads a clock of its own (a Redis store at
  /// `store_clock::store`: Redis's).
  tick at = 0;
  /// The nonce of the leases this admit took (semantics.md, "Leases"): one
  /// for every concurrency part of every check; 0 when it took none (a
  /// denial, a request without a concurrency part, a failure mode's answer).
  std::uint64_t lease = 0;
};

/// What `store::release_at` answers (semantics.md, "Leases").
struct release_result {
  /// The units freed on each check, in the request's order (0: it held no
  /// lease with the nonce: never issued, released, expired).
  std::array<std::int64_t, max_checks> per_check{};
  /// The units freed in all: 0 when the lease was held nowhere.
  std::int64_t units = 0;
  /// store: the store answered; error: a bad request (no checks, more than
  /// max_checks, an unknown policy) or a store that cannot release (down,
  /// or one that does not hold leases), nothing released.
  source from = source::store;
};

/// Counts every store keeps (a store may keep more of its own). Each is a
/// recent value while other threads decide.
struct store_stats {
  std::uint64_t decisions = 0;        ///< requests answered, from any source
  std::uint64_t from_store = 0;       ///< ... by the store itself
  std::uint64_t deny_cache_hits = 0;  ///< ... by the deny cache
  std::uint64_t replayed = 0;         ///< ... as a repeat of a request id
  std::uint64_t fallbacks = 0;        ///< ... by the failure mode (fallback, fail-open, fail-closed)
  std::uint64_t errors = 0;           ///< ... as an error (bad state, bad request)
  std::uint64_t id_conflicts = 0;     ///< ... refused: a repeated request id with other checks
  std::uint64_t by_rule = 0;          ///< ... by rule while the store failed (source::rule)
  std::uint64_t store_failures = 0;   ///< calls to the store that failed (timeout, refused, ...)
  std::uint64_t clock_skew = 0;       ///< requests behind a key's latest admit by more than the tolerance
  std::uint64_t keys = 0;             ///< states held (memory store; 0 where unknown)
};

/// A store's own figures beyond `store_stats`, for a metrics page (the
/// Redis store's: its call latency, failures by reason and breakers);
/// `store::figures` reads them.
struct store_figures {
  /// The call-latency histogram: bucket bounds in integer nanoseconds (a
  /// view of the store's own constant table, valid while the program runs),
  /// and the count of calls per bucket (not cumulative; one more bucket
  /// than bounds: the calls above every bound).
  std::span<const std::int64_t> latency_bounds;
  std::vector<std::uint64_t> latency_buckets;
  /// The calls' total duration, ns.
  std::uint64_t latency_sum_ns = 0;
  /// Failed calls by reason ("timeout", "refused", "auth", "oom", ...), in
  /// the store's order (the names are the store's constants).
  std::vector<std::pair<std::string_view, std::uint64_t>> failures;
  /// Each circuit breaker: the node it guards ("host:port", or a socket
  /// path; never a password) and its state ("closed", "open", "half-open").
  std::vector<std::pair<std::string, std::string_view>> breakers;
  /// A deny cache that hears the changes other processes make (the Redis
  /// store's invalidation channel, docs/redis.md "The deny cache").
  struct cache_subscription {
    bool subscribed = false;          ///< confirmed now: the cache may answer
    std::uint64_t invalidations = 0;  ///< messages heard
    std::uint64_t subscriptions = 0;  ///< subscriptions confirmed
    std::uint64_t bypassed = 0;       ///< requests it could not answer: not subscribed, or a message unread
  };
  /// nullopt: no deny cache.
  std::optional<cache_subscription> deny_cache;
  /// The store's clock minus this process's realtime clock, in ns, as last
  /// measured (semantics.md, "Clocks of a fleet"): positive when this
  /// process is behind. None before the first measurement.
  std::optional<std::int64_t> clock_offset_ns;
  /// Keys the store's servers evicted since it opened; nullopt when it
  /// does not count them.
  std::optional<std::uint64_t> evicted_keys;
  /// The latest failed call's reason and message ("untrusted: ...: TLS: the
  /// server's certificate is not trusted (...)"; never a password), or ""
  /// when no call failed.
  std::string last_failure;
};

/// One override (semantics.md, "Overrides"): a key of a policy and the
/// limit it has instead of the configured one.
struct key_override {
  std::string key;    ///< the key's bytes
  any_policy policy;  ///< its own limit
};

/// A page of a policy's overrides, in byte order of their keys.
struct override_page {
  std::vector<key_override> overrides;
  /// When more follow: the last key of this page (list again after it).
  std::optional<std::string> next;
};

/// What setting an override did.
enum class override_change : std::uint8_t {
  created,    ///< the key had none
  replaced,   ///< the key had another: its state carried from that one
  unchanged,  ///< the key had this very override: nothing changed
};

/// What a store is asked to do with a request (`store::run_at`): the three
/// operations of the core interface, each with a synchronous and an
/// asynchronous form.
enum class store_op : std::uint8_t {
  decide,  ///< decide and charge (`store::decide_at`)
  peek,    ///< what `decide` would answer, changing nothing (`store::peek_at`)
  report,  ///< charge whatever the limits say (`store::report_at`)
};

/// A store that keeps receipts and refunds by request id (semantics.md,
/// "Refunds"); offered through `store::capabilities`.
class store_refunds {
 public:
  /// Refunds request id `id` at `now`: gives back, in one atomic step over
  /// the id's checks, what the id's first decision took on each (its
  /// checks' receipts, each by its policy's rule), once. Writes check i's
  /// figures after the refund to `per_check[i]` and the whole units given
  /// back to `given[i]`, for the first min(size, checks) entries of each. A
  /// remote store that fails refunds nothing and answers
  /// `refund_status::error` (counted as a failure); the refund is marked in
  /// the same atomic step that gives back, so sending it again is safe.
  virtual refund_answer refund_at(std::string_view id, tick now, std::span<decision> per_check,
                                  std::span<std::int64_t> given) = 0;

  /// The id `refund_at` refunds `r`'s decision by: `r.id` itself (the
  /// default), except in a Redis Cluster, where it names the slot of the
  /// id's record too. Empty when `r` has no id.
  [[nodiscard]] virtual std::string refund_id(const store_request& r) const { return std::string(r.id); }

 protected:
  ~store_refunds() = default;
};

/// A store that holds leases and releases them (semantics.md, "Leases");
/// offered through `store::capabilities`.
class store_leases {
 public:
  /// Releases the leases with `nonce` that `checks` hold: on each check, in
  /// every concurrency part of its policy, the lease with that nonce held
  /// at `now`; nothing else changes (no time moves, no other lease goes). A
  /// check's `cost` is ignored.
  virtual release_result release_at(std::span<const check> checks, std::uint64_t nonce, tick now) = 0;

 protected:
  ~store_leases() = default;
};

/// A store that keeps per-key overrides (semantics.md, "Overrides");
/// offered through `store::capabilities`.
class store_overrides {
 public:
  /// Gives `key` of `policy` its own limit `limit` at `now`: the key's
  /// state is carried into it with `reconfigure` in one atomic step with
  /// the switch. Errors (nothing changed): "policy" for an unknown id or a
  /// limit that cannot continue the configured policy's states,
  /// "overrides" past the store's bound, "store" when a remote store
  /// failed.
  virtual result<override_change> set_override_at(policy_id policy, std::string_view key, const any_policy& limit,
                                                  tick now) = 0;

  /// Removes `key`'s override of `policy` at `now`, carrying its state back
  /// into the configured policy; false when it had none.
  virtual result<bool> delete_override_at(policy_id policy, std::string_view key, tick now) = 0;

  /// `key`'s override of `policy`, if it has one.
  virtual result<std::optional<any_policy>> override_of(policy_id policy, std::string_view key) = 0;

  /// Up to `limit` overrides of `policy` whose keys come after `after` in
  /// byte order (empty: from the first).
  virtual result<override_page> list_overrides(policy_id policy, std::string_view after, std::size_t limit) = 0;

  /// How many overrides the store holds over every policy; nullopt when it
  /// cannot tell without a call (the default).
  [[nodiscard]] virtual std::optional<std::uint64_t> override_count() const { return std::nullopt; }

  /// The override `key` of `policy` was last decided under, as far as this
  /// process knows without a call (what a response advertises); nullopt
  /// for none. The default asks `override_of` while `override_count` says
  /// any are held; a remote store answers what its latest call there saw.
  virtual std::optional<any_policy> override_seen(policy_id policy, std::string_view key) {
    if (const auto held = override_count(); !held || *held == 0) return std::nullopt;
    auto ov = override_of(policy, key);
    if (!ov || !*ov) return std::nullopt;
    return std::move(*ov).value();
  }

 protected:
  ~store_overrides() = default;
};

/// A store that can say more about itself than `store::stats` (a remote
/// store: its key count by a call, its own figures); offered through
/// `store::capabilities`.
class store_introspection {
 public:
  /// How many keys the store holds, asking it where that takes a call (the
  /// Redis store: its database's key count); nullopt when it cannot tell
  /// now. For an occasional reader such as a metrics scrape, not the
  /// decision path.
  [[nodiscard]] virtual std::optional<std::uint64_t> count_keys() = 0;

  /// The asynchronous face of `count_keys`: `done` gets its answer once,
  /// now or from a thread of the store's. The default runs `count_keys`.
  virtual void count_keys_async(std::function<void(std::optional<std::uint64_t>)> done) { done(count_keys()); }

  /// The store's own figures (store_figures), read now, or nullopt (the
  /// default). Makes no call to a server: a scrape may read it at any time,
  /// from any thread.
  [[nodiscard]] virtual std::optional<store_figures> figures() const { return std::nullopt; }

 protected:
  ~store_introspection() = default;
};

/// What a store offers beyond the core interface (`store::capabilities`):
/// each a pointer into the store itself, nullptr when it does not offer it.
/// A store's capabilities never change while it lives.
struct store_capabilities {
  store_refunds* refunds = nullptr;
  store_leases* leases = nullptr;
  store_overrides* overrides = nullptr;
  store_introspection* introspection = nullptr;
};

/// The interface every store implements: eight virtual members (the
/// destructor, `define`, `run_at` and `run_async` for decide, peek and
/// report, `decide_many_at`, `now`, `stats`, `capabilities`). Everything
/// else a caller names (decide_at, peek_at, report_at, their async and
/// clock-reading forms, refunds, releases, overrides, key counts, figures)
/// is a non-virtual member over them; a capability a store does not offer
/// answers as a store without it (an error, nothing changed).
class store {
 public:
  virtual ~store() = default;

  /// Registers `policy` under `name` and returns its id. Defining a name
  /// again replaces its policy and keeps its id: every state it holds is
  /// carried over by `reconfigure` (a throttled client never gets a fresh
  /// limit), and the deny cache forgets that policy; defining it again with
  /// the same policy changes nothing. The error names the
  /// field when the store cannot decide the policy exactly (Redis: a
  /// quantity past 2^52, ...), or "algorithm" when the new policy cannot
  /// continue the old one's states.
  virtual result<policy_id> define(std::string_view name, const any_policy& policy) = 0;

  /// Does `op` on `r`: `decide_at`, `peek_at` or `report_at` (see each).
  /// `grows_after` is read by `store_op::decide` only.
  virtual store_decision run_at(store_op op, const store_request& r, std::span<decision> per_check,
                                std::span<std::optional<tick>> grows_after) = 0;

  /// What an asynchronous call hands back: the decision, once.
  using decided = std::function<void(const store_decision&)>;

  /// The asynchronous face of `run_at`: does `op` on `r` as `run_at` does
  /// and calls `done` with the answer exactly once — before returning (an
  /// in-process store, an answer that needs no call) or later from a thread
  /// of the store's (a remote store, when its reply comes or the call's
  /// deadline passes). The caller keeps what `r` points to (checks, keys,
  /// id) and `per_check` / `grows_after` alive until then. Never blocks on
  /// a remote server (semantics.md, "The service's event loops"); the
  /// default runs `run_at`.
  virtual void run_async(store_op op, const store_request& r, std::span<decision> per_check,
                         std::span<std::optional<tick>> grows_after, decided done) {
    done(run_at(op, r, per_check, grows_after));
  }

  /// Decides `requests` in order, as that many `decide_at` calls would
  /// (a key repeated in the batch sees its earlier admits), writing
  /// `out[i]` for `requests[i]`; a remote store sends them in one pipeline.
  /// Requires `out.size() >= requests.size()`.
  virtual void decide_many_at(std::span<const store_request> requests, std::span<store_decision> out) = 0;

  /// The instant now on the store's clock, in its ticks (both the memory
  /// store and the Redis store: the realtime clock, ns since 1970, which
  /// machines of a fleet share and a restart keeps).
  [[nodiscard]] virtual tick now() const noexcept = 0;

  /// The store's counts.
  [[nodiscard]] virtual store_stats stats() const = 0;

  /// What the store offers beyond this interface (store_capabilities); the
  /// default: nothing.
  [[nodiscard]] virtual store_capabilities capabilities() const noexcept { return {}; }

  /// Decides `r` (see store_request). Writes each check's own decision to
  /// `per_check[i]` when `per_check` is not empty (it must then hold at
  /// least `r.checks.size()` elements): its limiter's answer (`part` as
  /// that limiter reports it, -1 for a plain one); on a denied request, a
  /// check that would have admitted reports `allowed = false`,
  /// `retry_after = 0`, `release_after = 0`, and the `remaining` and
  /// `reset_after` of its untouched state. A request that names one
  /// (policy, key) twice is a bad request (`source::error`). Never throws
  /// for a store failure: the failure mode answers (std::bad_alloc may
  /// still escape).
  ///
  /// Writes to `grows_after[i]`, when it is not empty (it must then hold at
  /// least `r.checks.size()` elements), when check i's `remaining` (as
  /// written to `per_check[i]`) grows by one: `grows_after_of` on the
  /// check's state after this decision, which the store holds (no further
  /// call), `never` when it never will. nullopt when the answer comes from
  /// no state: a failure mode's fail-open or fail-closed, an error, and a
  /// deny-cache answer for a check the cache did not answer itself (for
  /// those it did, the cached wait, exact for a cost of 1). A repeated
  /// request id's answer holds the figures of its first decision.
  store_decision decide_at(const store_request& r, std::span<decision> per_check = {},
                           std::span<std::optional<tick>> grows_after = {}) {
    return run_at(store_op::decide, r, per_check, grows_after);
  }

  /// What `decide_at` would answer, changing nothing (and charging no
  /// request id).
  store_decision peek_at(const store_request& r, std::span<decision> per_check = {}) {
    return run_at(store_op::peek, r, per_check, {});
  }

  /// Reports `r` (semantics.md, "Reports"): charges every check its cost,
  /// whatever the limits say — never denied — in one atomic step, and
  /// answers with the figures after the charge (`allowed = true`; per
  /// check the core `report`'s, in `per_check` as for `decide_at`; the
  /// request's combined as `combine_reports`). A report holds no request
  /// id: one with an id, a cost below 1, a (policy, key) named twice is a
  /// bad request (`source::error`, nothing charged). A store that cannot
  /// take it (down, refused) charges nothing and answers `source::error`,
  /// counted as a failure: the report is lost, and the caller may send it
  /// again. No failure mode admits or charges it elsewhere.
  store_decision report_at(const store_request& r, std::span<decision> per_check = {}) {
    return run_at(store_op::report, r, per_check, {});
  }

  /// The clock-reading twin of `decide_at`: `r.now` is replaced by `now()`.
  store_decision decide(store_request r, std::span<decision> per_check = {},
                        std::span<std::optional<tick>> grows_after = {}) {
    r.now = now();
    return decide_at(r, per_check, grows_after);
  }

  /// The clock-reading twin of `peek_at`.
  store_decision peek(store_request r, std::span<decision> per_check = {}) {
    r.now = now();
    return peek_at(r, per_check);
  }

  /// The clock-reading twin of `report_at`.
  store_decision report(store_request r, std::span<decision> per_check = {}) {
    r.now = now();
    return report_at(r, per_check);
  }

  /// The asynchronous face of `decide_at` (run_async).
  void decide_async(const store_request& r, std::span<decision> per_check, std::span<std::optional<tick>> grows_after,
                    decided done) {
    run_async(store_op::decide, r, per_check, grows_after, std::move(done));
  }

  /// The asynchronous face of `peek_at` (run_async), without per-check
  /// figures.
  void peek_async(const store_request& r, decided done) { run_async(store_op::peek, r, {}, {}, std::move(done)); }

  /// The asynchronous face of `report_at` (run_async): `done` gets the
  /// report's answer once, now or from a thread of the store's.
  void report_async(const store_request& r, std::span<decision> per_check, decided done) {
    run_async(store_op::report, r, per_check, {}, std::move(done));
  }

  /// Refunds request id `id` at `now` (store_refunds::refund_at). A store
  /// that keeps no receipts answers `refund_status::error`, nothing refunded.
  refund_answer refund_at(std::string_view id, tick now, std::span<decision> per_check = {},
                          std::span<std::int64_t> given = {});

  /// The id `refund_at` refunds `r`'s decision by (store_refunds::refund_id);
  /// `r.id` for a store that keeps no receipts.
  [[nodiscard]] std::string refund_id(const store_request& r) const;

  /// Releases the leases with `nonce` that `checks` hold
  /// (store_leases::release_at). A store that holds no leases answers
  /// `source::error`, nothing released.
  release_result release_at(std::span<const check> checks, std::uint64_t nonce, tick now);

  /// Overrides (store_overrides). A store that keeps none refuses each
  /// change and read with the error "store" ("this store keeps no
  /// overrides"), nothing changed.
  result<override_change> set_override_at(policy_id policy, std::string_view key, const any_policy& limit, tick now);
  /// See set_override_at.
  result<bool> delete_override_at(policy_id policy, std::string_view key, tick now);
  /// See set_override_at.
  result<std::optional<any_policy>> override_of(policy_id policy, std::string_view key);
  /// See set_override_at.
  result<override_page> list_overrides(policy_id policy, std::string_view after, std::size_t limit);
  /// The overrides held over every policy; nullopt when the store cannot
  /// tell without a call, or keeps none.
  [[nodiscard]] std::optional<std::uint64_t> override_count() const;
  /// The override `key` of `policy` was last decided under, as far as this
  /// process knows without a call (store_overrides::override_seen); nullopt
  /// for none, and from a store that keeps none.
  std::optional<any_policy> override_seen(policy_id policy, std::string_view key);

  /// How many keys the store holds (store_introspection::count_keys); for a
  /// store without introspection, `stats().keys`.
  [[nodiscard]] std::optional<std::uint64_t> count_keys();
  /// The asynchronous face of `count_keys`: `done` gets its answer once,
  /// now or from a thread of the store's.
  void count_keys_async(std::function<void(std::optional<std::uint64_t>)> done);
  /// The store's own figures (store_introspection::figures); nullopt for a
  /// store that keeps none (the memory store).
  [[nodiscard]] std::optional<store_figures> figures() const;
};

}  // namespace sluice
