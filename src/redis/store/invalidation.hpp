// The deny cache's invalidation channel (docs/redis.md, "The deny cache"):
// a change that makes keys more permissive (an override set or deleted, a
// refund) publishes their bytes on `<prefix>invalidate` in the same FCALL
// that writes it; every store with a deny cache hears the channel on a
// connection of its own and drops the cached denials of those keys. The
// cache answers only while the subscription is confirmed: it is emptied
// when the subscription is made and when it is lost, and bypassed between.
// Private to sluice::redis.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "redis/client/async_client.hpp"
#include "redis/client/client.hpp"
#include "sluice/core/result.hpp"
#include "sluice/keyed/registry.hpp"
#include "sluice/redis/store.hpp"
#include "sluice/remote/deny_cache.hpp"

namespace sluice::redis {

/// The channel of a store whose keys start with `prefix`.
[[nodiscard]] std::string invalidation_channel(std::string_view prefix);

/// Appends `key` to a message: `<length>:<bytes>` (keys are any bytes).
void append_invalidated_key(std::string& message, std::string_view key);

/// Calls `each` for every key of `message`; false (after the keys read so
/// far) when the message is not a list of `<length>:<bytes>`.
bool for_each_invalidated_key(std::string_view message, const std::function<void(std::string_view)>& each);

/// Where a store's listener subscribes (invalidation_listener's `locate`),
/// and whether it follows a node that moves: the one server of `redis://`,
/// `rediss://` and `unix://`; a Cluster's seeds in turn (a `PUBLISH`
/// reaches every node of a Cluster); behind Sentinel the master that
/// `backend` (the store's sentinel_client) found, followed. Errors name
/// the URL's part.
struct subscription_nodes {
  std::function<std::optional<url>(std::size_t attempt)> where;
  bool follow = false;
};
result<subscription_nodes> subscription_nodes_of(const store_options& options, async_backend& backend);

/// What the listener did (relaxed reads).
struct listener_figures {
  bool subscribed = false;          ///< the cache may answer now
  std::uint64_t invalidations = 0;  ///< messages heard
  std::uint64_t subscriptions = 0;  ///< subscriptions confirmed
};

/// Holds the subscription of one store's deny cache, on an I/O thread of
/// its own (so that a message is read as it comes, whatever the store's
/// loops are doing). Thread safety: `subscribed` and `figures` from any
/// thread.
class invalidation_listener {
 public:
  /// The node to subscribe to at attempt `n` (0, 1, ...): the one server,
  /// a Cluster's seeds in turn, Sentinel's current master; nullopt while
  /// none is known (tried again after a pause).
  using locate = std::function<std::optional<url>(std::size_t attempt)>;

  /// Starts subscribing at once. `base`: the timeouts (and TLS context)
  /// of the listener's connections; its `where` is set from `where`.
  /// `follow`: a node found by `where` that differs from the subscribed one
  /// ends the subscription (Sentinel: the master moved).
  invalidation_listener(std::string channel, locate where, bool follow, async_client_options base,
                        remote::deny_cache& cache);
  /// Stops the thread; the cache is left bypassed.
  ~invalidation_listener();
  invalidation_listener(const invalidation_listener&) = delete;
  invalidation_listener& operator=(const invalidation_listener&) = delete;

  /// Whether the subscription is confirmed: the cache may answer and take
  /// denials.
  [[nodiscard]] bool subscribed() const noexcept { return up_.load(std::memory_order_acquire); }
  /// Subscribed, no byte waits in the subscription's socket, and the
  /// listener is not between reading bytes and handling them: a cached
  /// denial looked up AFTER this returns true answers with no message that
  /// reached this machine before the call still to be applied (the
  /// argument: invalidation.cpp). One ioctl. False over TLS (its engine
  /// reads ahead of what it hands on, so no read can be gated).
  [[nodiscard]] bool caught_up() const noexcept;
  [[nodiscard]] listener_figures figures() const noexcept;
  /// Waits until subscribed, at most `most`; whether it is.
  bool wait_subscribed(std::chrono::milliseconds most);

  /// How often the subscription is checked (a PING; Sentinel: the master's
  /// address).
  static constexpr std::chrono::milliseconds tick{250};

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
  std::atomic<bool> up_{false};
  std::atomic<int> fd_{-1};  // the subscription's socket while up_ (plaintext only); -1 before up_ is cleared
  // True from before the listener reads the subscription's socket until it
  // has handled every reply read (async_client_options::reading).
  std::atomic<bool> reading_{false};
};

}  // namespace sluice::redis
