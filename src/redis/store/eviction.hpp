// Eviction never silent (docs/redis.md, "Eviction"): the servers'
// `maxmemory-policy`, checked when the store opens, and their evictions,
// read on a thread of their own and counted. Private to sluice::redis.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "redis/client/client.hpp"

namespace sluice::redis {

class sync_client;

/// What one server's `INFO memory stats` says about eviction.
struct eviction_info {
  std::string policy;         ///< maxmemory_policy
  std::uint64_t evicted = 0;  ///< evicted_keys since the server started
};

/// The two fields of an INFO reply ("name:value" lines); nullopt when
/// either is missing or malformed.
[[nodiscard]] std::optional<eviction_info> read_eviction_info(std::string_view info);

/// Whether a `maxmemory-policy` may evict a key that has a TTL:
/// `volatile-*` and `allkeys-*` may; `noeviction` may not.
[[nodiscard]] bool policy_evicts(std::string_view policy) noexcept;

/// What the store says of a server whose policy evicts, or whose policy
/// cannot be read: the line, naming the policy (or the reason) and the fix.
[[nodiscard]] std::string evicting_policy_text(std::string_view policy);
[[nodiscard]] std::string unread_policy_text(std::string_view why);

/// The outcome of reading every server's INFO once.
struct eviction_reading {
  std::vector<eviction_info> servers;    ///< those that answered
  std::optional<std::string> forbidden;  ///< a server refused INFO (NOPERM): its error
  bool complete = false;                 ///< every server answered
};

/// `INFO memory stats` on every server (a cluster: every primary).
[[nodiscard]] eviction_reading read_eviction(sync_client& cli);

/// Reads the evictions every `period` on a thread of its own, from
/// `first` (the reading the store opened with, if it was complete; else
/// from its own first): each increase of the servers' summed `evicted_keys`
/// is counted and written as one line to `say`, and so is a policy that
/// evicts, once each time it changes. Thread safety: `evicted()` from any
/// thread.
class eviction_watch {
 public:
  eviction_watch(sync_client& cli, std::chrono::milliseconds period, std::function<void(std::string_view)> say,
                 const eviction_reading& first);
  ~eviction_watch();
  eviction_watch(const eviction_watch&) = delete;
  eviction_watch& operator=(const eviction_watch&) = delete;

  /// Keys evicted since the first reading.
  [[nodiscard]] std::uint64_t evicted() const noexcept { return evicted_.load(std::memory_order_relaxed); }

 private:
  void poll();
  void take(const eviction_reading& r);

  sync_client& cli_;
  std::chrono::milliseconds period_;
  std::function<void(std::string_view)> say_;
  std::atomic<std::uint64_t> evicted_{0};
  std::optional<std::uint64_t> last_total_;  // the thread's only
  std::string last_policy_;                  // the thread's only
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // requires mu_
  std::thread thread_;
};

}  // namespace sluice::redis
