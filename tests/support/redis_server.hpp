// A real redis-server for tests: started from PATH on 127.0.0.1 on a free
// port, in a temporary directory, stopped by its PID. No mocks.
//
// If redis-server is not installed the constructor throws, so the test FAILS
// with the message (scripts/setup.sh installs it); it never skips.
//
//   sluice::testing::redis_server srv;                  // --save '' --appendonly no
//   sluice::testing::redis_server auth({.password = "s3cret"});
//   srv.pause(); ... srv.resume();                      // SIGSTOP / SIGCONT
//   srv.kill9(); srv.restart();                         // same port, same dir, data gone
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice::testing {

/// The path of `name` in PATH, or "" when it is not there.
std::string find_in_path(const std::string& name);

/// How to start the server.
struct redis_server_options {
  /// `requirepass` for the default user; empty: none.
  std::string password{};
  /// ACL rules, one user per string, as after `user` in redis.conf, e.g.
  /// "app on >pw ~* +@all -function".
  std::vector<std::string> acl_users{};
  /// `maxmemory` (e.g. "1mb"); empty: unlimited. The policy goes with it.
  std::string maxmemory{};
  std::string maxmemory_policy = "noeviction";
  /// Also listen on a unix socket in the temporary directory.
  bool unix_socket = false;
  /// Extra redis.conf lines (e.g. "appendonly yes" to keep data over restart()).
  std::vector<std::string> extra_config{};
  /// How long start-up may take before the constructor throws.
  std::chrono::milliseconds start_timeout{5000};
  /// A Redis Cluster node: the port is picked so that port + 10000 (the
  /// cluster bus) is free too. The caller adds "cluster-enabled yes".
  bool cluster_bus = false;
  /// TLS only: the free port is the TLS port (`port 0`, `tls-port P`) with
  /// these PEM files; readiness is then a TCP connect, not a PING.
  struct tls_files {
    std::string cert_file, key_file, ca_file;
    /// `tls-auth-clients yes`: clients must present a certificate of the CA.
    bool auth_clients = false;
  };
  std::optional<tls_files> tls{};
  /// A redis-sentinel process instead (`redis-server --sentinel`): only
  /// port, bind, dir, logfile and `extra_config` (the `sentinel monitor`
  /// lines) are written. Its directory is in memory (`in_memory_dir`).
  bool sentinel = false;
  /// The server's directory on /dev/shm (when it is a writable directory;
  /// else /tmp, as every other server's). A sentinel fsyncs its
  /// configuration at each step of a failover, and a server its own at
  /// `REPLICAOF` / `SLAVEOF NO ONE` (`CONFIG REWRITE`). In a CI run whose
  /// build kept the disk busy, a sentinel's log showed one such save take
  /// about 6 s, then TILT mode (no failover for 30 s), and a failover test
  /// ran out of time (read from the log; not reproduced here). Tests that
  /// fail servers over put them in memory.
  bool in_memory_dir = false;
};

/// One redis-server process. Not copyable; the destructor stops it (SIGCONT,
/// SIGTERM, then SIGKILL after 3 s; waitpid) and removes its directory.
class redis_server {
 public:
  explicit redis_server(redis_server_options options = {});
  ~redis_server();
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;

  /// SIGSTOP: the server hangs (connections stay open, nothing is answered).
  void pause();
  /// SIGCONT after pause().
  void resume();
  /// SIGKILL and reap: the server is gone (connections reset, port closed).
  void kill9();
  /// Stops the server if running (SIGTERM) and starts it again on the same
  /// port with the same directory and configuration; waits until it answers.
  void restart();
  /// Whether the process is running (started and not killed or stopped).
  [[nodiscard]] bool running() const noexcept { return pid_ > 0; }

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  /// The temporary directory (redis.conf, redis.log, the socket).
  [[nodiscard]] const std::string& dir() const noexcept { return dir_; }
  /// The unix socket's path (empty unless options.unix_socket).
  [[nodiscard]] const std::string& socket_path() const noexcept { return socket_path_; }
  /// "redis://127.0.0.1:<port>" (no credentials).
  [[nodiscard]] std::string url() const;
  /// "unix://<socket path>" (requires options.unix_socket).
  [[nodiscard]] std::string unix_url() const;
  /// The last lines of redis.log, for failure messages.
  [[nodiscard]] std::string log_tail(std::size_t lines = 20) const;

 private:
  bool start_once(std::string& why);
  void start();
  void stop() noexcept;
  void write_config() const;
  bool answers_ping() const;

  redis_server_options options_;
  std::string binary_;
  std::string dir_;
  std::string socket_path_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
};

}  // namespace sluice::testing
