// The asynchronous Redis client of sluice::redis, on Boost.Asio: one
// connection to one server, shared by every caller, with automatic
// pipelining. It moves bytes and reports every failure as a value (the
// reply/call_error types of client.hpp); the store owns the Lua library.
//
// - Pipelining: a command is queued; while no write is in flight, every
//   queued command is written in one write, and replies are matched to their
//   callers in order. No window to configure. An event loop's own connection
//   keeps one batch in flight instead, or as many as its URL says
//   (batches_in_flight).
// - RESP is parsed by hiredis's reader (redisReaderCreate/Feed/GetReply).
// - Deadlines: each call has its own (`command_timeout` from when it was
//   made, plus `connect_timeout` when it had to wait for a connection). At
//   its deadline a call is completed with `call_error::timeout`, with
//   `maybe_applied` when it was written. The connection is kept and the
//   call keeps its place in the reply order: its late reply, when it comes,
//   is dropped (`stats().late_replies`), so later callers still get their
//   own. A connection whose oldest unanswered command has waited
//   `stall_timeout` is closed: its calls fail with `io` (maybe applied).
//   Nothing ever blocks the event loop.
// - Connect: resolve, connect and (rediss://) TLS handshake, then AUTH and
//   SELECT (and PING over TLS, to learn of a refused client certificate),
//   all within `connect_timeout`; commands wait for the login. A failed
//   connect fails the waiting calls (never applied) and starts a backoff
//   (5 ms doubling to 100 ms) during which calls fail at once. A broken
//   connection fails the calls written to it (maybe applied); calls not yet
//   written go out on a new connection. TCP_NODELAY and keepalive are on.
// - The FUNCTION library: `async_fcall_each` runs FCALLs (FUNCTION LOAD
//   REPLACE when missing, EVALSHA when FUNCTION is refused, SCRIPT LOAD on
//   NOSCRIPT, one retry each; docs/redis-client.md).
//
// Threads: every member may be called from any thread. Completion handlers
// run on the client's strand (of the executor it was made with) and must
// not block it; `async_call` with a completion token (asio::use_future,
// asio::use_awaitable, a handler with an associated executor) delivers there
// instead. A synchronous face is `sync_client` (sync_client.hpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redis/client/client.hpp"
#include "sluice/core/result.hpp"

namespace sluice::redis {

class tls_context;  // tls.hpp

/// How an `async_client` connects and how long its calls wait.
struct async_client_options {
  url where;
  /// Bound on resolve + connect + TLS handshake + AUTH/SELECT.
  std::chrono::milliseconds connect_timeout{200};
  /// Each call's deadline, from when it was made.
  std::chrono::milliseconds command_timeout{100};
  /// A connection whose oldest unanswered command has waited this long is
  /// closed (0: 4 × command_timeout, at least 1 s).
  std::chrono::milliseconds stall_timeout{0};
  /// TCP keepalive (idle 15 s, then probes every 5 s, 3 of them).
  bool keepalive = true;
  /// First pause after a failed connect, doubled per failure up to
  /// reconnect_backoff_max; during it calls fail at once (nothing sleeps).
  std::chrono::milliseconds reconnect_backoff{5};
  std::chrono::milliseconds reconnect_backoff_max{100};
  /// The TLS context for rediss:// (make_tls_context); made from
  /// `where.tls` when left empty.
  std::shared_ptr<tls_context> tls;
  /// The executor's context is run by one thread only, the one that makes
  /// the calls, and only while it waits for them (sync_client's caller
  /// connections): a call is queued and written at once, on the calling
  /// thread, instead of through a post to the strand; a plaintext socket is
  /// read by the caller (caller_wait), never by the reactor.
  bool caller_driven = false;
  /// sync_client: a caller connection left idle this long is closed the
  /// next time a call hands a connection back to the pool (0: never), so a
  /// burst of callers does not keep its connections for good.
  std::chrono::milliseconds caller_idle_close{60'000};
  /// A caller-driven plaintext connection's wait also wakes when this file
  /// descriptor is readable (sync_client::close's eventfd): the waiting
  /// caller then runs its context, where the close was posted. -1: none.
  int wake_fd = -1;
  /// A subscriber's read gate (the deny cache's listener, invalidation.hpp):
  /// when set, a plaintext connection waits until its socket is readable
  /// without reading it, sets `*reading` (seq_cst), reads every byte there
  /// is and delivers every whole reply (push handlers included), then
  /// clears it. So a byte that left the socket has its reply handled before
  /// `*reading` is false again. Must outlive the client; the executor's
  /// context must be run by one thread. TLS: not gated (its engine reads
  /// ahead of what it delivers).
  std::atomic<bool>* reading = nullptr;
  /// Batches in flight, N (a caller's event loop: sync_client::make_on,
  /// N from the URL's `batches_in_flight`, 1 by default; 0: not held, every
  /// call queued is written once a pass of the strand, as elsewhere). A
  /// batch is what one write carries. A call made while fewer than N
  /// batches are written and unanswered is written at once, on the
  /// caller's pass (queued on the strand by dispatch, sent without
  /// blocking); calls made while N are out are held, and written together
  /// the moment the oldest one's last reply is read. The socket is read
  /// when it is readable and, at most every 20 µs, by a call that is held,
  /// so that replies are seen in the middle of the loop's pass. So the
  /// loop's work and the server's overlap without a write per call
  /// (docs/serve.md, "The fleet path"). Every call still goes out on the
  /// one connection in the order it was made. A held call that reaches its
  /// deadline was never written: `timeout`, not maybe applied. Plaintext
  /// connections only (TLS: as with 0); not with `caller_driven` or
  /// `reading`.
  std::size_t batches_in_flight = 0;
  /// The server's path to the module (module.hpp), shared by the
  /// connections made from these options; `create` makes one when empty.
  std::shared_ptr<module_state> module;
};

/// Counters of what an async client did (monotone, relaxed reads).
struct async_stats {
  std::uint64_t connects = 0;          ///< connections established (logged in)
  std::uint64_t connect_failures = 0;  ///< failed connects (refused, timeout, TLS, auth)
  std::uint64_t broken = 0;            ///< connections dropped after an error
  std::uint64_t writes = 0;            ///< socket writes (each carries every command queued before it)
  std::uint64_t commands = 0;          ///< commands written
  std::uint64_t replies = 0;           ///< replies read
  std::uint64_t timeouts = 0;          ///< calls completed by their deadline
  std::uint64_t late_replies = 0;      ///< replies of calls that had timed out, dropped
  std::uint64_t library_loads = 0;     ///< FUNCTION LOAD REPLACE sent
  std::uint64_t script_loads = 0;      ///< SCRIPT LOAD sent

