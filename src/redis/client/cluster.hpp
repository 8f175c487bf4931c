// A Redis Cluster client for the Redis store (private to sluice::redis): an
// asynchronous router (an `async_backend`, like sentinel.hpp's) over one
// pipelined `async_client` per node, because Debian has no C or C++ cluster
// client (research/redis-design.md §5). The store drives it through
// `sync_client` (its synchronous face) and, on the service's asynchronous
// path, directly: no call ever blocks a thread, so a hung node stalls no
// event loop, only the calls routed to it.
//
// - The slot map comes from `CLUSTER SLOTS`, asked of the nodes that serve
//   slots, then of the seeds, then of any other known node; a key's slot is
//   the CRC16 of its hash tag (slots.hpp). Every call's keys must share one
//   slot (the store makes sure of it).
// - Per-node pipelines: each node has one connection; calls to it made at
//   the same time are written together (async_client.hpp), and the calls of
//   one batch that go to one node are one pipeline.
// - `MOVED slot host:port`: that slot's owner is updated, a refresh of the
//   whole map is scheduled, and the call is sent again to the new owner.
//   `ASK slot host:port`: the call is sent to that node once, after
//   `ASKING`, on the same connection; the map is unchanged. At most
//   `max_redirects` per call.
// - `TRYAGAIN` (a slot's keys are split by a migration) and `CLUSTERDOWN`:
//   sent again after a short pause (a timer, no thread waits), until the
//   command timeout has passed since the call began; then the call fails.
// - A node that refuses the connection (or cannot be reached before the
//   connect timeout): nothing was sent, so the map is refreshed and the call
//   sent again after the pause, within the same bound.
// - A timeout or a broken connection after a call was written: the call may
//   have run (and charged). It fails, and is never sent again.
// - A batch is split per node; every node's pipeline is written before any
//   is read, so the primaries work in parallel.
// - Each node has its own circuit breaker (`breaker_failures` in a row):
//   while a node's is open, its calls are not sent and fail at once
//   (`call_error::breaker`), and the other nodes' go on; a refresh of the
//   slot map is scheduled (a failover may have moved its slots) and asks
//   the nodes whose breakers are closed first. After the cool-down one
//   pipeline to the node is the probe. A failure is a call that got no
//   reply, or an error reply other than a redirection, TRYAGAIN or the
//   library's own (`sluice: ...`, about a key, not the node); CLUSTERDOWN
//   counts as one.
// - Refreshes are rate-limited (`refresh_interval`), one at a time. A call
//   waits for one only when it cannot be routed without it: no map yet, or
//   it is to be sent again after a refused node, CLUSTERDOWN or a slot
//   without a known owner; otherwise the refresh runs beside the calls.
// - The FUNCTION library is set on every node's client, which loads it
//   whenever that node says it is missing (a node that joined later).
//
// Threads: every member may be called from any thread; the routing runs on
// a strand of the executor given to `create`, and each node's client on a
// strand of that strand.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redis/client/async_client.hpp"
#include "redis/client/client.hpp"
#include "redis/client/figures.hpp"
#include "redis/client/slots.hpp"
#include "redis/client/sync_client.hpp"
#include "sluice/core/result.hpp"
#include "sluice/keyed/registry.hpp"
#include "sluice/redis/store.hpp"
#include "sluice/remote/circuit_breaker.hpp"

