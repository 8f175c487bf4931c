// The Redis store's implementation state (include/sluice/redis/store.hpp),
// shared by its source files: store.cpp (definitions, failure modes,
// stats), decide.cpp (every request's call, for every face: requests to
// FCALLs, replies to decisions), report.cpp (what a report has of its own),
// carry.cpp (states carried over a redefinition, request-id records),
// cas.cpp (the one compare-and-set write of refund.cpp, release.cpp,
// overrides.cpp and carry.cpp). Private to sluice::redis.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "redis/client/client.hpp"
#include "redis/client/cluster.hpp"
#include "redis/client/figures.hpp"
#include "redis/client/sync_client.hpp"
#include "redis/store/eviction.hpp"
#include "redis/store/invalidation.hpp"
#include "redis/store/migrate.hpp"
#include "redis/store/protocol.hpp"
#include "redis/store/settings.hpp"
#include "redis/store/slow_lane.hpp"
#include "sluice/keyed/memory.hpp"
#include "sluice/redis/store.hpp"
#include "sluice/remote/circuit_breaker.hpp"
#include "sluice/remote/deny_cache.hpp"

namespace sluice {

namespace redis {

extern const std::string_view lua_library;
extern const std::string_view lua_library_name;  // sluice_v2_<hash of the code> (embed_lua.cmake)

/// A function of the library (main.lua) and the module's command that
/// takes the same keys and arguments (module.hpp; none: the library's only).
struct library_function {
  std::string name;
  module_command module = module_command::none;
  /// A call of it: `num_keys` keys first in `keys_then_args`.
  [[nodiscard]] function_call call(std::size_t num_keys, std::span<const std::string_view> keys_then_args) const {
    return function_call{name, num_keys, keys_then_args, module};
  }
};

/// The library's functions (main.lua), each with its module command: the
/// one place that pairs them.
struct functions {
  static library_function of(std::string_view suffix, module_command m = module_command::none) {
    return library_function{std::string(lua_library_name) + std::string(suffix), m};
  }
  library_function one = of("_one", module_command::one);
  library_function decide = of("_decide", module_command::decide);
  library_function peek = of("_peek", module_command::peek);
  library_function cas = of("_cas", module_command::cas);
  library_function report = of("_report", module_command::report);
  library_function refund_read = of("_refund_read", module_command::refund_read);  // refund.lua
  library_function refund = of("_refund", module_command::refund);
  library_function release = of("_release", module_command::release);  // release.lua
  library_function sync = of("_sync");                                 // after a call that published
};

/// One configuration of a defined policy, as decisions read it. Immutable
/// once published; every entry is kept until the store is destroyed, so a
/// decision reads one through a plain pointer, without a reference count.
struct entry {
  std::string name;
  std::vector<epoch> epochs;  ///< oldest first; the current configuration last
  const plan* p = nullptr;    ///< epochs.back().p
  policy_id local_id = 0;     ///< the same policy in the local fallback
  std::uint64_t version = 0;  ///< the deny cache's: a new one per configuration
  std::string key_head;       ///< "<prefix>s:<name>:{"
  std::string override_head;  ///< "<prefix>o:<name>:{" (docs/redis.md, "Overrides")
  /// An override's entry (overrides.cpp): the bytes its key holds (a
  /// version byte and the policy's expression), and its plan alone in
  /// `epochs`. A configured entry: false, empty.
  bool is_override = false;
  std::string override_bytes;
};

/// How a call's answer turned out.
enum class outcome : std::uint8_t {
  ok,           ///< a decision
  corrupt,      ///< a key holds a foreign or corrupt value
  unknown,      ///< a key holds a value of a configuration this store does not know
  mismatch,     ///< the script and the core disagree (or a state the library cannot hold)
  failure,      ///< no usable answer: the failure mode decides
  not_sent,     ///< the call's node has its circuit breaker open (a cluster): the failure mode decides
  stale,        ///< a key holds an earlier configuration's value: carry it over
  skipped,      ///< not run (a pipeline stopped at a stale request): send again
  conflict,     ///< a compare-and-set found a key changed: read again
  id_conflict,  ///< a repeated request id whose first request had another identity: refused
  moved,        ///< a check's override is not the one the call was built for (status 6): build again
};

/// A state as the library holds it (refund.cpp: a debt ≥ 0 after the
/// latest admit's instant), deciding as `st` did at and after `now`.
void make_holdable(const plan& p, any_state& st, tick now);
/// Whether leaf state `s` of `leaf` holds nothing a decision at or after
/// `at` counts (it decides as a fresh one: its key may go).
bool leaf_emptied(const any_policy& leaf, const any_state& s, tick at);
/// A state of `leaf` in place of `carried` that admits no more at and after
/// `at` than the new policy fully used at `at` (conservative.cpp): the
/// tightest holdable one no laxer than `carried` (a debt or a count capped
/// at the library's ranges), or with `exhausted` a fresh state charged the
/// whole limit at `at`; nullopt where there is none (a concurrency leaf).
std::optional<any_state> conservative_leaf(const any_policy& leaf, const any_state& carried, tick at, bool exhausted);

/// A key's value in a reply: nullopt for nil; a reply that is neither nil
/// nor a string sets `ok` to false.
inline std::optional<std::string_view> value_of(const reply& r, bool& ok) {
  if (r.is_nil()) return std::nullopt;
  const auto s = r.as_string();
  if (!s) ok = false;
  return s;
}

/// The outcome of a call that got no reply (or an error reply, from
/// `fcall`): a key's corrupt value, a node whose breaker is open, or a
/// failure.
inline outcome outcome_of(const call_error& e) noexcept {
  if (e.kind == call_error::server && e.message.starts_with("sluice: corrupt state")) return outcome::corrupt;
  return e.kind == call_error::breaker ? outcome::not_sent : outcome::failure;
}

/// A call's bytes, built in a per-thread buffer: offsets of its keys and
/// arguments, so that one buffer holds a whole pipeline.
struct call_span {
  std::size_t first = 0;  ///< index of its first view
  std::size_t views = 0;  ///< keys then arguments
  std::size_t keys = 0;
  std::string_view function;
  module_command module = module_command::none;  ///< the module's command for it (module.hpp)
  letter_set letters = 0;                        ///< its leaves' letters
};

/// Per-thread buffers of the calls being built (reused, so a warm thread
/// decides without allocating them).
struct scratch {
  std::string bytes;                                        // every key and argument of the calls, back to back
  std::vector<std::pair<std::size_t, std::size_t>> pieces;  // (offset, length) in `bytes`, per view
  std::vector<std::string_view> views;
  std::vector<call_span> calls;
  std::vector<function_call> fcalls;
  std::vector<std::size_t> owner;  // call -> request
};

/// One key of a compare-and-set (`_cas`, `_refund`; cas.cpp): the value it
/// must still hold, and what it gets.
struct cas_key {
  std::string key;
  std::optional<std::string> expected;  ///< as read (nullopt: none)
  std::optional<std::string> written;   ///< nullopt: no write; "": deleted
  std::int64_t px = 0;                  ///< the write's expiry in ms (0: none)
};

/// What `write_leaf` made of a leaf.
enum class leaf_write : std::uint8_t {
  kept,        ///< unchanged and not carried: no write
  written,     ///< its value set in its cas_key, or its key deleted (a fresh state)
  unholdable,  ///< a state the library cannot hold: nothing set, the caller decides
};

/// A compare-and-set's answer.
struct cas_answer {
  /// 1: written; 0: a key moved, nothing written (counted in
  /// carry_conflicts: the caller reads again); another: the function's
  /// own; nullopt: no usable answer.
  std::optional<std::int64_t> status;
  call_result res;
  /// The reply's array when it is one that starts with an integer, else null.
  [[nodiscard]] const std::vector<reply>* array() const;
};

/// What a request's call does.
enum class call_kind : std::uint8_t { decide, peek, report };

/// One request between its call and its answer, whichever face sends it
/// (decide.cpp): the synchronous one keeps it on its stack, the
/// asynchronous one in its shared job, a pipeline one per request. Its
/// per-check arrays hold a few checks in place and are sized once, before
/// any span points into them: a request of up to four checks is one
/// allocation small enough for malloc's per-thread cache, where arrays of
/// max_checks made it a large one on malloc's slow path.
struct request_job {
  static constexpr std::size_t in_place = 4;
  /// The request; at the store's clock its instant is the estimate it was
  /// looked up at, then the instant its reply returned.
  store_request r;
  call_kind kind = call_kind::decide;
  std::span<decision> per_check;  ///< the caller's, or `mine`
  std::span<std::optional<tick>> grows;
  boost::container::small_vector<const entry*, in_place> es;
  boost::container::small_vector<decision, in_place> mine;
  std::uint64_t nonce = 0;                        ///< of the leases it may take: sent, and decided with
  std::optional<std::uint64_t> seen;              ///< the deny cache's generation before the call (conclude)
  int moves = 0;                                  ///< times built again for an override that changed under it
  std::vector<std::optional<std::string>> stale;  ///< a status 3's values, or a status 6's (moved_of)
  [[nodiscard]] bool peek() const noexcept { return kind == call_kind::peek; }
  [[nodiscard]] bool report() const noexcept { return kind == call_kind::report; }
};

}  // namespace redis

struct redis_store::impl {
  using entry = redis::entry;
  using outcome = redis::outcome;

