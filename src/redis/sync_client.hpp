// The synchronous face of the asynchronous client: a `backend` (the store's
// interface, client.hpp) over an async_backend that runs on an I/O thread of
// its own. Calls from any number of threads at once are pipelined on the
// one connection (async_client.hpp); each caller waits for its own reply.
// Private to sluice::redis.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "redis/async_client.hpp"
#include "sluice/redis.hpp"
#include "sluice/result.hpp"

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

  /// One command; an error reply is `call_error::server`.
  call_result call(std::span<const std::string_view> argv);
  call_result call(std::initializer_list<std::string_view> argv) {
    return call(std::span<const std::string_view>(argv.begin(), argv.size()));
  }

  /// The backend it drives (for its stats).
  [[nodiscard]] async_backend& async() noexcept { return *backend_; }

  /// Another backend of the same deployment on `ex` (a caller's event
  /// loop: remote/event_loops.hpp): its own connections, nothing shared
  /// with this one's; no library set yet.
  result<std::shared_ptr<async_backend>> make_on(boost::asio::any_io_executor ex) const;

 private:
  struct io;
  sync_client(std::unique_ptr<io> loop, std::shared_ptr<async_backend> b, factory make);
  std::unique_ptr<io> io_;
  std::shared_ptr<async_backend> backend_;
  factory make_;
};

/// The store's backend for one server through the asynchronous client
/// (rediss://, or `pipelined_client`): the store's timeouts. A `verify=no`
/// URL is warned about on stderr.
result<std::unique_ptr<sync_client>> open_async_backend(const redis_store_options& options, url where);

/// The warning for a rediss:// URL with `verify=no`, printed once per URL
/// opened ("sluice: warning: ...").
void warn_if_unverified(const url& where);

}  // namespace sluice::redis
