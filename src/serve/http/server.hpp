// The network side of `sluice serve`: HTTP/1.1 keep-alive over Boost.Beast,
// one event loop per thread, each with its own SO_REUSEPORT acceptor on
// every decision listener (the admin listener runs on the first loop).
// Signals: SIGHUP reloads the configuration file; SIGTERM and SIGINT stop
// accepting, let in-flight requests finish (at most drain_timeout), close
// idle connections and return. All Beast code lives in server.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "http_api.hpp"
#include "sluice/core/result.hpp"

namespace sluice::serve {

/// Where the server is listening once bound (port 0 replaced by the port
/// the system chose).
struct bound_address {
  listen_address address;
  listener_role role = listener_role::decision;
};

/// Callbacks around the run.
struct server_hooks {
  /// Called every `interval` ns on the first loop (0: never), e.g. a
  /// periodic snapshot.
  tick interval = 0;
  std::function<void()> on_interval;
};

/// An HTTP server over one service's HTTP front end.
class server {
 public:
  /// Binds every listener of `c` now (threads: c.threads, 0 = the core
  /// count) for `api`, which must outlive the server. The error names the
  /// address and the system's reason.
  static result<std::unique_ptr<server>> bind(http_api& api, const config& c, server_hooks hooks = {});
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// The addresses bound.
  [[nodiscard]] const std::vector<bound_address>& addresses() const noexcept;

  /// Serves until SIGTERM or SIGINT, then drains. Log lines (reloads,
  /// shutdown) go to `log`. Returns when every loop has stopped.
  void run(std::ostream& log);

  struct impl;

 private:
  explicit server(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace sluice::serve