  static constexpr std::size_t chunk_bits = 10;
  static constexpr std::size_t chunk_size = std::size_t{1} << chunk_bits;
  static constexpr std::size_t max_chunks = 64;  // 65,536 policies

  redis::store_settings opt;
  // The one client: one server, a Sentinel master or a cluster, through
  // the asynchronous client (its synchronous face for the calls that
  // wait); `cluster` is its async backend when it is a cluster.
  std::unique_ptr<redis::sync_client> cli;
  redis::cluster_client* cluster = nullptr;
  redis::functions fns;
  std::int64_t ttl_base = 0;  // ms added to every state's time-to-fresh (or the fixed expiry)
  std::string id_ttl;         // ms, as text

  std::mutex defs_mu;                                                              // define
  std::unordered_map<std::string, policy_id> ids;                                  // requires defs_mu
  std::vector<std::unique_ptr<const entry>> entries;                               // every entry ever; requires defs_mu
  std::array<std::unique_ptr<std::atomic<const entry*>[]>, max_chunks> chunks {};  // written under defs_mu
  std::atomic<std::size_t> defined{0};                                             // ids below it are published
  std::uint64_t versions = 0;                                                      // requires defs_mu
  std::atomic<std::uint64_t> batches{0};

  // The local fallback (failure_mode::local only): the same policies in
  // process.
  std::unique_ptr<memory_store> local;

