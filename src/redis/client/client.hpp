// The shared types of the Redis client layer of sluice::redis (private to
// it): where a server is (`url`, `parse_url`), what a call answers
// (`reply`, `call_error`), a call of the Lua library (`function_call`), and
// `backend`, the synchronous interface the store calls. The client itself
// is asynchronous, on Boost.Asio (async_client.hpp), with a synchronous
// face (sync_client.hpp); a Redis Cluster is cluster.hpp's router over it,
// Sentinel sentinel.hpp's. hiredis's reader parses RESP (resp.hpp).
//
// Timeouts (research/redis-design.md §5): a command that timed out may have
// run on the server (Redis answers a pipeline only after running it), so it
// is reported as `call_error::timeout` with `maybe_applied` and never
// retried by this layer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "redis/client/module.hpp"
#include "sluice/core/result.hpp"

namespace sluice::redis {

/// TLS to a Redis server (`rediss://`): the settings of a URL's query
/// (`?ca_file=...&cert_file=...&key_file=...&server_name=...&verify=no`).
/// Only the asynchronous client speaks TLS (async_client.hpp, tls.hpp).
struct tls_settings {
  /// True for `rediss://`.
  bool on = false;
  /// PEM file of the CAs to trust; empty: the system's CAs.
  std::string ca_file;
  /// PEM client certificate (chain) and its private key, for servers that
  /// ask for one (`tls-auth-clients yes`); both or neither.
  std::string cert_file;
  std::string key_file;
  /// The name sent as SNI and verified in the server's certificate (a DNS
  /// name or an IP address); empty: the URL's host.
  std::string server_name;
  /// False only with an explicit `verify=no`: the certificate is not checked
  /// (the store logs a warning).
  bool verify = true;
};

/// What a URL's query tells the store rather than its client (docs/redis.md,
/// "URLs, passwords"): read by the store when it opens, never by a client.
struct url_store_settings {
  /// `?eviction_poll=1000ms`: how often the servers' evictions (`INFO stats`
  /// `evicted_keys`) and policy are read, in ms; 0: never.
  std::int64_t eviction_poll_ms = 1000;
};

/// Where a Redis server is and how to log in: the parts of a URL.
struct url {
  /// Host name or address (TCP); empty for a unix socket.
  std::string host;
  /// TCP port, 1..65535 (6379 when the URL has none).
  std::uint16_t port = 6379;
  /// Path of the unix socket; empty for TCP.
  std::string socket_path;
  /// ACL user name (percent-decoded); empty: the default user.
  std::string user;
  /// Password (percent-decoded); empty: no AUTH.
  std::string password;
  /// Database index for SELECT, 0..(2^31 - 1); 0 sends no SELECT.
  std::int32_t db = 0;
  /// TLS (`rediss://`) and its settings.
  tls_settings tls{};
  /// `?wait_replicas=N`: every round of FCALLs on a connection is followed
  /// by `WAIT N wait_timeout`, and the round fails (a timeout, maybe applied)
  /// when fewer than N replicas acknowledged it in time. 0: no WAIT.
  std::int32_t wait_replicas = 0;
  /// `?wait_timeout=50ms`: WAIT's timeout, 1..60000 ms (never 0, which
  /// would block for good).
  std::int64_t wait_timeout_ms = 50;
  /// The query's parameters for the store (`?eviction_poll=`).
  url_store_settings store{};
  /// `?module=auto|on|off`: whether calls go to sluice's Redis module where
  /// the server has it (module.hpp; docs/redis.md, "The store and the
  /// module").
  module_use module = module_use::automatic;
  /// `?batches_in_flight=1`: how many batches an event loop's own plaintext
  /// connection keeps written and unanswered before it holds its calls
  /// (async_client_options::batches_in_flight; docs/serve.md, "The fleet
  /// path"), 0..4 (0: not held, written once a pass). TLS connections,
  /// a Cluster's and a Sentinel deployment's, and a sync_client's callers'
  /// write as before whatever it says.
  std::int32_t batches_in_flight = 1;

  /// True for a unix-socket URL.
  [[nodiscard]] bool is_unix() const noexcept { return !socket_path.empty(); }
  /// The URL again, with the password shown as "***" (for logs and errors).
  [[nodiscard]] std::string redacted() const;
};

/// Parses `redis://[user[:password]@]host[:port][/db]` (also
/// `redis://:password@host`), `rediss://...` (the same over TLS, with the
/// query parameters of `tls_settings`), either with `wait_replicas` and
/// `wait_timeout` in its query, and `unix:///path/to/socket[?db=N]`; every
/// scheme with `eviction_poll`, `module` (auto, on, off) and
/// `batches_in_flight` (url_query.hpp
/// holds the table);
/// user, password and query values are percent-decoded. An IPv6 host is
/// written in brackets (`redis://[::1]:6379`). Errors name the part at fault:
/// "scheme", "user", "password", "host", "port", "db", "path", "query", or
/// the query parameter ("ca_file", "verify", "module", ...).
result<url> parse_url(std::string_view text);

/// An owned, decoded RESP2 value. The accessors are strict: each answers only
/// for its own type (nullopt / nullptr otherwise), so a reply of an
/// unexpected shape can never be read as another.
struct reply {
  enum class type : std::uint8_t { nil, integer, string, status, error, array };

  type kind = type::nil;
  /// The value of an integer reply.
  std::int64_t integer = 0;
  /// The bytes of a string, status or error reply.
  std::string str;
  /// The elements of an array reply.
  std::vector<reply> elements;

