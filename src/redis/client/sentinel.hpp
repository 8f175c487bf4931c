// Redis behind Sentinel (redis+sentinel://): the master named in the URL is
// asked of the sentinels (`SENTINEL get-master-addr-by-name`), checked
// (`ROLE` must say master) and connected to with the asynchronous client;
// a failover is followed. Private to sluice::redis.
//
// - Discovery asks the sentinels in the URL's order (the one that answered
//   last first); a sentinel that does not know the master, or names a node
//   whose ROLE is not master, is passed over. Calls made meanwhile wait for
//   the discovery; one that waited past its command timeout fails as a
//   timeout, never sent.
// - Following a failover: a subscription to `+switch-master` on a sentinel
//   (kept alive by a PING a second; re-made on another sentinel when it
//   breaks) starts a discovery at once; so do a `READONLY` or `LOADING`
//   reply, and a call refused or broken (`refused`, `io`). Calls answered
//   READONLY/LOADING, or refused before being sent, did not run: they are
//   sent once more to the master found next. Other failures are reported.
// - The old master's connection is closed once its calls have had their
//   time (connect + command timeout).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redis/client/async_client.hpp"
#include "redis/client/sync_client.hpp"
#include "sluice/core/result.hpp"
#include "sluice/keyed/registry.hpp"
#include "sluice/redis/store.hpp"

namespace sluice::redis {

/// The parts of a redis+sentinel:// URL.
struct sentinel_url {
  /// The sentinels (host and port; TLS settings when rediss+sentinel://).
  std::vector<url> sentinels;
  /// The master's name as the sentinels know it.
  std::string master;
  /// How to log in to the master: user, password, db, TLS (host and port
  /// come from the sentinels).
  url login;
};

/// Whether `text` is a Sentinel URL (`redis+sentinel://` or `rediss+sentinel://`).
[[nodiscard]] bool is_sentinel_url(std::string_view text) noexcept;

/// Parses `redis+sentinel://[user:password@]host:port[,host:port...]/MASTER[/db][?tls settings]`
/// (`rediss+sentinel://`: TLS to the sentinels and the master, with the
/// query of tls_settings). The user and password log in to the master; the
/// sentinels are asked without AUTH. Errors name the part: "scheme",
/// "sentinel", "host", "port", "user", "password", "master", "db", "query".
result<sentinel_url> parse_sentinel_url(std::string_view text);

/// How a sentinel_client finds and talks to the master.
struct sentinel_options {
  sentinel_url where;
  std::chrono::milliseconds connect_timeout{200};
  std::chrono::milliseconds command_timeout{100};
  /// The PING on the subscription, and the least time between discoveries
  /// started by errors.
  std::chrono::milliseconds ping_interval{1000};
  std::chrono::milliseconds rediscover_interval{50};
};

/// Counters of a sentinel_client (monotone, relaxed reads).
struct sentinel_stats {
  std::uint64_t discoveries = 0;         ///< discoveries started
  std::uint64_t discovery_failures = 0;  ///< discoveries that found no master
  std::uint64_t switches = 0;            ///< times the master's address changed
  std::uint64_t switch_messages = 0;     ///< +switch-master messages received for this master
  std::uint64_t resent = 0;              ///< calls sent again after READONLY/LOADING/refused
};

/// The master of a Sentinel deployment as one async_backend.
class sentinel_client final : public async_backend, public std::enable_shared_from_this<sentinel_client> {
 public:
  static result<std::shared_ptr<sentinel_client>> create(boost::asio::any_io_executor ex, sentinel_options options);
  ~sentinel_client() override;

  result<bool> set_library(std::string name, std::string code) override;
  void async_call(std::span<const std::string_view> argv, call_handler done) override;
  void async_fcall_each(std::span<const function_call> calls, each_handler done) override;
  void close() override;

  /// "host:port" of the master in use; empty before the first discovery.
  [[nodiscard]] std::string master_address() const;
  /// The primary in use's (none before the first discovery).
  [[nodiscard]] std::vector<module_path_view> module_paths() const override;
  [[nodiscard]] sentinel_stats stats() const noexcept;

  struct impl;

 private:
  sentinel_client(boost::asio::any_io_executor ex, sentinel_options options);
  std::unique_ptr<impl> impl_;
};

/// The store's backend for a redis+sentinel:// URL.
result<std::unique_ptr<sync_client>> open_sentinel_backend(const store_options& options);

}  // namespace sluice::redis
