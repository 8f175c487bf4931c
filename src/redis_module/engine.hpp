// The Redis module's commands without Redis: the FCALL argument layout of
// the Lua library (src/redis/lua/main.lua) parsed, every leaf decided by
// the core's own step functions on the values the library reads and writes
// (redis/store/value_codec.hpp), leases released by the core's `release`,
// refunds and carried states compared and set, and the reply the library
// would give, as a value. module.cpp binds these to the Redis module API (keys, replies,
// replication); the fuzz target (tests/fuzz/fuzz_redis_module.cpp) and the
// unit tests drive them over an in-memory keyspace.
//
// Not here: the arithmetic of any algorithm (the core's `decide`, `report`)
// and the value encoding (values.cpp). Nothing here reads a clock except
// through `keyspace::now_us`, asked only when a call asks for the store's
// clock.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace sluice::redis_module {

/// A reply, shaped as the Lua library's (RESP: integers, bulk strings, nil,
/// arrays), or an error reply.
struct reply {
  enum class kind { integer, bulk, nil, array, error };
  kind k = kind::nil;
  std::int64_t integer = 0;
  std::string text;  ///< bulk's bytes, or the error's message
  std::vector<reply> items;

  static reply of(std::int64_t v) { return reply{kind::integer, v, {}, {}}; }
  static reply bulk(std::string_view s) { return reply{kind::bulk, 0, std::string(s), {}}; }
  static reply none() { return reply{}; }
  static reply error(std::string message) { return reply{kind::error, 0, std::move(message), {}}; }
  static reply array(std::vector<reply> items) { return reply{kind::array, 0, {}, std::move(items)}; }
  /// A bulk string, or nil when there is none (the library's `false`).
  static reply maybe(const std::optional<std::string>& s) { return s ? bulk(*s) : none(); }
  static reply maybe(std::optional<std::string>&& s) { return s ? reply{kind::bulk, 0, std::move(*s), {}} : none(); }
  /// An array of `r...`, moved in (array() copies: an initializer list's
  /// elements are const).
  template <typename... R>
  static reply list(R&&... r) {
    reply out{kind::array, 0, {}, {}};
    out.items.reserve(sizeof...(r));
    (out.items.push_back(std::forward<R>(r)), ...);
    return out;
  }
};

/// The keys of one call, by their place in the call (0: its first key).
class keyspace {
 public:
  virtual ~keyspace() = default;
  /// The string at key `i` (nullopt: no key); false when the key holds
  /// another type (then `value` is untouched).
  virtual bool get(std::size_t i, std::optional<std::string>& value) = 0;
  /// Sets key `i` to `value`, expiring `px` ms from now (0: never).
  virtual void put(std::size_t i, std::string_view value, std::int64_t px) = 0;
  /// The wall clock in microseconds since the epoch (the store's clock).
  virtual std::int64_t now_us() = 0;
  /// Deletes key `i` (DEL).
  virtual void del(std::size_t i) = 0;
  /// Sets key `i` to `value`, keeping its expiry (SET … KEEPTTL).
  virtual void put_keep_ttl(std::size_t i, std::string_view value) = 0;
  /// Key `i`'s time to live in ms, as PTTL answers it (-1: no expiry, -2:
  /// no key).
  virtual std::int64_t pttl(std::size_t i) = 0;
  /// Publishes `message` on `channel` (PUBLISH).
  virtual void publish(std::string_view channel, std::string_view message) = 0;
};

/// Which of the library's entry points a call is: `_one`, `_decide`,
/// `_peek`, `_report`, `_release`, `_refund`, `_refund_read`, `_cas`.
enum class entry { one, decide, peek, report, release, refund, refund_read, cas };

/// Every entry, in order (the module registers a command for each).
inline constexpr entry entries[] = {entry::one,     entry::decide, entry::peek,        entry::report,
                                    entry::release, entry::refund, entry::refund_read, entry::cas};

/// Whether a call of `e` only reads (PEEK, REFUND_READ).
constexpr bool read_only(entry e) noexcept { return e == entry::peek || e == entry::refund_read; }

/// The command's name for `e` ("SLUICE.ONE", ..., "SLUICE.REFUND_READ").
std::string_view command_name(entry e);

/// Runs one call: `keys` and `args` as FCALL's (after numkeys), the state
/// written through `ks`. Never throws on any input; a malformed call gets
/// an error reply and writes nothing.
reply run(entry e, keyspace& ks, std::size_t keys, std::span<const std::string_view> args);

/// Forgets which pipeline stopped at a status 3 (the library's `halted`).
void reset_halted() noexcept;

/// The module's version (its MODULE LIST `ver`).
inline constexpr int module_version = 2;

/// SLUICE.INFO's reply (docs/redis.md, "What the loaded module decides"):
/// field names and values, in pairs.
reply info();

}  // namespace sluice::redis_module