  std::unique_ptr<remote::circuit_breaker> breaker;  // null: none
  std::unique_ptr<remote::deny_cache> denials;       // null: off
  // The deny cache's subscription to the invalidation channel (null: no
  // cache); declared after the cache, so it stops before the cache goes.
  std::string invalidation;  // the channel, <prefix>invalidate: every store publishes its changes there
  std::unique_ptr<redis::invalidation_listener> listener;
  std::atomic<std::uint64_t> bypassed{
      0};  // requests it could not answer: not subscribed, a message unread or being read, TLS
  /// Whether the deny cache may answer and take denials now: it is on and
  /// its subscription is confirmed (docs/redis.md, "The deny cache").
  [[nodiscard]] bool cache_live() const noexcept { return listener && listener->subscribed(); }
  /// The deny cache's generation before a call, for `conclude` (nullopt:
  /// no cache to insert into).
  [[nodiscard]] std::optional<std::uint64_t> cache_generation() const noexcept {
    if (!cache_live()) return std::nullopt;
    return denials->generation();
  }
  /// The invalidation message of `keys` (invalidation.hpp), appended to a
  /// changing call's arguments with its channel (`L_cas`, `L_refund`).
  void append_invalidation(std::vector<std::string>& args, std::span<const std::string_view> keys) const;
  /// After a call that published (L_cas, L_refund) returned, before the
  /// change is acknowledged: one more round trip to the node of `key` (the
  /// call's first key), which Redis runs only after it has written out the
  /// call's message to every subscriber (docs/redis.md, "The deny cache").
  /// A failure is ignored: the change is made, the message published.
  void settle(std::string_view key);

