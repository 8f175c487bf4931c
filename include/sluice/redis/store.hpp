// The Redis store: every key's state in one Redis 7 server (or a Redis
// Cluster: `redis+cluster://` seeds), shared by every process that points
// at it, decided exactly as the core `decide` decides in process
// (semantics.md, "Remote stores"; docs/redis.md).
//
// Each decision is one atomic FCALL of the store's Lua FUNCTION library
// (`sluice_v2_<hash of its code>`, loaded by the store whenever the server
// lacks it): the script decides admit and writes the new states (a denial
// writes nothing); the C++ side sends every configuration-dependent product
// and quotient already computed in 128-bit integers, so the script only adds
// and compares integers below 2^53, and derives every figure (remaining,
// retry_after, reset_after, release_after) from the states the script
// returns, with the core's own code. It checks that the script's admit and
// every state it wrote are the core's; a mismatch is an error, never an
// admit. Configurations whose quantities the Lua arithmetic cannot hold
// exactly are refused by `define`, with the field and the bound.
//
// Redefining a name carries its states over (store.hpp): each stored value
// names the configuration that wrote it, and a decision that meets a value
// of an earlier configuration of the name carries that state over with
// `reconfigure` at the redefinition's instant, decides on it with the core,
// and writes the result only if the key still holds what it read
// (docs/redis.md, "Redefining a policy").
//
// When Redis cannot answer (down, slow, full, refusing), the configured
// failure mode decides and the decision says so; a key that holds a value
// the store did not write is `source::error` (denied, counted).
//
// Thread safety: every member may be called from any number of threads.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/store.hpp"
#include "sluice/core/time.hpp"
#include "sluice/keyed/registry.hpp"
#include "sluice/remote/event_loops.hpp"

namespace sluice {

/// Counts of the Redis store beyond `store_stats`.
struct redis_store_stats {
  store_stats base;
  std::uint64_t mismatches = 0;  ///< script and core disagreed (an error, counted in base.errors too)
  std::uint64_t corrupt = 0;     ///< keys holding a value the store did not write
  /// Requests answered by the failure mode, without a call, while the
  /// breaker (in a cluster: their node's) was open.
  std::uint64_t breaker_open = 0;
  std::uint64_t breaker_trips = 0;  ///< times the breaker opened (a cluster: summed over its nodes)
  /// Requests that met a value of an earlier configuration of their policy
  /// and carried it over (decided by the client, written with a
  /// compare-and-set).
  std::uint64_t carried = 0;
  /// Compare-and-sets of carried-over states that found the key changed
  /// meanwhile (the request was then read and decided again).
  std::uint64_t carry_conflicts = 0;
  /// Requests that met a value of a configuration this store does not know
  /// (another process defined the name otherwise, e.g. a newer
  /// configuration mid-rollout): errors, never admits (counted in
  /// base.errors too).
  std::uint64_t unknown_config = 0;
  /// Cluster: requests whose keys lie in several hash slots, answered
  /// `source::error` without deciding any check (counted in base.errors too).
  std::uint64_t cross_slot = 0;
  /// Calls answered "built for another override" (status 6: the key's
  /// override changed, or this process did not know it), built again.
  std::uint64_t override_moves = 0;
  /// Requests and override changes that met a changing override on every
  /// attempt: errors (source::error, or the error "store"), never admits.
  std::uint64_t override_races = 0;
  /// Leaf states an override change carried outside the library's exact
  /// ranges, written as the conservative fallback instead (docs/redis.md,
  /// "Overrides").
  std::uint64_t override_fallbacks = 0;
  std::uint64_t moved = 0;               ///< cluster: MOVED redirections followed
  std::uint64_t asked = 0;               ///< cluster: ASK redirections followed
  std::uint64_t cluster_retries = 0;     ///< cluster: calls sent again after TRYAGAIN, CLUSTERDOWN or a refused node
  std::uint64_t topology_refreshes = 0;  ///< cluster: slot maps read (CLUSTER SLOTS)
  std::uint64_t breakers_open = 0;       ///< cluster: nodes whose circuit breaker is open (or half-open) now
  /// The deny cache's subscription to the invalidation channel
  /// (docs/redis.md, "The deny cache"); all 0 without the cache.
  bool deny_cache_subscribed = false;          ///< confirmed now: the cache may answer
  std::uint64_t deny_cache_invalidations = 0;  ///< messages heard
  std::uint64_t deny_cache_subscriptions = 0;  ///< subscriptions confirmed
  std::uint64_t deny_cache_bypassed = 0;       ///< requests it could not answer: not subscribed, or a message unread
  /// Redis's clock minus this process's realtime clock, in ns, as last
  /// measured (a TIME read, about once a second while the store decides,
  /// corrected by half its round trip); none before the first.
  std::optional<std::int64_t> clock_offset_ns;

