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
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redis/client/client.hpp"
#include "sluice/redis/store.hpp"

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
  // Over TLS (tls.hpp, tls_reason_of): why the handshake failed.
  untrusted,              ///< the server's certificate is not signed by a trusted CA
  name_mismatch,          ///< the server's certificate is for another name
  expired,                ///< the server's certificate has expired (or is not valid yet)
  no_client_certificate,  ///< the server wants a client certificate, or refused ours
  plaintext_peer,         ///< the server does not speak TLS (a plaintext port)
  handshake,              ///< any other TLS failure
};

/// How a TLS failure's message begins (tls.cpp writes them; reason_of
/// reads them back): each names its cause, then OpenSSL's reason text.
namespace tls_words {
inline constexpr std::string_view untrusted = "TLS: the server's certificate is not trusted";
inline constexpr std::string_view name_mismatch = "TLS: the server's certificate does not match the name";
inline constexpr std::string_view expired = "TLS: the server's certificate has expired or is not valid yet";
inline constexpr std::string_view no_client_certificate =
    "TLS: the server refused the client certificate, or wants one";
inline constexpr std::string_view plaintext_peer = "TLS: the server did not answer in TLS: a plaintext port?";
inline constexpr std::string_view handshake = "TLS: ";
}  // namespace tls_words

/// The TLS cause a call error's message names (tls_words), if any.
std::optional<failure_reason> tls_reason_of(std::string_view message) noexcept;

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
  void note(const call_result& r);
  /// `note` for each.
  void note_each(std::span<const call_result> rs);
  /// The reason of the latest failure noted, if any.
  [[nodiscard]] std::optional<failure_reason> last_reason() const noexcept;
  /// The latest failure noted: its reason's name, ": ", and its message
  /// (never a password: messages name a server by host and port); "" when
  /// none.
  [[nodiscard]] std::string last_failure() const;

  /// Writes the figures into `s`.
  void read(redis_store_stats& s) const;

 private:
  void count(failure_reason r, std::string_view message);
  static constexpr std::size_t bounds = redis_store_stats::call_latency_bounds.size();
  std::array<std::atomic<std::uint64_t>, bounds + 1> buckets_{};
  std::atomic<std::uint64_t> sum_ns_{0};
  std::array<std::atomic<std::uint64_t>, redis_store_stats::failure_reasons.size()> reasons_{};
  std::atomic<std::uint8_t> last_{0xff};
  mutable std::mutex last_mu_;
  std::string last_message_;  // requires last_mu_
};

}  // namespace sluice::redis
