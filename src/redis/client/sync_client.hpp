// The synchronous face of the asynchronous client: a `backend` (the store's
// interface, client.hpp) over an async_backend.
//
// - One server (redis://, rediss://, unix://): each synchronous call runs on
//   the caller's own thread, on a connection of its own that no other call
//   uses meanwhile (an async_client on a private io_context the caller runs
//   while it waits): no hand-off to another thread and back. Concurrent
//   callers use one such connection each, made when first needed and kept
//   for the next caller (closed once idle for `caller_idle_close`); a
//   caller's own pipeline (fcall_each) still goes out in one write.
// - A Sentinel deployment or any other factory: calls from every thread are
//   pipelined on the backend's connection, on an I/O thread of its own; each
//   caller waits for its own reply.
//
// Either way the backend on the I/O thread (`async()`) carries the
// asynchronous calls of callers without a loop of their own.
// Private to sluice::redis.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redis/client/async_client.hpp"
#include "sluice/core/result.hpp"
#include "sluice/keyed/registry.hpp"
#include "sluice/redis/store.hpp"

namespace sluice::redis {

/// A backend over an asynchronous client on its own I/O thread.
class sync_client final : public backend {
 public:
  /// Makes the async backend on the I/O thread's executor.
  using factory = std::function<result<std::shared_ptr<async_backend>>(boost::asio::any_io_executor)>;

  /// One server (redis://, rediss://, unix://).
  static result<std::unique_ptr<sync_client>> open(async_client_options options);
  /// Any async backend (a Sentinel deployment).
  static result<std::unique_ptr<sync_client>> open(const factory& make);

  ~sync_client() override;
  sync_client(const sync_client&) = delete;
  sync_client& operator=(const sync_client&) = delete;

  result<bool> set_library(std::string name, std::string code) override;
  call_result fcall(const function_call& fc) override;
  std::vector<call_result> fcall_each(std::span<const function_call> calls) override;
  std::optional<std::uint64_t> count_keys() override;
  /// async_backend::async_scan, waited for.
  std::optional<std::vector<std::string>> scan(std::string match, std::size_t most);
  /// async_backend::async_call_every_primary, waited for.
  std::vector<call_result> call_every_primary(std::span<const std::string_view> argv);

  /// One command; an error reply is `call_error::server`.
  call_result call(std::span<const std::string_view> argv);
  call_result call(std::initializer_list<std::string_view> argv) {
    return call(std::span<const std::string_view>(argv.begin(), argv.size()));
  }

  /// Fails every call in flight at once, on every connection (a caller's
  /// waiting on its own connection too), and every later call: for an
  /// owner that is going away while its server does not answer, so that
  /// nothing waits out a command timeout. Thread-safe; idempotent.
  void close();

  /// The backend on the I/O thread, for asynchronous calls.
  [[nodiscard]] async_backend& async() noexcept { return *backend_; }

  /// One server: what every connection of it did, the I/O thread's and the
  /// callers' summed (async_client::stats); nullopt for another backend.
  [[nodiscard]] std::optional<async_stats> stats() const;
  /// Each server's path to the module (async_backend::module_paths); one
  /// server: every connection's, the callers' and attached loops' too.
  [[nodiscard]] std::vector<module_path_view> module_paths() const;
  /// One server: `script` once any of its connections fell back to EVALSHA.
  [[nodiscard]] std::optional<library_mode> mode() const;

  /// Another backend of the same deployment, with the same library, on
  /// `ex` (a caller's event loop: remote/event_loops.hpp): its own
  /// connections, nothing shared with this one's; a server's connection
  /// holds its calls behind its batches in flight (async_client_options::batches_in_flight).
  result<std::shared_ptr<async_backend>> make_on(boost::asio::any_io_executor ex) const;

 private:
  struct io;
  struct caller_connection;
  sync_client(std::unique_ptr<io> loop, std::shared_ptr<async_backend> b, factory make);
  /// Runs `start(backend, done)` and waits for `done`'s value: on a caller
  /// connection (one server) or on the I/O thread; `lost()` when the call
  /// was dropped unanswered.
  template <class T, class Start, class Lost>
  T wait(Start&& start, Lost&& lost);
  std::unique_ptr<caller_connection> take_connection();
  void give_back(std::unique_ptr<caller_connection> c);
  /// Closes a connection a call left in an unknown state (an exception).
  void forget(std::unique_ptr<caller_connection> c);
  /// Keeps a closing caller connection's counts in the sums; requires mu_.
  void retire(const caller_connection& c);

  std::unique_ptr<io> io_;
  std::shared_ptr<async_backend> backend_;
  factory make_;
  /// One server: how its caller connections are made; nullopt otherwise.
  std::optional<async_client_options> direct_;

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<caller_connection>> idle_;  // requires mu_
  std::vector<async_client*> made_;  // every caller connection's client (owned by it); requires mu_
  async_stats retired_;              // the counts of caller connections since closed; requires mu_
  bool retired_script_ = false;      // one of them had fallen back to EVALSHA; requires mu_
  bool closed_ = false;              // close() was called; requires mu_
  /// One server: the eventfd close() makes readable, which wakes a caller
  /// waiting on its connection (async_client_options::wake_fd); -1 otherwise.
  int wake_ = -1;
  std::optional<std::pair<std::string, std::string>> library_;  // requires mu_
};

/// The store's backend for one server through the asynchronous client
/// (redis://, rediss://, unix://): the store's timeouts. A `verify=no`
/// URL is warned about on stderr.
result<std::unique_ptr<sync_client>> open_async_backend(const store_options& options, url where);

/// The warning for a rediss:// URL with `verify=no`, printed once per URL
/// opened ("sluice: warning: ...").
void warn_if_unverified(const url& where);

}  // namespace sluice::redis