  /// Adds another client's counts (the connections of one sync_client).
  async_stats& operator+=(const async_stats& o) noexcept {
    connects += o.connects;
    connect_failures += o.connect_failures;
    broken += o.broken;
    writes += o.writes;
    commands += o.commands;
    replies += o.replies;
    timeouts += o.timeouts;
    late_replies += o.late_replies;
    library_loads += o.library_loads;
    script_loads += o.script_loads;
    return *this;
  }
};

using call_handler = std::function<void(call_result)>;
using batch_handler = std::function<void(batch_result)>;
using each_handler = std::function<void(std::vector<call_result>)>;
/// Receives a count of keys, or nullopt when it could not be had.
using count_handler = std::function<void(std::optional<std::uint64_t>)>;
/// Receives the keys a scan found, or nullopt when a call failed.
using keys_handler = std::function<void(std::optional<std::vector<std::string>>)>;
/// Receives the replies no caller asked for (pub/sub messages).
using push_handler = std::function<void(reply)>;

/// What the synchronous face (sync_client) and the Sentinel client drive:
/// the asynchronous calls of one Redis deployment.
class async_backend {
 public:
  virtual ~async_backend() = default;
  /// Sets the FUNCTION library (as client::set_library).
  virtual result<bool> set_library(std::string name, std::string code) = 0;
  /// One command; an error reply is `call_error::server` (`auth` for a login error).
  virtual void async_call(std::span<const std::string_view> argv, call_handler done) = 0;
  /// Functions of the library, pipelined; each call gets its reply (an
  /// error reply is a reply of kind `error`) or the error that kept it from one.
  virtual void async_fcall_each(std::span<const function_call> calls, each_handler done) = 0;
  /// The number of keys (DBSIZE; a cluster sums its primaries').
  virtual void async_count_keys(count_handler done);
  /// The keys matching the glob `match` (SCAN ... MATCH; a cluster scans
  /// every primary), in no order; stops once it has found `most` of them.
  virtual void async_scan(std::string match, std::size_t most, keys_handler done);
  /// One command without keys on every server that holds keys (one server:
  /// it; a cluster: every primary of the slot map), each server's outcome
  /// in `done` (empty when a cluster's map names no primary for a slot, or
  /// one's breaker is open: nothing is sent then).
  virtual void async_call_every_primary(std::span<const std::string_view> argv, each_handler done);
  /// Fails every pending call (`io`) and refuses new ones; for an orderly end.
  virtual void close() = 0;
  /// Each server's path to the module (module.hpp): one server, a
  /// Sentinel deployment's primary, every node of a cluster.
  [[nodiscard]] virtual std::vector<module_path_view> module_paths() const = 0;
};

/// One server, one pipelined connection (see the file's comment).
class async_client final : public async_backend, public std::enable_shared_from_this<async_client> {
 public:
  /// Makes a client whose I/O and handlers run on a strand of `ex`. Errors
  /// name the URL's TLS settings (a CA or certificate file that cannot be
  /// read). Nothing is connected yet: the first call connects.
  static result<std::shared_ptr<async_client>> create(boost::asio::any_io_executor ex, async_client_options options);
  ~async_client() override;
  async_client(const async_client&) = delete;
  async_client& operator=(const async_client&) = delete;