  // The asynchronous path (decide_async): the decisions that need more
  // than one call go to `slow`; `in_flight` counts the asynchronous
  // decisions not yet answered (the store's end waits for them).
  redis::slow_lane slow;
  std::mutex flight_mu;
  std::condition_variable flight_cv;
  std::int64_t in_flight = 0;  // requires flight_mu

  // The event loops attached (remote/event_loops.hpp; never in a cluster):
  // each loop's own backend, used, replaced and dropped only on that loop's
  // thread (or once no thread runs it). The vector is set before the loops
  // run and never resized after.
  struct loop_backend {
    boost::asio::io_context* ctx = nullptr;
    std::shared_ptr<redis::async_backend> b;  // null once detached
  };
  std::vector<loop_backend> loops;
  /// The backend an asynchronous call made on this thread goes out on: the
  /// backend of the attached loop this thread runs, else the store's own.
  redis::async_backend& backend_here() noexcept;

  redis::call_figures figures;  // latency, failures by reason
  std::string node;             // the one server's "host:port" or socket path (health lines, breaker_view)

  std::atomic<std::uint64_t> deny_hits{0}, breaker_open{0};
  std::atomic<std::uint64_t> decisions{0}, from_store{0}, replayed{0}, fallbacks{0}, errors{0}, failures{0}, skew{0},
      mismatches{0}, corrupt{0}, carried{0}, carry_conflicts{0}, unknown_config{0}, cross_slot{0}, id_conflicts{0},
      by_rule{0};

  impl(redis::store_settings o, std::unique_ptr<redis::sync_client> b);

  /// The published entry of `id`, or null.
  const entry* entry_of(policy_id id) const noexcept {
    if (id >= defined.load(std::memory_order_acquire)) return nullptr;
    return chunks[id >> chunk_bits][id & (chunk_size - 1)].load(std::memory_order_acquire);
  }

  /// The request's entries into `es` (r.checks.size() of them); false for a
  /// bad request (no check, too many, a cost below 1, a (policy, key) named
  /// twice, an unknown policy).
  /// A check of a key this process saw overridden gets its override's
  /// entry (believed).
  bool entries_of(const store_request& r, const entry** es) const;

  /// In a cluster, whether every state key of `r` lies in one hash slot
  /// (its id key is put there too: append_id_key); always true on one
  /// server.
  bool one_slot(const store_request& r, const entry* const* es) const;

  /// `r`'s request id identity (detail::request_identity), into `out`.
  void identity_of(const store_request& r, const entry* const* es, std::string& out) const;

  /// Appends the key of `r`'s request id: `<prefix>i:<id>`, in a cluster
  /// `<prefix>i:{<tag>}<id>` with the tag of the slot of `r`'s state keys.
  void append_id_key(const store_request& r, const entry* const* es, std::string& out) const;

  /// In a cluster, appends `{<tag>}` of `r`'s id key (append_id_key): the
  /// first stateful check's key up to its first '}', or the short tag of
  /// its slot when that is empty. Nothing on one server.
  void append_id_tag(const store_request& r, const entry* const* es, std::string& out) const;

  /// A request whose keys span several cluster slots cannot be atomic: an
  /// error, decided nowhere, counted.
  store_decision refuse_cross_slot(const store_request& r, bool peek, std::span<decision> per_check);

  /// A batch number for a pipeline (non-zero, below 2^52).
  std::int64_t next_batch() noexcept;

