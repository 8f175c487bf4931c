// redis_cluster: cluster-enabled redis_servers, `redis-cli --cluster
// create`, CLUSTER NODES parsing, and bounded waits; redis-cli runs through
// run_tool (fork/exec, a pipe, a deadline, kill by PID).
#include "support/redis_cluster.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

std::string find_tool(const std::string& name) {
  if (auto path = find_in_path(name); !path.empty()) return path;
  throw std::runtime_error("redis_cluster: " + name +
                           " is not in PATH; the cluster tests need it (scripts/setup.sh, Debian packages "
                           "redis-server and redis-tools)");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string tail(const std::string& s, std::size_t n = 1500) { return s.size() <= n ? s : s.substr(s.size() - n); }

/// What a child that outlived its timeout was doing, from /proc: whether it
/// ever became `program` (a child stuck between fork and exec has not) and
/// where the kernel has it waiting.
std::string what_it_was_doing(pid_t pid, const std::string& program) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink(proc + "/exe", ec);
  std::string out = ec                                              ? "no /proc entry"
                    : std::filesystem::equivalent(exe, program, ec) ? "it was running"
                                                                    : "it never reached exec";
  std::ifstream wchan(proc + "/wchan");
  std::string where;
  if (std::getline(wchan, where) && !where.empty() && where != "0") out += ", waiting in " + where;
  return out;
}

}  // namespace

tool_output run_tool(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  if (argv.empty()) throw std::logic_error("run_tool: no program");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("run_tool: pipe: ") + std::strerror(errno));
  // Everything the child needs is made before fork: in the child of a
  // process with other threads, only async-signal-safe calls are safe.
  // Another thread may have held the allocator's lock at the fork (with
  // ASan's allocator, the child's first malloc then waited for ever: a
  // redis-cli that never ran, killed at its timeout with no output).
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("run_tool: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    for (int fd = 3; fd < 4096; ++fd) ::close(fd);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  tool_output r;
  const auto deadline = steady::now() + timeout;
  bool timed_out = false;
  char buf[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    r.out.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  if (timed_out) {
    const std::string seen = what_it_was_doing(pid, argv[0]);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    throw std::runtime_error("run_tool: " + argv[0] + " " + (argv.size() > 1 ? argv[1] : "") + " took longer than " +
                             std::to_string(timeout.count()) + " ms (killed; " + seen + "): " + tail(r.out, 500));
  }
  ::waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

redis_cluster::redis_cluster(redis_cluster_options options) : options_(std::move(options)) {
  cli_binary_ = find_tool("redis-cli");
  const std::size_t n = options_.primaries * (1 + options_.replicas);
  for (std::size_t i = 0; i < n; ++i) start_node();
  seeds_ = n;
  std::vector<std::string> args{cli_binary_, "--cluster", "create"};
  for (std::size_t i = 0; i < n; ++i) args.push_back(address(i));
  args.insert(args.end(), {"--cluster-replicas", std::to_string(options_.replicas), "--cluster-yes"});
  const auto r = run_tool(args, options_.ready_timeout);
  if (r.status != 0 || !contains(r.out, "All 16384 slots covered"))
    throw std::runtime_error("redis_cluster: redis-cli --cluster create failed (" + std::to_string(r.status) +
                             "): " + tail(r.out));
  wait_ready(options_.ready_timeout);
}

redis_cluster::~redis_cluster() {
  // Each redis_server stops its process by PID (SIGTERM, then SIGKILL).
  while (!nodes_.empty()) nodes_.pop_back();
}

std::size_t redis_cluster::start_node() {
  redis_server_options o;
  o.cluster_bus = true;
  o.extra_config = {"cluster-enabled yes", "cluster-config-file nodes.conf",
                    "cluster-node-timeout " + std::to_string(options_.node_timeout.count()),
                    // A replica may take over however long its link was down:
                    // a test kills a primary under load.
                    "cluster-replica-validity-factor 0", "cluster-require-full-coverage yes",
                    // Start a replica's first sync at once (the default waits 5 s
                    // for more replicas), and stop without waiting for replicas.
                    "repl-diskless-sync-delay 0", "shutdown-timeout 0"};
  if (nodes_.size() < options_.node_config.size())
    for (const auto& line : options_.node_config[nodes_.size()]) o.extra_config.push_back(line);
  nodes_.push_back(std::make_unique<redis_server>(o));
  return nodes_.size() - 1;
}

std::string redis_cluster::address(std::size_t i) const { return "127.0.0.1:" + std::to_string(nodes_.at(i)->port()); }

std::string redis_cluster::url() const {
  std::string u = "redis+cluster://";
  for (std::size_t i = 0; i < seeds_; ++i) u += (i ? "," : "") + address(i);
  return u;
}

tool_output redis_cluster::cli(std::size_t i, const std::vector<std::string>& args,
                               std::chrono::milliseconds timeout) const {
  std::vector<std::string> argv{cli_binary_, "-h", "127.0.0.1", "-p", std::to_string(nodes_.at(i)->port())};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_tool(argv, timeout);
}

std::size_t redis_cluster::live_node() const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i]->running()) return i;
  throw std::runtime_error("redis_cluster: no node is running");
}