  result<bool> set_library(std::string name, std::string code) override;
  void async_call(std::span<const std::string_view> argv, call_handler done) override;
  void async_call(std::initializer_list<std::string_view> argv, call_handler done) {
    async_call(std::span<const std::string_view>(argv.begin(), argv.size()), std::move(done));
  }
  /// Commands in order, answered together: their replies (an error reply is
  /// an element of kind `error`) or the error that broke the batch.
  void async_pipeline(std::span<const std::vector<std::string_view>> commands, batch_handler done);
  void async_fcall_each(std::span<const function_call> calls, each_handler done) override;
  /// As async_fcall_each, each FCALL after an `ASKING` (a Redis Cluster's
  /// ASK redirection: the node serves the call for a slot it is importing).
  void async_fcall_each_asking(std::span<const function_call> calls, each_handler done);
  /// One function; an error reply is `call_error::server`.
  void async_fcall(const function_call& fc, call_handler done);
  void close() override;
  /// This connection's: its address ("host:port", or the socket's path).
  [[nodiscard]] std::vector<module_path_view> module_paths() const override;

  /// `async_call` with an Asio completion token (asio::use_future,
  /// asio::use_awaitable, a handler); the arguments are copied. The result
  /// is delivered on the token's associated executor.
  template <class Token>
  auto async_command(std::vector<std::string> argv, Token&& token) {
    return boost::asio::async_initiate<Token, void(call_result)>(
        [self = shared_from_this()](auto handler, std::vector<std::string> args) {
          using handler_t = decltype(handler);
          auto h = std::make_shared<handler_t>(std::move(handler));
          std::vector<std::string_view> views(args.begin(), args.end());
          auto ex = boost::asio::get_associated_executor(*h, self->executor());
          self->async_call(views, [h, ex](call_result r) {
            boost::asio::dispatch(ex, [h, r = std::move(r)]() mutable { (*h)(std::move(r)); });
          });
        },
        token, std::move(argv));
  }

  /// Replies no caller asked for go to `h` (a subscriber connection) instead
  /// of closing the connection as a protocol error.
  void set_push_handler(push_handler h);
  /// Before the first call only: from now on as many batches in flight as
  /// the URL's `batches_in_flight` says
  /// (async_client_options::batches_in_flight; sync_client::make_on).
  void hold_batches() noexcept {
    options_.batches_in_flight = static_cast<std::size_t>(std::max(0, options_.where.batches_in_flight));
  }
  /// `h` runs (on the strand) each time an established connection breaks
  /// (EOF, a socket error, a stall, a reply it cannot read): what a
  /// subscriber needs to know, since the next call would connect again
  /// without its subscription.
  void set_lost_handler(std::function<void()> h);
  /// On the strand only (a handler of this client's): the descriptor of
  /// the connection's socket (the TCP socket under TLS), -1 when none.
  [[nodiscard]] int socket_fd() const;
  /// On the strand only: whether the connection's reads are gated by
  /// async_client_options::reading (set, and a plaintext connection).
  [[nodiscard]] bool gated() const;

  /// For a caller-driven connection (async_client_options::caller_driven),
  /// whose plaintext socket its caller reads directly. Before a call: reads
  /// what came while the connection was idle (a server's EOF); false when
  /// the context must be polled for it instead (TLS, not connected).
  bool caller_idle();
  /// While a call waits: waits once for the socket (up to the next
  /// deadline) and reads it; false when the context must run once instead
  /// (connecting, TLS, a write that would have blocked, a deadline due).
  bool caller_wait();

  [[nodiscard]] boost::asio::any_io_executor executor() const;
  [[nodiscard]] library_mode mode() const noexcept;
  /// What this connection's server offers of the module (module.hpp), as
  /// its latest login's probe found it and call-time refusals left it.
  [[nodiscard]] module_caps module() const;
  [[nodiscard]] async_stats stats() const noexcept;
  [[nodiscard]] const async_client_options& options() const noexcept { return options_; }

  struct op;
  struct impl;
  struct library;
  struct fcall_job;

 private:
  async_client(boost::asio::any_io_executor ex, async_client_options options);
  void submit(std::unique_ptr<op> o);
  void start_fcalls(std::span<const function_call> calls, each_handler done, bool asking);
  /// Commands already in RESP, answered by `replies` replies.
  void submit_formatted(std::string bytes, std::size_t replies, batch_handler done);
  void run_round(std::shared_ptr<fcall_job> j);
  void on_round(std::shared_ptr<fcall_job> j, batch_result r);
  void load_library(std::shared_ptr<fcall_job> j, std::function<void()> then);
  void load_script(std::shared_ptr<fcall_job> j, std::function<void()> then);
  std::shared_ptr<const library> current_library() const;

  async_client_options options_;
  std::unique_ptr<impl> impl_;

  mutable std::mutex lib_mu_;
  std::shared_ptr<library> lib_;  // requires lib_mu_
  std::atomic<bool> script_mode_{false};
  /// Set by each login's probe; a call the module refused (NOPERM) clears
  /// its commands until the next login (module=auto).
  void set_module(module_caps caps);

  // Counters, relaxed (stats()).
  std::atomic<std::uint64_t> connects_{0}, connect_failures_{0}, broken_{0}, writes_{0}, commands_{0}, replies_{0},
      timeouts_{0}, late_replies_{0}, library_loads_{0}, script_loads_{0};
};

}  // namespace sluice::redis