  // ---- store_clock.cpp (semantics.md, "Clocks of a fleet") ----
  /// Whether every call is decided at the store's clock (clock = store).
  [[nodiscard]] bool at_store_clock() const noexcept { return opt.clock == store_clock::store; }
  /// The instant a call sends: `now` (local), or, at the store's clock, the
  /// estimate of the store's clock flagged for the library (its high limb
  /// plus 2^32: common.lua, `instant`).
  void put_instant(std::string& out, tick now) const;
  /// At the store's clock: the instant a reply ends with (two integers),
  /// removed from it into `now`, and the estimate updated from it and the
  /// call's send time `sent_ns` (steady). True at the local clock, and for
  /// an error reply (it has none); false for a reply without it.
  bool take_instant(redis::reply& rep, std::int64_t sent_ns, tick& now);
  bool take_instant(redis::call_result& res, std::int64_t sent_ns, tick& now) {
    auto* rep = std::get_if<redis::reply>(&res);
    return rep == nullptr || take_instant(*rep, sent_ns, now);
  }
  /// The instant a request is looked up in the deny cache and stamped with
  /// before its call: `now` at the local clock; at the store's, the
  /// estimate of the store's clock, an upper bound (docs/redis.md, "The
  /// deny cache"), or before any reply came this machine's realtime clock
  /// plus the measured offset (if any), in ticks.
  [[nodiscard]] tick lookup_now(tick now) const noexcept;
  /// About once a second (the first decision after a second has passed),
  /// a TIME read on the slow lane measures the offset to the store's clock
  /// (clock_offset, the skew count, the health line past max_clock_offset).
  void maybe_measure_clock();
  std::optional<std::int64_t> measure_clock();
  /// At the local clock, whether `now` is ahead of the store's clock (this
  /// machine's realtime clock plus the measured offset) by more than
  /// skew_tolerance: the process ahead counts as skew too (the one behind
  /// meets keys whose latest admit is ahead of it).
  [[nodiscard]] bool ahead_of_store(tick now) const noexcept;
  // store clock - steady ns, of the latest reply's instant (ns), and whether one came
  std::atomic<std::int64_t> store_minus_steady{0};
  std::atomic<bool> have_store_estimate{false};
  std::atomic<std::int64_t> next_measure_ns{0};  // steady ns of the next offset measurement
  std::atomic<std::int64_t> offset_ns{0};
  std::atomic<bool> have_offset{false}, offset_past_bound{false};

  /// One FCALL, or one pipeline of them, timed and its failures counted by
  /// reason (figures): every call the store decides with goes through these.
  redis::call_result call_one(const redis::function_call& fc);
  std::vector<redis::call_result> call_each(std::span<const redis::function_call> fcs);
  /// The health line of a breaker that opened (`healthy` false) or closed,
  /// given to opt.on_health_change.
  /// `why`: the reason of the failure that opened it.
  void health_changed(std::string_view which, bool healthy, std::optional<redis::failure_reason> why) const;

  // ---- decide.cpp: every request's call, written once for every face ----
  /// Runs a request synchronously (decide_at, peek_at, report_at): its
  /// call, then what takes more calls (resolve); `grows`: its checks'
  /// grows_after (store.hpp), when not empty.
  store_decision run(const store_request& r, redis::call_kind kind, std::span<decision> per_check,
                     std::span<std::optional<tick>> grows = {});
  /// `run` without waiting (decide_async, peek_async, report_async): one
  /// FCALL on the asynchronous client, judged on its I/O thread; a reply
  /// that needs more calls (a carry-over, an override that moved) is run
  /// again, afresh, on `slow`.
  void run_async(const store_request& r, redis::call_kind kind, std::span<decision> per_check,
                 std::span<std::optional<tick>> grows, store::decided done);
  /// Decides requests in pipelines (decide_many_at).
  void many(std::span<const store_request> requests, std::span<store_decision> out);
  /// Prepares `j` for `request`: its entries, the arrays it decides into, its
  /// nonce; the answer before any call if there is one (before_call,
  /// report_before_call), else nullopt. `j.seen` is the caller's to read.
  std::optional<store_decision> prepare(redis::request_job& j, const store_request& request, redis::call_kind kind,
                                        std::span<decision> per_check, std::span<std::optional<tick>> grows);
  /// The outcome of `j`'s call result `res`, sent at `sent` (steady ns);
  /// `out` holds the decision when ok.
  outcome answered(redis::request_job& j, redis::call_result& res, std::int64_t sent, store_decision& out);
  /// `j`'s call sent alone, synchronously: its outcome.
  outcome send(redis::request_job& j, store_decision& out);
  /// After outcome `o`, what takes more calls, synchronously: a call built
  /// again under an override that moved, a carried state's compare-and-set,
  /// a read again after a lost race; the final outcome.
  outcome resolve(redis::request_job& j, outcome o, store_decision& out);
  /// The answer for `j`'s final outcome, counted (conclude, report_concluded).
  store_decision finish(redis::request_job& j, outcome o, const store_decision& out);
  /// What a decision is answered before any call, if anything: a bad or
  /// cross-slot request's error, a stateless request's decision, the deny
  /// cache's or an open breaker's answer; else nullopt, with `es` filled.
  std::optional<store_decision> before_call(const store_request& r, bool peek, const entry** es,
                                            std::span<decision> per_check, std::span<std::optional<tick>> grows);
  /// Counts an asynchronous decision in (`enter`) and out (`leave`).
  void enter();
  void leave();
  /// Appends request `r`'s call to `s` (its keys and binary argument).
  /// `report`: a report's call (`sluice_v2_report`, report.cpp).
  void build(const store_request& r, const entry* const* es, bool peek, std::int64_t batch, redis::scratch& s,
             bool report = false) const;
  /// The outcome of a call's reply; `out` holds the decision when ok (and
  /// `grows`, when not empty, each check's grows_after).
  outcome judge(const store_request& r, const entry* const* es, const redis::reply& rep, bool peek, store_decision& out,
                std::span<decision> per_check, std::vector<std::optional<std::string>>& stale,
                std::span<std::optional<tick>> grows = {});