std::vector<cluster_node_info> redis_cluster::nodes(std::size_t asked) const {
  const auto r = cli(asked, {"CLUSTER", "NODES"});
  if (r.status != 0) throw std::runtime_error("redis_cluster: CLUSTER NODES failed: " + r.out);
  std::vector<cluster_node_info> out;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::vector<std::string> w;
    for (std::string x; f >> x;) w.push_back(x);
    if (w.size() < 8) continue;
    cluster_node_info n;
    n.id = w[0];
    n.address = w[1].substr(0, w[1].find('@'));
    n.primary = contains("," + w[2] + ",", ",master,");
    n.failed = contains("," + w[2] + ",", ",fail,") || contains("," + w[2] + ",", ",fail?,");
    if (w[3] != "-") n.primary_id = w[3];
    for (std::size_t k = 8; k < w.size(); ++k) {
      if (w[k].front() == '[') continue;  // an open migration
      const auto dash = w[k].find('-');
      const int a = std::stoi(w[k].substr(0, dash));
      const int b = dash == std::string::npos ? a : std::stoi(w[k].substr(dash + 1));
      n.slots.emplace_back(a, b);
    }
    out.push_back(std::move(n));
  }
  return out;
}

std::size_t redis_cluster::index_of(const std::string& addr) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (address(i) == addr) return i;
  throw std::runtime_error("redis_cluster: no node at " + addr);
}

std::string redis_cluster::id_of(std::size_t i) const {
  const auto r = cli(i, {"CLUSTER", "MYID"});
  std::string id = r.out.substr(0, r.out.find('\n'));
  if (r.status != 0 || id.size() != 40) throw std::runtime_error("redis_cluster: CLUSTER MYID: " + r.out);
  return id;
}

std::vector<std::size_t> redis_cluster::primaries() const {
  std::vector<std::size_t> out;
  for (const auto& n : nodes(live_node()))
    if (n.primary && !n.failed && !n.slots.empty()) out.push_back(index_of(n.address));
  std::sort(out.begin(), out.end());
  return out;
}

std::size_t redis_cluster::owner_of(std::uint16_t slot) const { return slot_owners().at(slot); }

std::vector<std::size_t> redis_cluster::slot_owners() const {
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::size_t> out(16384, none);
  for (const auto& n : nodes(live_node()))
    if (n.primary && !n.failed)
      for (const auto& [a, b] : n.slots)
        for (int s = a; s <= b && s < 16384; ++s) out[static_cast<std::size_t>(s)] = index_of(n.address);
  for (std::size_t s = 0; s < out.size(); ++s)
    if (out[s] == none) throw std::runtime_error("redis_cluster: no primary serves slot " + std::to_string(s));
  return out;
}

