// The Redis client layer of sluice::redis: a thread-safe wrapper of hiredis
// 0.14's synchronous API (Debian's libhiredis-dev) that moves bytes and
// reports every failure as a value. It knows nothing of limiters: the store
// (redis_store) owns the Lua library and the argument protocol.
//
// What it does:
// - connects from a URL (`parse_url`: redis://[user:password@]host[:port][/db]
//   or unix:///path[?db=N]), with a connect timeout, a command timeout, TCP
//   keepalive, AUTH (password, or ACL user and password) and SELECT;
// - one command (`call`) or a pipelined batch (`pipeline`), decoded strictly
//   into an owned `reply`;
// - reconnects on any error; a connection the server closed while it sat
//   idle is noticed before a command is sent on it, and replaced;
// - a FUNCTION library (`set_library` + `fcall`): loaded with FUNCTION LOAD
//   REPLACE when FCALL says it is missing (a fresh server, a restart without
//   persistence, FUNCTION FLUSH), then retried once; where FUNCTION is
//   refused (ACL, or a server before 7.0) the same code runs as a script
//   through EVALSHA, with NOSCRIPT -> SCRIPT LOAD -> one retry.
//
// Timeouts (research/redis-design.md §5): a command that timed out may have
// run on the server (Redis answers a pipeline only after running it), so it
// is reported as `call_error::timeout` with `maybe_applied` and never retried
// by this layer. hiredis's redisReconnect restores the connect timeout, not
// the command timeout: this layer never uses it, it connects afresh and sets
// the command timeout on every new connection.
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

#include "sluice/result.hpp"

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

  /// True for a unix-socket URL.
  [[nodiscard]] bool is_unix() const noexcept { return !socket_path.empty(); }
  /// The URL again, with the password shown as "***" (for logs and errors).
  [[nodiscard]] std::string redacted() const;
};

/// Parses `redis://[user[:password]@]host[:port][/db]` (also
/// `redis://:password@host`), `rediss://...` (the same over TLS, with the
/// query parameters of `tls_settings`) and `unix:///path/to/socket[?db=N]`;
/// user, password and query values are percent-decoded. An IPv6 host is
/// written in brackets (`redis://[::1]:6379`). Errors name the part at fault:
/// "scheme", "user", "password", "host", "port", "db", "path", "query", or
/// the query parameter ("ca_file", "verify", ...).
result<url> parse_url(std::string_view text);

/// How a `client` connects and how long it waits.
struct client_options {
  url where;
  /// Bound on establishing one connection (TCP/unix connect).
  std::chrono::milliseconds connect_timeout{200};
  /// Bound on each socket read or write of a command (SO_RCVTIMEO/SNDTIMEO).
  /// A call that must first reconnect may take connect_timeout more.
  std::chrono::milliseconds command_timeout{100};
  /// 0: as many connections as threads calling at once (one per thread,
  /// created on demand, reused from a free list). N > 0: at most N; a call
  /// that finds none free waits up to command_timeout, then reports timeout.
  std::size_t pool_size = 0;
  /// TCP keepalive on every connection (hiredis's 15 s interval).
  bool keepalive = true;
  /// First pause after a failed connect, doubled per failure up to
  /// reconnect_backoff_max. During the pause calls fail at once (no sleep).
  std::chrono::milliseconds reconnect_backoff{5};
  std::chrono::milliseconds reconnect_backoff_max{100};
  /// hiredis writes with write(2): a write into a connection the server
  /// reset raises SIGPIPE, which kills a process that has not set it aside.
  /// When true (the default), the first client sets SIGPIPE to SIG_IGN if it
  /// is still SIG_DFL (a handler the application installed is left alone);
  /// the write then fails with EPIPE and the call reports `io`.
  bool ignore_sigpipe = true;
};

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
};

/// How the library ran most recently: as a FUNCTION, or through EVALSHA.
enum class library_mode : std::uint8_t { function, script };

/// Counters of what the client did (monotone, relaxed reads).
struct client_stats {
  std::uint64_t connects = 0;          ///< connections established
  std::uint64_t connect_failures = 0;  ///< failed connects (refused, timeout, auth)
  std::uint64_t broken = 0;            ///< connections dropped after an error
  std::uint64_t library_loads = 0;     ///< FUNCTION LOAD REPLACE sent
  std::uint64_t script_loads = 0;      ///< SCRIPT LOAD sent
};

/// Where the Redis store sends its FCALLs: one server (`client`) or a Redis
/// Cluster (`cluster_client`, cluster.hpp). Every member may be called from
/// any number of threads at once.
class backend {
 public:
  virtual ~backend() = default;

  /// Sets the FUNCTION library the calls run (see client::set_library).
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

class connection;  // one hiredis context (client.cpp)

/// A thread-safe Redis client: any number of threads may call any member at
/// once. Each call borrows a connection from a mutex-protected free list
/// (creating one when none is free and the pool allows), so with
/// `pool_size = 0` every calling thread ends up with a connection of its
/// own, without thread-local state that would outlive the client.
class client final : public backend {
 public:
  explicit client(client_options options);
  ~client() override;
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// Sends one command (argv of byte strings) and waits for its reply. An
  /// error reply from Redis is returned as `call_error::server` (auth errors
  /// as `auth`).
  call_result call(std::span<const std::string_view> argv);
  call_result call(std::initializer_list<std::string_view> argv);