  // ---- cas.cpp: the write of refunds, releases, overrides and carry-overs ----
  /// Leaf `j` of `p`, read as `was` and now `next`, into `k`: `kept` when
  /// unchanged and not `always` (read from an earlier configuration, or
  /// else to be written even unchanged); a fresh state deletes the key (when
  /// it held a value); else its value encoded at `at`, expiring as px_of
  /// says; `unholdable` (nothing set) when the library cannot hold `next`.
  redis::leaf_write write_leaf(const redis::plan& p, std::size_t j, const any_state& was, const any_state& next,
                               bool always, tick at, redis::cas_key& k) const;
  /// One compare-and-set (`function`: fns.cas or fns.refund, main.lua and
  /// refund.lua, or the module's command of each): its keys `head_keys` then every key of `keys`; its
  /// arguments `head_args`, then per key of `keys` its expected value, its
  /// write and its expiry, then (when `invalidated` is not empty) the
  /// invalidation of those keys for every deny cache. Written only if every
  /// key still holds its expected value.
  redis::cas_answer compare_and_set(const redis::library_function& function, std::span<const std::string> head_keys,
                                    std::span<const std::string> head_args, std::span<const redis::cas_key> keys,
                                    std::span<const std::string_view> invalidated = {});

  // ---- carry.cpp ----
  /// Decides `r` from the leaf values a status-3 reply (or a re-read)
  /// returned, with the core, carrying earlier configurations' states over,
  /// and writes the result with a compare-and-set.
  outcome decide_carried(const store_request& r, const entry* const* es,
                         const std::vector<std::optional<std::string>>& values, bool peek, store_decision& out,
                         std::span<decision> per_check, std::span<std::optional<tick>> grows = {}, bool report = false);
  /// The expiry (PX, ms) a compare-and-set gives leaf `leaf`'s new value
  /// `value`: the time until it decides as fresh (plan::ticks_to_fresh)
  /// rounded up, plus the grace; the fixed expiry when ticks have no known
  /// length; nullopt for a value that never turns fresh by itself (a quota).
  [[nodiscard]] std::optional<std::int64_t> px_of(const redis::plan& p, std::size_t leaf, std::string_view value) const;
  /// Decides a repeated request id from its record (status 2).
  outcome replay(const store_request& r, const entry* const* es, std::string_view record, bool peek,
                 store_decision& out, std::span<decision> per_check, std::span<std::optional<tick>> grows = {});
  /// Reads the leaves' values and decides with the core: the common part of
  /// judge, replay and decide_carried. `epoch_of[i]`: the configuration of
  /// check i that decided (empty: the current ones); `before` / `after`:
  /// per leaf in request order, the values read and written (`after` empty:
  /// none to check); `admitted`: the script's (nullopt: none to check).
  /// `read_states` / `new_states` get every leaf's state before and after;
  /// `stale[k]` is set for each leaf whose value was an earlier
  /// configuration's; `grows[i]` (when not empty) check i's grows_after,
  /// on its state after the decision.
  outcome decide_on(const store_request& r, const entry* const* es, tick now, std::span<const std::size_t> epoch_of,
                    std::span<const std::optional<std::string_view>> before,
                    std::span<const std::optional<std::string_view>> after, std::optional<bool> admitted, bool peek,
                    bool count_skew, store_decision& out, std::span<decision> per_check,
                    std::vector<any_state>* read_states = nullptr, std::vector<any_state>* new_states = nullptr,
                    std::span<bool> stale = {}, std::span<std::optional<tick>> grows = {}, bool report = false);