  /// The bounds of the call-latency histogram, in nanoseconds (integers:
  /// no floating point decides a bucket).
  static constexpr std::array<std::int64_t, 14> call_latency_bounds{
      50'000,     100'000,    250'000,    500'000,     1'000'000,   2'500'000,     5'000'000,
      10'000'000, 25'000'000, 50'000'000, 100'000'000, 250'000'000, 1'000'000'000, 5'000'000'000};
  /// Round trips to Redis the store waited for (one FCALL, or one
  /// pipeline), by duration: `[i]` counts those of at most
  /// `call_latency_bounds[i]` ns and above the bound before (not
  /// cumulative); the last, those above every bound.
  std::array<std::uint64_t, call_latency_bounds.size() + 1> call_latency_buckets{};
  std::uint64_t call_latency_sum_ns = 0;  ///< their total duration
  /// The names of the reasons a call fails, in the order of `call_failures`.
  static constexpr std::array<std::string_view, 16> failure_reasons{
      "timeout",        "refused",  "io",       "auth",      "oom",           "noperm",  "cluster-down",
      "busy",           "server",   "protocol", "untrusted", "name-mismatch", "expired", "no-client-certificate",
      "plaintext-peer", "handshake"};
  /// Calls that failed, by reason (docs/redis.md, "What an operator sees"):
  /// each request's call counts once. A call the breaker kept back, and the
  /// library's verdict on a key's value (corrupt state), are not failures.
  std::array<std::uint64_t, failure_reasons.size()> call_failures{};
  /// Keys the servers evicted since the store opened (`INFO stats`
  /// `evicted_keys`, summed over a cluster's primaries; a server's restart
  /// starts its count again), read every `eviction_poll`.
  std::uint64_t evicted_keys = 0;
  /// The latest failed call: its reason's name, ": ", its message (a TLS
  /// failure names its cause and OpenSSL's reason; never a password); ""
  /// when none failed.
  std::string last_failure;
  /// One circuit breaker: the node it guards ("host:port", or the socket
  /// path; never a password) and its state ("closed", "open", "half-open").
  struct breaker_view {
    std::string node;
    std::string_view state;
  };
  /// Every breaker: one on one server, one per node known in a cluster;
  /// none when `breaker_failures` is 0.
  std::vector<breaker_view> breakers;
  /// Calls sent as the Redis module's commands, and as the Lua library's
  /// FCALLs (docs/redis.md, "The store and the module"), summed over every
  /// connection and node.
  std::uint64_t module_calls = 0;
  std::uint64_t library_calls = 0;
  /// Which path one server's decisions take: the node ("host:port", or the
  /// socket path) and "module (letters g)", "library (no module)",
  /// "library (the ACL refuses SLUICE.ONE)", "library (module=off)" or
  /// "unknown" (not connected yet).
  struct module_path {
    std::string node;
    std::string path;
  };
  /// One per server: the one server, a Sentinel deployment's primary in
  /// use, every node known in a cluster.
  std::vector<module_path> module_paths;
};

/// The Redis implementation of `store`; it can do its asynchronous calls on
/// the caller's event loops (remote::loop_store).
class redis_store final : public store,
                          public store_refunds,
                          public store_leases,
                          public store_overrides,
                          public store_introspection,
                          public remote::loop_store {
 public:
  /// Opens the store `options.url` names — `redis://[user:password@]host[:port][/db]`,
  /// `unix:///path[?db=N]`, over TLS `rediss://...[?ca_file=...&cert_file=...&key_file=...&server_name=...&verify=no]`,
  /// a Redis Cluster's seeds `redis+cluster://[user:password@]host:port[,host:port...]`
  /// (docs/redis.md, "Redis Cluster"), behind Sentinel
  /// `redis+sentinel://[user:password@]host:port[,host:port...]/MASTER[/db]`
  /// (`rediss+sentinel://` over TLS; docs/redis-client.md) — with the
  /// options every store shares (store/registry.hpp). What only Redis has
  /// rides in the URL's query (TLS, `wait_replicas`, `eviction_poll`;
  /// docs/redis.md, "URLs, passwords"). What `register_redis_stores`
  /// opens: a program that opens by URL, through a registry or here, gets
  /// one store.
  ///
  /// Connects lazily (the first call connects): a server that is down now is
  /// a store failure then, not an error here. With the deny cache, it waits
  /// for the cache's subscription (at most connect_timeout +
  /// command_timeout; not behind Sentinel, whose master is found by the
  /// first call): until it is confirmed the cache answers nothing. A
  /// server whose `maxmemory-policy` may evict keys is refused ("eviction")
  /// unless `warn_on_eviction_policy` (docs/redis.md, "Eviction"). The
  /// error names the URL's part or query parameter ("host", "port", "db",
  /// "eviction_poll", ...) or the option ("tick_ns", "prefix" (key_prefix) in a
  /// cluster, "grace", "skew_tolerance", "max_clock_offset").
  static result<std::unique_ptr<redis_store>> open(const store_options& options);

  ~redis_store() override;
  redis_store(const redis_store&) = delete;
  redis_store& operator=(const redis_store&) = delete;

  /// Registers `policy` under `name` (new: a new id), or redefines it (the
  /// same id) at `now()`, as `define_at`. States live under the key
  /// `<prefix>s:<name>:{<key>}` (composite parts add `:i.j`). In a cluster,
  /// a `name` holding '{' or '}' is refused ("name"), and a request's keys
  /// must share a hash slot (docs/redis.md, "Redis Cluster").
  result<policy_id> define(std::string_view name, const any_policy& policy) override;

  /// `define` with the instant of the redefinition, in the store's ticks:
  /// every state the name holds is carried over at `now` as the memory
  /// store's `define_at` carries it (reconfigure.hpp), when a decision
  /// first meets it; the deny cache forgets the policy. Defining the same
  /// policy again changes nothing. Errors name the field and the bound when
  /// the Lua arithmetic cannot hold a quantity exactly (docs/redis.md,
  /// "Exact ranges"), "name" for an empty name, "policies" past 65,536
  /// names, and, as the memory store, "algorithm" when the new policy is
  /// another algorithm and "parts" for composites whose parts differ in
  /// number or kind. Every earlier configuration of a name is kept while
  /// the store lives (values written for it may still be met).
  result<policy_id> define_at(std::string_view name, const any_policy& policy, tick now);

  store_decision decide_at(const store_request& r, std::span<decision> per_check = {},
                           std::span<std::optional<tick>> grows_after = {});
  void decide_many_at(std::span<const store_request> requests, std::span<store_decision> out) override;
  store_decision peek_at(const store_request& r, std::span<decision> per_check = {});
  /// Without waiting, on the asynchronous client (every URL; a cluster:
  /// its node's connection): the call is pipelined with every other
  /// caller's and `done` runs on the client's I/O thread when its reply
  /// comes or its deadline passes — on an attached event loop, that loop's
  /// own connection and thread (attach_loops); a decision that needs more
  /// calls (a carry-over) is made on a thread of
  /// the store's.
  void decide_async(const store_request& r, std::span<decision> per_check, std::span<std::optional<tick>> grows_after,
                    decided done);
  void peek_async(const store_request& r, decided done);
  /// A report's call waits on nothing (see decide_async).
  void report_async(const store_request& r, std::span<decision> per_check, decided done);
  /// decide_at, peek_at or report_at (store.hpp).
  store_decision run_at(store_op op, const store_request& r, std::span<decision> per_check,
                        std::span<std::optional<tick>> grows_after) override;
  /// decide_async, peek_async or report_async (store.hpp). An asynchronous
  /// peek writes no per-check figures: one given `per_check` is the
  /// synchronous peek's, which waits.
  void run_async(store_op op, const store_request& r, std::span<decision> per_check,
                 std::span<std::optional<tick>> grows_after, decided done) override;
  /// Every capability: refunds, leases, overrides and introspection.
  [[nodiscard]] store_capabilities capabilities() const noexcept override;
  /// DBSIZE without waiting, as decide_async.
  void count_keys_async(std::function<void(std::optional<std::uint64_t>)> done) override;
  /// Each loop gets its own connection (or, on Sentinel, its own view of
  /// the deployment), its calls pipelined there, under the store's one
  /// breaker, deny cache and figures (remote/event_loops.hpp). Refused in
  /// a cluster, whose router (its topology, its breaker per node) is one
  /// per store: a cluster keeps the store's own I/O thread.
  result<bool> attach_loops(std::span<boost::asio::io_context* const> loops) override;
  void detach_loop(boost::asio::io_context& loop) override;
  /// Reads Redis's clock now (TIME, one round trip) and answers its offset
  /// to this process's realtime clock in ns (positive: this process is
  /// behind), as `redis_stats().clock_offset_ns` then reports; nullopt
  /// when Redis does not answer. The store also measures it by itself,
  /// about once a second while it decides (on a thread of its own).
  std::optional<std::int64_t> measure_clock_offset();
  /// Reports `r` (store.hpp): every check charged in one atomic FCALL (in
  /// a cluster too: the checks share a slot). When Redis cannot take it
  /// (down, timeout, breaker open), nothing is charged and the answer is
  /// `source::error`, counted as a store failure: no failure mode admits it
  /// or charges the local fallback.
  store_decision report_at(const store_request& r, std::span<decision> per_check = {});
  /// Refunds request id `id` (store.hpp; semantics.md "Refunds";
  /// docs/redis.md "Refunds"): exactly once across a fleet. In a Redis
  /// Cluster `id` is a refund id (`refund_id`), which names its record's
  /// slot; an id that is not one answers `refund_status::error` there.
  refund_answer refund_at(std::string_view id, tick now, std::span<decision> per_check = {},
                          std::span<std::int64_t> given = {}) override;
  /// The id `refund_at` takes for `r`'s decision: `r.id` on one server and
  /// behind Sentinel; in a Cluster `{<tag>}<id>`, the tag its id record's
  /// key holds (docs/redis.md, "Refunds"). Empty when `r` has no id.
  [[nodiscard]] std::string refund_id(const store_request& r) const override;
  /// Releases the lease with `nonce` on `checks` (store.hpp; semantics.md
  /// "Leases in a Redis store"): one atomic FCALL over every leaf key of
  /// the checks (in a cluster they share a slot, as a decision's). When
  /// Redis cannot take it (down, timeout, breaker open), nothing is
  /// released and the answer is `source::error`, counted as a failure.
  release_result release_at(std::span<const check> checks, std::uint64_t nonce, tick now) override;

  /// Overrides (store.hpp; docs/redis.md, "Overrides"): kept in Redis at
  /// `<prefix>o:<name>:{<key>}`, so every process on the server applies
  /// one at its very next decision. Set and delete carry the key's state
  /// with `reconfigure` in one compare-and-set with the override key.
  /// Errors as the memory store's, and "key" in a cluster for a key that
  /// is empty or starts with '}'; "policy" for a policy that keeps no
  /// state; "store" when Redis did not answer (nothing changed), or when
  /// the key changed under every attempt. At most 10,000 overrides over
  /// the store (counted with SCAN; two processes racing at the bound may
  /// each pass it by one).
  result<override_change> set_override_at(policy_id policy, std::string_view key, const any_policy& limit,
                                          tick now) override;
  result<bool> delete_override_at(policy_id policy, std::string_view key, tick now) override;
  result<std::optional<any_policy>> override_of(policy_id policy, std::string_view key) override;
  /// Pages in byte order of the keys, as the memory store's; each page
  /// scans the policy's override keys (SCAN MATCH; in a cluster on every
  /// primary).
  result<override_page> list_overrides(policy_id policy, std::string_view after, std::size_t limit) override;
  /// What this process's latest call on the key found stored (no call).
  std::optional<any_policy> override_seen(policy_id policy, std::string_view key) override;
  /// None without a call (store_overrides' default).
  using store::override_count;

  /// The realtime clock, nanoseconds since 1970 (machines of a fleet share
  /// it). At the store's clock (`clock = store_clock::store`) decisions
  /// use Redis's clock instead, and report it in `store_decision::at`.
  [[nodiscard]] tick now() const noexcept override;

  [[nodiscard]] store_stats stats() const override;
  /// The key count of the store's Redis database (DBSIZE, one call within
  /// the command timeout): its states and request ids, and any other
  /// client's keys in that database (give the store a database of its own
  /// for it to count only its keys); nullopt when the call fails.
  [[nodiscard]] std::optional<std::uint64_t> count_keys() override;
  /// Every count, the Redis store's own included.
  [[nodiscard]] redis_store_stats redis_stats() const;
  /// Its call latency, failures by reason and breakers (from redis_stats();
  /// no call to Redis).
  [[nodiscard]] std::optional<store_figures> figures() const override;

  /// The Lua library's source, as loaded into Redis (FUNCTION LOAD).
  static std::string_view library_code() noexcept;
  /// The library's name: its protocol version and a hash of its code
  /// ("sluice_v2_1a2b3c4d"), so that builds with different code never share
  /// a library in one Redis.
  static std::string_view library_name() noexcept;

  /// The implementation (src/redis/store/store.cpp); not part of the API.
  struct impl;

 private:
  explicit redis_store(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

class store_registry;

/// Registers the Redis store's schemes in `stores` (store/registry.hpp):
/// redis://, rediss://, unix://, redis+cluster://, redis+sentinel:// and
/// rediss+sentinel://, each opened as `redis_store::open(const
/// store_options&)`. Call it once per registry, before the registry opens
/// anything.
void register_redis_stores(store_registry& stores);

}  // namespace sluice
