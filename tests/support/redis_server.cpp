// redis_server: fork/exec of redis-server with a generated redis.conf, a
// free port picked by binding port 0, readiness by PING, stop by PID.
#include "support/redis_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace sluice::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A port the kernel considers free now: bind 127.0.0.1:0, read it, close.
std::uint16_t pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("redis_server: socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int e = errno;
    ::close(fd);
    throw std::runtime_error(std::string("redis_server: bind 127.0.0.1:0: ") + std::strerror(e));
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

// A free port whose port + 10000 (a cluster node's bus) is free too.
std::uint16_t pick_free_bus_port() {
  for (int attempt = 0; attempt < 200; ++attempt) {
    const std::uint16_t p = pick_free_port();
    if (p > 55535) continue;
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) continue;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(p + 10000));
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (free) return p;
  }
  throw std::runtime_error("redis_server: no free port with a free cluster bus port (port + 10000)");
}

// A redis.conf argument in double quotes (the password may hold spaces).
std::string quoted(const std::string& v) {
  std::string q = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + '"';
}

}  // namespace

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

redis_server::redis_server(redis_server_options options) : options_(std::move(options)) {
  binary_ = find_in_path("redis-server");
  if (binary_.empty())
    throw std::runtime_error(
        "redis_server: redis-server is not in PATH; the Redis tests need a real server "
        "(install it with scripts/setup.sh, Debian package redis-server)");
  const bool in_memory = (options_.in_memory_dir || options_.sentinel) && ::access("/dev/shm", W_OK | X_OK) == 0;
  std::string tmpl = std::string(in_memory ? "/dev/shm" : "/tmp") + "/sluice-redis-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw std::runtime_error("redis_server: mkdtemp " + tmpl + ": " + std::strerror(errno));
  dir_ = tmpl;
  if (options_.unix_socket) socket_path_ = dir_ + "/redis.sock";
  try {
    std::string why;
    for (int attempt = 0; attempt < 8; ++attempt) {
      port_ = options_.cluster_bus ? pick_free_bus_port() : pick_free_port();
      if (start_once(why)) return;
    }
    throw std::runtime_error("redis_server: could not start redis-server: " + why);
  } catch (...) {
    stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
    throw;
  }
}

redis_server::~redis_server() {
  stop();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void redis_server::write_config() const {
  std::ofstream f(dir_ + "/redis.conf", std::ios::trunc);
  if (options_.sentinel) {
    f << "port " << port_ << "\nbind 127.0.0.1\ndaemonize no\ndir " << dir_ << "\nlogfile " << dir_ << "/redis.log\n";
    for (const auto& line : options_.extra_config) f << line << "\n";
    if (!f) throw std::runtime_error("redis_server: cannot write " + dir_ + "/redis.conf");
    return;
  }
  if (options_.tls) {
    f << "port 0\ntls-port " << port_ << "\ntls-cert-file " << options_.tls->cert_file << "\ntls-key-file "
      << options_.tls->key_file << "\ntls-ca-cert-file " << options_.tls->ca_file << "\ntls-auth-clients "
      << (options_.tls->auth_clients ? "yes" : "no") << "\n";
  } else {
    f << "port " << port_ << "\n";
  }
  f << "bind 127.0.0.1\n"
    << "protected-mode yes\n"
    << "daemonize no\n"
    << "dir " << dir_ << "\n"
    << "logfile " << dir_ << "/redis.log\n"
    << "save \"\"\n"
    << "appendonly no\n"
    << "enable-debug-command local\n"
    << "tcp-backlog 128\n";
  if (!socket_path_.empty()) f << "unixsocket " << socket_path_ << "\nunixsocketperm 700\n";
  if (!options_.password.empty()) f << "requirepass " << quoted(options_.password) << "\n";
  for (const auto& u : options_.acl_users) f << "user " << u << "\n";
  if (!options_.maxmemory.empty())
    f << "maxmemory " << options_.maxmemory << "\nmaxmemory-policy " << options_.maxmemory_policy << "\n";
  for (const auto& line : options_.extra_config) f << line << "\n";
  if (!f) throw std::runtime_error("redis_server: cannot write " + dir_ + "/redis.conf");
}

bool redis_server::answers_ping() const {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port_);
  bool ok = false;
  if (options_.tls) {
    // A TLS port: accepting a connection is the sign of life.
    ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  } else if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const char ping[] = "PING\r\n";
    if (::send(fd, ping, sizeof ping - 1, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof ping - 1)) {
      pollfd p{fd, POLLIN, 0};
      char c = 0;
      // '+PONG' or '-NOAUTH ...': either way the server is up and answering.
      ok = ::poll(&p, 1, 200) == 1 && ::recv(fd, &c, 1, 0) == 1 && (c == '+' || c == '-');
    }
  }
  ::close(fd);
  return ok;
}

bool redis_server::start_once(std::string& why) {
  write_config();
  const std::string conf = dir_ + "/redis.conf";
  const std::string stderr_path = dir_ + "/stderr.log";
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("redis_server: fork: ") + std::strerror(errno));
  if (pid == 0) {
    // The server dies with the test process, whatever happens to it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    const int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
    }
    const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (err >= 0) ::dup2(err, 2);
    // Close the test's sockets (its Redis connections among them) in the child.
    for (int fd = 3; fd < 4096; ++fd) ::close(fd);
    if (options_.sentinel)
      ::execl(binary_.c_str(), binary_.c_str(), conf.c_str(), "--sentinel", static_cast<char*>(nullptr));
    else
      ::execl(binary_.c_str(), binary_.c_str(), conf.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_ = pid;
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      why = "redis-server exited during start-up (port " + std::to_string(port_) + "): " + log_tail(5);
      return false;  // most often the port was taken meanwhile: try another
    }
    if (answers_ping()) return true;
    std::this_thread::sleep_for(10ms);
  }
  stop();
  why = "redis-server did not answer PING within " + std::to_string(options_.start_timeout.count()) +
        " ms: " + log_tail(5);
  return false;
}

void redis_server::start() {
  std::string why;
  // Same port: redis-server sets SO_REUSEADDR, so a restart can rebind at once;
  // retry briefly in case the old socket lingers.
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (start_once(why)) return;
    std::this_thread::sleep_for(100ms);
  }
  throw std::runtime_error("redis_server: restart failed: " + why);
}

void redis_server::stop() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  paused_ = false;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(5ms);
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void redis_server::pause() {
  if (pid_ <= 0) throw std::logic_error("redis_server::pause: not running");
  ::kill(pid_, SIGSTOP);
  paused_ = true;
}

void redis_server::resume() {
  if (pid_ <= 0) throw std::logic_error("redis_server::resume: not running");
  ::kill(pid_, SIGCONT);
  paused_ = false;
}

void redis_server::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  paused_ = false;
}

void redis_server::restart() {
  stop();
  start();
}

std::string redis_server::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

std::string redis_server::unix_url() const {
  if (socket_path_.empty()) throw std::logic_error("redis_server::unix_url: started without unix_socket");
  return "unix://" + socket_path_;
}

std::string redis_server::log_tail(std::size_t lines) const {
  std::deque<std::string> tail;
  std::string line;
  for (const char* name : {"/stderr.log", "/redis.log"}) {
    std::ifstream f(dir_ + name);
    while (std::getline(f, line)) {
      if (line.empty()) continue;
      tail.push_back(line);
      if (tail.size() > lines) tail.pop_front();
    }
  }
  std::string out;
  for (const auto& l : tail) out += l + "\n";
  return out.empty() ? "(no log)" : out;
}

}  // namespace sluice::testing