  // ---- report.cpp ----
  /// What a report is answered before any call (a bad request, a request
  /// of stateless checks, a breaker open), or nothing; fills `es`.
  std::optional<store_decision> report_before_call(store_request& r, const entry** es, std::span<decision> per_check);
  /// The outcome of a report call's reply (`stale`: the values to carry
  /// over, when a key holds an earlier configuration's).
  outcome judge_report(const store_request& r, const entry* const* es, const redis::reply& rep, store_decision& out,
                       std::span<decision> pc, std::vector<std::optional<std::string>>& stale);
  /// A status-3 reply's values (every key's, to carry over); false when
  /// one is neither nil nor a string.
  static bool stale_values(const std::vector<redis::reply>& arr, std::vector<std::optional<std::string>>& stale);
  /// A status-6 reply's `{6, v, stored}` as `follow` reads it: {v as
  /// text, the stored bytes}; false when malformed.
  static bool moved_of(const std::vector<redis::reply>& arr, std::vector<std::optional<std::string>>& moved);
  /// A `{status, before₁, after₁, ...}` reply's values, one pair per leaf
  /// of `r`'s checks; false when the reply has another length or a value
  /// that is neither nil nor a string.
  static bool leaf_values(const store_request& r, const entry* const* es, const std::vector<redis::reply>& arr,
                          std::vector<std::optional<std::string_view>>& before,
                          std::vector<std::optional<std::string_view>>& after);
  /// A report's answer for an outcome, counted (and its breaker told).
  store_decision report_concluded(const store_request& r, outcome o, store_decision out, std::span<decision> per_check);

  // ---- refund.cpp ----
  /// Refunds request id `id` (store.hpp, refund_at; semantics.md
  /// "Refunds"): its record read, its receipts rebuilt and its states
  /// refunded with the core, written by one compare-and-set that marks it.
  refund_answer refund_by_id(std::string_view id, tick now, std::span<decision> per_check,
                             std::span<std::int64_t> given);
  std::atomic<std::uint64_t> refunds{0}, refund_failures{0};

  // ---- release.cpp ----
  /// Releases the lease with `nonce` on `checks` (store.hpp, release_at):
  /// one `sluice_v2_release` call, checked against the core `release`; a
  /// key of an earlier configuration carried over and written by a
  /// compare-and-set.
  release_result release_lease(std::span<const check> checks, std::uint64_t nonce, tick now);
  std::atomic<std::uint64_t> releases{0};