  [[nodiscard]] bool is_nil() const noexcept { return kind == type::nil; }
  [[nodiscard]] bool is_error() const noexcept { return kind == type::error; }
  /// The integer of an integer reply.
  [[nodiscard]] std::optional<std::int64_t> as_integer() const noexcept;
  /// The bytes of a bulk string reply (not status, not error).
  [[nodiscard]] std::optional<std::string_view> as_string() const noexcept;
  /// The text of a status reply ("OK", "PONG").
  [[nodiscard]] std::optional<std::string_view> as_status() const noexcept;
  /// The message of an error reply ("ERR ...", "NOSCRIPT ...").
  [[nodiscard]] std::optional<std::string_view> as_error() const noexcept;
  /// The elements of an array reply.
  [[nodiscard]] const std::vector<reply>* as_array() const noexcept;

  static reply make_integer(std::int64_t v);
  static reply make_string(std::string s);
  static reply make_status(std::string s);
  static reply make_error(std::string s);
  static reply make_array(std::vector<reply> v);
};

/// Why a call has no reply.
struct call_error {
  enum kind_t : std::uint8_t {
    timeout,   ///< no answer within the command timeout (or connect timeout, or no free connection)
    io,        ///< the connection broke (EOF, reset, any socket error)
    refused,   ///< could not connect (refused, unreachable, bad host), or backing off after that
    auth,      ///< AUTH failed or the server wants one (WRONGPASS, NOAUTH)
    server,    ///< an error reply from Redis ("ERR ...", "OOM ...", "BUSY ..."), from `call`/`fcall`
    protocol,  ///< a reply that is not valid RESP, or not of the shape asked for
    breaker,   ///< not sent: the circuit breaker of the node it was for is open (a cluster's router)
  };
  kind_t kind = io;
  /// Words a person can act on; for `server`, Redis's own error text.
  std::string message;
  /// True when the command may have reached the server and run there
  /// (a timeout or a break after it was sent): a caller must not re-send it
  /// blindly, it may already have been charged. False when it was never
  /// sent (refused, auth, backing off, no free connection) and for `server`
  /// errors (Redis answered; whether a script wrote before raising is the
  /// script's business — sluice's scripts check before they write).
  bool maybe_applied = false;

  /// "timeout", "io", "refused", "auth", "server", "protocol", "breaker".
  [[nodiscard]] static std::string_view name(kind_t k) noexcept;
  /// "kind: message".
  [[nodiscard]] std::string what() const;
};

/// A reply or the error in its place.
using call_result = std::variant<reply, call_error>;
/// The replies of a pipeline, in order, or the error that broke the batch.
using batch_result = std::variant<std::vector<reply>, call_error>;

/// One FCALL: the function's name, then keys followed by arguments in one
/// span, the first `num_keys` of which are keys. The bytes must outlive the call.
struct function_call {
  std::string_view function;
  std::size_t num_keys = 0;
  std::span<const std::string_view> keys_then_args;
  /// The module's command that makes the same call (none: only the
  /// library), and the letters of the call's leaves: a connection whose
  /// server's module takes both sends that command instead (module.hpp).
  module_command module = module_command::none;
  letter_set letters = 0;
};

/// A function_call that owns its bytes, for a call held while it is routed
/// (a Cluster's nodes, a Sentinel's master): the caller's need not outlive
/// it. It keeps the call's module command and letters, so that the node's
/// connection sends it to the module as it would the caller's own call.
struct owned_call {
  explicit owned_call(const function_call& fc)
      : function(fc.function),
        num_keys(fc.num_keys),
        args(fc.keys_then_args.begin(), fc.keys_then_args.end()),
        views(args.begin(), args.end()),
        module(fc.module),
        letters(fc.letters) {}
  // Moved, its strings stay where they are (the vector's buffer moves), and
  // with them what `views` points to; a copy would point into the original.
  owned_call(owned_call&&) noexcept = default;
  owned_call& operator=(owned_call&&) noexcept = default;
  owned_call(const owned_call&) = delete;
  owned_call& operator=(const owned_call&) = delete;
  ~owned_call() = default;

  /// The call, viewing this one's bytes.
  [[nodiscard]] function_call call() const { return function_call{function, num_keys, views, module, letters}; }

  std::string function;
  std::size_t num_keys = 0;
  std::vector<std::string> args;
  std::vector<std::string_view> views;
  module_command module = module_command::none;
  letter_set letters = 0;
};

/// How the library ran most recently: as a FUNCTION, or through EVALSHA.
enum class library_mode : std::uint8_t { function, script };

/// Where the Redis store sends its FCALLs: one server, a Sentinel master or
/// a Redis Cluster, each through `sync_client` (sync_client.hpp). Every member may be called from
/// any number of threads at once.
class backend {
 public:
  virtual ~backend() = default;

  /// Sets the FUNCTION library the calls run: `name` (e.g.
  /// "sluice_v2_1a2b3c4d") must be the one the code declares on its first
  /// line (`#!lua name=...`); the code registers its functions with
  /// `redis.register_function`. Nothing is sent now: a call that finds the
  /// library missing loads it (FUNCTION LOAD REPLACE) and is sent again
  /// once; where FUNCTION is refused the same code runs through EVALSHA.
  /// Returns an error naming "library" when the first line does not
  /// declare `name`.
  virtual result<bool> set_library(std::string name, std::string code) = 0;

  /// Runs one function of the library; an error reply is `call_error::server`.
  virtual call_result fcall(const function_call& fc) = 0;

  /// Runs the calls, pipelined, and gives each its own outcome, in order: its
  /// reply (an error reply of the function is a reply of kind `error`), or
  /// the error that kept it from one (`maybe_applied` as in call_error).
  virtual std::vector<call_result> fcall_each(std::span<const function_call> calls) = 0;

  /// The keys of the database (DBSIZE; a cluster: the sum over its
  /// primaries), or nullopt when a server did not answer.
  virtual std::optional<std::uint64_t> count_keys() = 0;
};

}  // namespace sluice::redis
