// What an operator reads of the Redis store's calls (redis_store_stats):
// how long each round trip took, in integer-nanosecond buckets, and why the
// calls that failed did, by reason. Private to sluice::redis.
//
// Thread safety: every member may be called from any thread (relaxed
// atomics; a reading is a consistent count of each figure, not a snapshot
// of all of them at one instant).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "redis/client.hpp"
#include "sluice/redis.hpp"

namespace sluice::redis {

/// Why a call failed: an index into redis_store_stats::failure_reasons.
enum class failure_reason : std::uint8_t {
  timeout,       ///< no answer within the command (or connect) timeout
  refused,       ///< could not connect
  io,            ///< the connection broke
  auth,          ///< WRONGPASS, NOAUTH: the login was refused
  oom,           ///< OOM: Redis at maxmemory refused the write
  noperm,        ///< NOPERM: the ACL user may not run the call
  cluster_down,  ///< CLUSTERDOWN: the cluster cannot serve the slot
  busy,          ///< BUSY: a script or a load holds the server
  server,        ///< any other error reply
  protocol,      ///< a reply that is not what was asked for
};

/// The reason of a call that got no reply (or an error reply, from
/// `fcall`); nullopt for a call the breaker kept from being sent and for
/// the library's own verdict about a key ("sluice: ..."), which are no
/// failures of the store.
std::optional<failure_reason> reason_of(const call_error& e) noexcept;

/// The reason of an error reply's text; nullopt for the library's own.
std::optional<failure_reason> reason_of_reply(std::string_view text) noexcept;

/// Counts of the calls, recorded as they return.
class call_figures {
 public:
  /// One round trip (a call, or one pipeline) that took `ns`.
  void observe(std::int64_t ns) noexcept;
  /// One call's outcome: counted under its reason if it failed.
  void note(const call_result& r) noexcept;
  /// `note` for each.
  void note_each(std::span<const call_result> rs) noexcept;
  /// The reason of the latest failure noted, if any.
  [[nodiscard]] std::optional<failure_reason> last_reason() const noexcept;

  /// Writes the figures into `s`.
  void read(redis_store_stats& s) const;

 private:
  void count(failure_reason r) noexcept;
  static constexpr std::size_t bounds = redis_store_stats::call_latency_bounds.size();
  std::array<std::atomic<std::uint64_t>, bounds + 1> buckets_{};
  std::atomic<std::uint64_t> sum_ns_{0};
  std::array<std::atomic<std::uint64_t>, redis_store_stats::failure_reasons.size()> reasons_{};
  std::atomic<std::uint8_t> last_{0xff};
};

}  // namespace sluice::redis