  std::optional<std::uint64_t> count_keys() override;

  /// Sends the commands in one pipeline and reads their replies in order.
  /// An error reply of one command is an element of kind `error` (the others
  /// still ran); a broken connection or a timeout fails the whole batch, and
  /// any of its commands may have run.
  batch_result pipeline(std::span<const std::vector<std::string_view>> commands);

  /// Sets the FUNCTION library that `fcall` runs: `name` (e.g. "sluice_v2_1a2b3c4d")
  /// must be the one the code declares on its first line (`#!lua
  /// name=sluice_v2_1a2b3c4d`); the code registers its functions with
  /// `redis.register_function`. Nothing is sent now. Returns an error naming
  /// "library" when the code's first line does not declare `name`.
  result<bool> set_library(std::string name, std::string code) override;

  /// Runs one function of the library. When Redis says the function is
  /// missing, loads the library (FUNCTION LOAD REPLACE) and retries once;
  /// when FUNCTION/FCALL is refused, switches this client to EVALSHA of the
  /// same code (NOSCRIPT -> SCRIPT LOAD -> one retry). An error reply of the
  /// function itself is `call_error::server`.
  call_result fcall(const function_call& fc) override;

  /// Runs the calls in one pipeline; replies in order (an error reply is an
  /// element of kind `error`). Calls that failed only because the library or
  /// script was missing are re-sent once, in one pipeline, after loading it.
  batch_result fcall_pipeline(std::span<const function_call> calls);

  /// fcall_pipeline, with the batch's outcome given to each call (a broken
  /// batch: every call gets its error).
  std::vector<call_result> fcall_each(std::span<const function_call> calls) override;

  struct batch_state;
  /// FCALLs written to one connection whose replies are not read yet
  /// (`send_fcalls`). Destroying it unread closes that connection, whose
  /// replies would otherwise be read by the next call.
  class sent_fcalls {
   public:
    sent_fcalls(sent_fcalls&&) noexcept;
    sent_fcalls& operator=(sent_fcalls&&) noexcept;
    ~sent_fcalls();

   private:
    friend class client;
    explicit sent_fcalls(std::unique_ptr<batch_state> s);
    std::unique_ptr<batch_state> s_;
  };

  /// The first half of `fcall_pipeline`: borrows a connection and writes
  /// every call to it (each preceded by `ASKING` when `asking`, for a Redis
  /// Cluster's ASK redirection), without waiting for a reply, so that a
  /// caller can write to several servers before it reads from any. The
  /// calls' bytes must outlive `receive_fcalls`. A failure to connect or to
  /// write is reported by `receive_fcalls`.
  sent_fcalls send_fcalls(std::span<const function_call> calls, bool asking = false);

  /// The second half: reads the replies of `sent` in order, and loads the
  /// library and re-sends as `fcall_pipeline` does (with `ASKING` again).
  batch_result receive_fcalls(sent_fcalls sent);

  /// How the library is being run now.
  [[nodiscard]] library_mode mode() const noexcept;

  /// What the client has done so far.
  [[nodiscard]] client_stats stats() const noexcept;

  /// The options it was built with.
  [[nodiscard]] const client_options& options() const noexcept { return options_; }

 private:
  struct lease;
  struct library;
  lease acquire(call_error& err);
  void release(std::unique_ptr<connection> c);
  bool ensure_connected(connection& c, call_error& err);
  call_result fcall_once(connection& c, const function_call& fc, bool& missing);
  std::variant<std::vector<reply>, call_error> run_batch(connection& c,
                                                         std::span<const std::vector<std::string_view>> cmds);
  std::optional<call_error> write_batch(connection& c, std::span<const std::vector<std::string_view>> cmds);
  batch_result read_batch(connection& c, std::size_t count, bool asking);
  std::optional<call_error> send_round(batch_state& s);
  std::optional<call_error> load_library(connection& c, const library& lib);
  std::shared_ptr<const library> current_library() const;
  void note_connect_failure();

  client_options options_;

  mutable std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::vector<std::unique_ptr<connection>> free_;  // requires pool_mu_
  std::size_t open_ = 0;                           // connections lent or free; requires pool_mu_

  // Backoff after a failed connect, shared by all threads: until this
  // steady-clock instant (ns), calls that need a new connection fail at once.
  std::atomic<std::int64_t> down_until_ns_{0};
  std::atomic<std::int64_t> backoff_ns_{0};
  std::atomic<std::uint8_t> down_kind_{call_error::refused};
  mutable std::mutex down_mu_;
  std::string down_message_;  // requires down_mu_

  mutable std::mutex lib_mu_;
  std::shared_ptr<library> lib_;  // requires lib_mu_
  std::atomic<bool> script_mode_{false};

  std::atomic<std::uint64_t> connects_{0}, connect_failures_{0}, broken_{0}, library_loads_{0}, script_loads_{0};
};

}  // namespace sluice::redis