namespace sluice::redis {

/// Whether `text` is a cluster URL (`redis+cluster://...`).
[[nodiscard]] bool is_cluster_url(std::string_view text) noexcept;

/// Parses `redis+cluster://[user[:password]@]host:port[,host:port...][/0][?query]`:
/// the seed nodes, each with the user and password and the query (`module`). Each seed is read as
/// `parse_url` reads a host and port (IPv6 in brackets; port 6379 when left
/// out). Errors name the part: "scheme", "seed" (none, an empty one, more
/// than 64), "host", "port", "user", "password", and "db" for a database
/// other than 0 (a cluster has only database 0).
result<std::vector<url>> parse_cluster_url(std::string_view text);

/// An error naming `field` when `text` holds '{' or '}': in a cluster, a
/// brace in the store's prefix or a policy name would change which part of
/// its keys Redis hashes, and split one request's keys over several slots.
[[nodiscard]] std::optional<error> cluster_name_error(std::string_view field, std::string_view text);

/// Gives `u` the password kept apart from the URL (store.password_file,
/// SLUICE_REDIS_PASSWORD), if any; an error naming "password" when the URL
/// has one too, or a user without one.
[[nodiscard]] std::optional<error> apply_password(url& u, const std::string& password);

/// The backend of a store's options, through the asynchronous client
/// (sync_client over an async backend on its own I/O thread): for a
/// `redis+cluster://` URL a `cluster_client` (refusing a `prefix` that holds
/// a brace) with a circuit breaker per node (`breaker_failures`,
/// `breaker_cool_down`); for `redis+sentinel://` a sentinel_client; else
/// an `async_client` (`redis://`, `rediss://`, `unix://`; the store keeps
/// its one breaker). Nothing is connected yet. Errors name the URL's part.
result<std::unique_ptr<sync_client>> open_backend(const store_options& options);

/// The `?module=` of a store URL of any kind (module.hpp); `auto` for one
/// that does not parse (open_backend names its error).
[[nodiscard]] module_use module_use_in(std::string_view text);

/// How a `cluster_client` finds the cluster and how long it waits.
struct cluster_options {
  /// Where the slot map is asked for first; their user and password log in
  /// to every node.
  std::vector<url> seeds;
  /// Per node, as in async_client_options.
  std::chrono::milliseconds connect_timeout{200};
  std::chrono::milliseconds command_timeout{100};
  bool keepalive = true;
  /// The least time between two reads of the slot map.
  std::chrono::milliseconds refresh_interval{100};
  /// The most MOVED and ASK redirections one call follows.
  int max_redirects = 5;
  /// The first pause before sending again after TRYAGAIN, CLUSTERDOWN or a
  /// refused node; doubled each time up to 50 ms, and never past the call's
  /// command timeout.
  std::chrono::milliseconds retry_pause{2};
  /// Each node's circuit breaker: open after this many failed calls in a
  /// row, for `breaker_cool_down`, then one probe pipeline at a time. 0: no
  /// breakers.
  std::uint32_t breaker_failures = 0;
  std::chrono::milliseconds breaker_cool_down{1000};
  /// Called when a node's breaker opens (`healthy` false; `why`: the reason
  /// of the failure that opened it) or closes again (true), once per
  /// change; may be empty.
  std::function<void(const std::string& node, bool healthy, std::optional<failure_reason> why)> on_breaker_change;
};

/// Counters of what the router did (monotone, relaxed reads).
struct cluster_stats {
  std::uint64_t moved = 0;             ///< MOVED replies followed
  std::uint64_t asked = 0;             ///< ASK replies followed
  std::uint64_t tryagain = 0;          ///< TRYAGAIN replies (sent again after a pause)
  std::uint64_t clusterdown = 0;       ///< CLUSTERDOWN replies (sent again after a pause)
  std::uint64_t refused = 0;           ///< calls not sent because a node refused (sent again)
  std::uint64_t refreshes = 0;         ///< slot maps read (CLUSTER SLOTS)
  std::uint64_t refresh_failures = 0;  ///< refreshes that no node answered
  std::uint64_t nodes = 0;             ///< nodes known (each with its own connections)
  std::uint64_t breaker_trips = 0;     ///< times a node's circuit breaker opened (summed over nodes)
  std::uint64_t breaker_rejected = 0;  ///< calls not sent because their node's breaker was open
  std::uint64_t breakers_open = 0;     ///< nodes whose breaker is open or half-open now
};

/// The router: an `async_backend` over every primary of a Redis Cluster.
class cluster_client final : public async_backend, public std::enable_shared_from_this<cluster_client> {
 public:
  /// Makes the router on a strand of `ex`. Connects lazily: the first call
  /// reads the slot map. Errors: no seed.
  static result<std::shared_ptr<cluster_client>> create(boost::asio::any_io_executor ex, cluster_options options);
  ~cluster_client() override;
  cluster_client(const cluster_client&) = delete;
  cluster_client& operator=(const cluster_client&) = delete;

  /// Sets the library on every node's client, now and for nodes met later.
  result<bool> set_library(std::string name, std::string code) override;

  /// One command without key routing: sent to the primary of the lowest
  /// slot with a known owner (the store sends none; `async_count_keys` asks
  /// every primary).
  void async_call(std::span<const std::string_view> argv, call_handler done) override;

  /// Runs the calls, each on the primary of its keys' slot (the slot of its
  /// first key; a call without keys goes to any primary): one pipeline per
  /// node, all written before any is read. Calls sent again (redirections,
  /// TRYAGAIN) keep their order among themselves.
  void async_fcall_each(std::span<const function_call> calls, each_handler done) override;

  /// The sum of DBSIZE over the primaries of the slot map; nullopt when one
  /// of them does not answer, when one's circuit breaker is open (then
  /// nothing is sent), or when no map could be read.
  void async_count_keys(count_handler done) override;
  /// SCAN on every primary of the slot map, the keys found merged; nullopt
  /// as async_count_keys.
  void async_scan(std::string match, std::size_t most, keys_handler done) override;
  /// The command on every primary of the slot map; nothing sent (an empty
  /// answer) as async_count_keys.
  void async_call_every_primary(std::span<const std::string_view> argv, each_handler done) override;

  /// Fails every pending call (`io`), closes every node's connection and
  /// refuses new calls.
  void close() override;
  /// Every known node's (its connection checks its own server).
  [[nodiscard]] std::vector<module_path_view> module_paths() const override;

  /// Reads the slot map now (rate limit aside); `done(false)` when no node
  /// answered.
  void async_refresh(std::function<void(bool)> done);

  /// "host:port" of the primary that serves `slot` in the current map; empty
  /// when no node is known to.
  [[nodiscard]] std::string owner_of(std::uint16_t slot) const;

  /// What the router has done so far.
  [[nodiscard]] cluster_stats stats() const noexcept;

  /// Sets `cluster_options::on_breaker_change`; before the first call only.
  void set_on_breaker_change(
      std::function<void(const std::string& node, bool healthy, std::optional<failure_reason> why)> f);

  /// Every known node's address and the state of its breaker (none: no
  /// breakers).
  [[nodiscard]] std::vector<std::pair<std::string, remote::circuit_breaker::state>> breaker_states() const;

  struct impl;

 private:
  cluster_client(boost::asio::any_io_executor ex, cluster_options options);
  std::unique_ptr<impl> impl_;
};

}  // namespace sluice::redis