  // ---- overrides.cpp ----
  /// Override entries by (policy id, stored bytes): an entry is a pure
  /// function of them, so the table never goes stale; kept while the store
  /// lives (decisions read them through plain pointers).
  std::mutex overrides_mu;
  std::unordered_map<std::string, std::unique_ptr<const entry>> override_entries;  // requires overrides_mu
  /// What this process last saw at a (policy, key)'s override key: the
  /// override's entry. Only a saving: a wrong belief costs one status 6.
  mutable std::mutex beliefs_mu;
  std::unordered_map<std::string, const entry*> beliefs;  // requires beliefs_mu
  std::atomic<std::size_t> belief_count{0};
  std::atomic<std::uint64_t> override_moves{0}, override_races{0}, override_fallbacks{0};
  /// Whether `key`'s calls name its override key: always on one server; in
  /// a cluster not for a key that is empty or starts with '}' (its state
  /// keys' hash tag is empty: the override key would lie in another slot).
  [[nodiscard]] bool overridable(std::string_view key) const noexcept {
    return cluster == nullptr || (!key.empty() && key.front() != '}');
  }
  /// The override entry of `policy` for the stored bytes `bytes`; an error
  /// naming "policy" when they do not hold a policy that can stand for the
  /// configured one.
  result<const entry*> override_entry(policy_id policy, std::string_view bytes);
  /// The entry a call on (`policy`, `key`) is built with: the believed
  /// override's, or `configured`.
  const entry* believed(policy_id policy, std::string_view key, const entry* configured) const;
  /// Records what a call saw at (`policy`, `key`)'s override key.
  void believe(policy_id policy, std::string_view key, const entry* e);
  /// After a status 6 (`moved`: {check index as text, stored bytes}):
  /// the moved check's entry in `es` is the stored override's (or the
  /// configured one), and the belief with it. False when the bytes do not
  /// hold a usable override (the request is then an error).
  bool follow(const store_request& r, const entry** es, const std::vector<std::optional<std::string>>& moved);
  /// Sets (`target`: an override's entry) or deletes (null) the override
  /// of (`policy`, `key`) at `now`, its state carried and written with it
  /// in one compare-and-set: 0 (delete: none), 1 created or deleted, 2
  /// replaced, 3 unchanged.
  result<int> change_override(policy_id policy, std::string_view key, const entry* target, tick now);
  /// The override key of (`e`'s policy, `key`).
  static std::string override_key(const entry& e, std::string_view key) {
    std::string k = e.override_head;
    k.append(key).append(1, '}');
    return k;
  }

  // ---- store.cpp ----
  /// The decision for an outcome, counted (a failure goes to the failure
  /// mode; `ok` inserts denials into the deny cache). `grows` holds what
  /// an `ok` wrote; any other outcome clears it (the local fallback writes
  /// its own).
  /// `seen`: the deny cache's generation read before the call (nullopt:
  /// nothing is cached).
  store_decision conclude(const store_request& r, const entry* const* es, outcome o, store_decision out, bool peek,
                          std::span<decision> per_check, std::span<std::optional<tick>> grows = {},
                          std::optional<std::uint64_t> seen = std::nullopt);
  store_decision failed(const store_request& r, const entry* const* es, bool peek, std::span<decision> per_check,
                        std::span<std::optional<tick>> grows = {});
  /// The answer when the store could not answer: the rules' known answer
  /// (source::rule, counted in by_rule) unless the mode is local or the
  /// answer depends on a state; else the failure mode's (counted in
  /// fallbacks).
  store_decision fall_back(const store_request& r, const entry* const* es, bool peek, std::span<decision> per_check,
                           std::span<std::optional<tick>> grows = {});
  /// Whether no check of `r` holds a state (every policy made of always-*).
  static bool stateless(const store_request& r, const entry* const* es) noexcept {
    for (std::size_t i = 0; i < r.checks.size(); ++i)
      if (!es[i]->p->leaves().empty()) return false;
    return true;
  }
  /// Decides a stateless request in process, exactly as the core on no
  /// state (semantics.md, "Answers that need no state"): no call.
  store_decision decide_stateless(const store_request& r, const entry* const* es, bool peek,
                                  std::span<decision> per_check, std::span<std::optional<tick>> grows = {});
  static store_decision error_decision(const store_request& r, std::span<decision> per_check);
  /// The answer without a call, if any: the deny cache's, or the failure
  /// mode's while the breaker is open.
  std::optional<store_decision> local_answer(const store_request& r, const entry* const* es, bool peek,
                                             std::span<decision> per_check, std::span<std::optional<tick>> grows = {});
  /// Adds one to `c` for a decision (peeks are not counted).
  static void count(std::atomic<std::uint64_t>& c, bool peek) {
    if (!peek) c.fetch_add(1, std::memory_order_relaxed);
  }
  /// Writes a line of the store's own (a warning, an eviction): through
  /// `on_health_change`, else on stderr.
  void say(std::string_view line) const;

  /// The servers' evictions, read every `eviction_poll` (eviction.hpp);
  /// declared after `cli`, so it stops before the client goes.
  std::unique_ptr<redis::eviction_watch> evictions;
};

}  // namespace sluice