std::optional<std::size_t> redis_cluster::replica_of(std::size_t primary) const {
  const std::string pid = id_of(primary);
  for (const auto& n : nodes(live_node())) {
    if (n.primary_id != pid || n.failed) continue;
    const std::size_t i = index_of(n.address);
    if (nodes_[i]->running()) return i;
  }
  return std::nullopt;
}

std::string redis_cluster::reshard(std::size_t from, std::size_t to, int slots,
                                   std::chrono::milliseconds timeout) const {
  // redis-cli refuses to reshard (and moves nothing) while any node's view
  // of the slots differs from the others': right after another reshard, a
  // replica may not have heard of the last slots moved yet.
  wait_ready(options_.ready_timeout);
  const auto r = run_tool({cli_binary_, "--cluster", "reshard", address(from), "--cluster-from", id_of(from),
                           "--cluster-to", id_of(to), "--cluster-slots", std::to_string(slots), "--cluster-yes"},
                          timeout);
  if (r.status != 0 || contains(r.out, "[ERR]"))
    throw std::runtime_error("redis_cluster: reshard failed (" + std::to_string(r.status) + "): " + tail(r.out));
  return r.out;
}

std::size_t redis_cluster::add_node() {
  const std::size_t i = start_node();
  const std::size_t peer = live_node();
  const auto r = cli(i, {"CLUSTER", "MEET", "127.0.0.1", std::to_string(nodes_[peer]->port())});
  if (r.status != 0 || !contains(r.out, "OK")) throw std::runtime_error("redis_cluster: CLUSTER MEET: " + r.out);
  const std::string id = id_of(i);
  const auto deadline = steady::now() + options_.ready_timeout;
  while (true) {
    bool known = true;
    for (std::size_t k = 0; k < nodes_.size() && known; ++k) {
      if (!nodes_[k]->running()) continue;
      const auto seen = nodes(k);
      known = std::any_of(seen.begin(), seen.end(), [&](const cluster_node_info& n) { return n.id == id; }) &&
              (k != i || seen.size() >= nodes_.size());
    }
    if (known) break;
    if (steady::now() > deadline) throw std::runtime_error("redis_cluster: the new node did not join in time");
    std::this_thread::sleep_for(50ms);
  }
  wait_ready(options_.ready_timeout);
  return i;
}

void redis_cluster::kill9(std::size_t i) { nodes_.at(i)->kill9(); }

void redis_cluster::wait_ready(std::chrono::milliseconds timeout) const {
  const auto deadline = steady::now() + timeout;
  std::string last;
  while (true) {
    bool ok = true;
    for (std::size_t i = 0; i < nodes_.size() && ok; ++i) {
      if (!nodes_[i]->running()) continue;
      const auto info = cli(i, {"CLUSTER", "INFO"});
      ok = contains(info.out, "cluster_state:ok");
      if (!ok) last = address(i) + ": " + info.out.substr(0, 200);
      if (!ok) break;
      const auto repl = cli(i, {"INFO", "replication"});
      if (contains(repl.out, "role:slave")) {
        ok = contains(repl.out, "master_link_status:up");
        if (!ok) last = address(i) + ": replica link not up";
      }
    }
    if (ok) {
      const auto check = run_tool({cli_binary_, "--cluster", "check", address(live_node())}, 10s);
      ok = contains(check.out, "All nodes agree about slots configuration") &&
           contains(check.out, "All 16384 slots covered") && !contains(check.out, "[WARNING]") &&
           !contains(check.out, "[ERR]");
      if (!ok) last = tail(check.out, 600);
    }
    if (ok) return;
    if (steady::now() > deadline)
      throw std::runtime_error("redis_cluster: not ready within " + std::to_string(timeout.count()) + " ms: " + last);
    std::this_thread::sleep_for(50ms);
  }
}

}  // namespace sluice::testing
