// A real Redis Cluster for tests: primaries and replicas, each a
// redis-server (redis_server.hpp) with `cluster-enabled yes` on a free
// 127.0.0.1 port whose port + 10000 (the cluster bus) is free too, joined by
// `redis-cli --cluster create`, stopped by PID. No mocks.
//
// If redis-server or redis-cli is not installed the constructor throws, so
// the test FAILS with the message (scripts/setup.sh installs them).
//
//   sluice::testing::redis_cluster c;        // 3 primaries + 3 replicas, ready
//   store_options.url = c.url();             // redis+cluster://127.0.0.1:p1,...
//   c.reshard(c.primaries()[0], c.primaries()[1], 500);
//   c.kill9(c.primaries()[0]);               // its replica takes over
//
// Every wait is bounded in time; every redis-cli run has a timeout (then it
// is killed by its PID and the call throws).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/redis_server.hpp"

namespace sluice::testing {

/// What a tool printed (stdout and stderr together) and its exit status.
struct tool_output {
  int status = -1;
  std::string out;
};

/// Runs `argv` (argv[0] a path), without a shell, for at most `timeout`:
/// past it the process is killed by its PID and this throws.
tool_output run_tool(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

/// How to build the cluster.
struct redis_cluster_options {
  std::size_t primaries = 3;
  /// Replicas of each primary.
  std::size_t replicas = 1;
  /// `cluster-node-timeout`: a primary unreachable this long is failed over.
  std::chrono::milliseconds node_timeout{1000};
  /// Bound on creating the cluster and on every wait for it to be ready.
  std::chrono::milliseconds ready_timeout{30'000};
  /// Extra redis.conf lines per node, by start order (a node past the end:
  /// none), e.g. a `loadmodule` on some nodes.
  std::vector<std::vector<std::string>> node_config{};
};

/// One node as `CLUSTER NODES` shows it.
struct cluster_node_info {
  std::string id;
  std::string address;  ///< "127.0.0.1:port"
  bool primary = false;
  bool failed = false;                     ///< flagged "fail" (or "fail?")
  std::string primary_id;                  ///< a replica's primary; empty for a primary
  std::vector<std::pair<int, int>> slots;  ///< ranges served, inclusive (open migrations left out)
};

/// A running cluster. Not copyable; the destructor stops every node.
class redis_cluster {
 public:
  explicit redis_cluster(redis_cluster_options options = {});
  ~redis_cluster();
  redis_cluster(const redis_cluster&) = delete;
  redis_cluster& operator=(const redis_cluster&) = delete;

  /// Nodes started so far (killed ones included), in start order.
  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  [[nodiscard]] redis_server& node(std::size_t i) { return *nodes_.at(i); }
  /// "127.0.0.1:<port>" of node i.
  [[nodiscard]] std::string address(std::size_t i) const;
  /// `redis+cluster://` with every node started at construction as a seed.
  [[nodiscard]] std::string url() const;

  /// `redis-cli -h 127.0.0.1 -p <node i> args...`.
  tool_output cli(std::size_t i, const std::vector<std::string>& args,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

  /// CLUSTER NODES as node `asked` sees it.
  [[nodiscard]] std::vector<cluster_node_info> nodes(std::size_t asked) const;
  /// A node that is running (the first one).
  [[nodiscard]] std::size_t live_node() const;
  /// Node i's cluster id.
  [[nodiscard]] std::string id_of(std::size_t i) const;
  /// The nodes that are primaries serving slots, as a live node sees it.
  [[nodiscard]] std::vector<std::size_t> primaries() const;
  /// The node serving `slot`, as a live node sees it.
  [[nodiscard]] std::size_t owner_of(std::uint16_t slot) const;
  /// The node serving each of the 16384 slots (one CLUSTER NODES).
  [[nodiscard]] std::vector<std::size_t> slot_owners() const;
  /// A running replica of node `primary`, if any.
  [[nodiscard]] std::optional<std::size_t> replica_of(std::size_t primary) const;

  /// Moves `slots` hash slots from node `from` to node `to` with `redis-cli
  /// --cluster reshard` once every node agrees on the slots (wait_ready);
  /// returns its output; throws when it fails.
  std::string reshard(std::size_t from, std::size_t to, int slots,
                      std::chrono::milliseconds timeout = std::chrono::seconds(120)) const;

  /// Starts a new empty primary and has it `CLUSTER MEET` the cluster
  /// (which, unlike `redis-cli --cluster add-node`, copies no FUNCTION
  /// library); waits until every running node knows it. Returns its index.
  std::size_t add_node();

  /// SIGKILL to node i (its replica takes over after node_timeout).
  void kill9(std::size_t i);

  /// Waits until every running node says `cluster_state:ok`, `redis-cli
  /// --cluster check` finds every slot covered, agreed and not migrating,
  /// and every running replica's link to its primary is up. Throws past
  /// `timeout`, with what was last seen.
  void wait_ready(std::chrono::milliseconds timeout) const;

 private:
  std::size_t start_node();
  [[nodiscard]] std::size_t index_of(const std::string& address) const;

  redis_cluster_options options_;
  std::string cli_binary_;
  std::vector<std::unique_ptr<redis_server>> nodes_;
  std::size_t seeds_ = 0;
};

}  // namespace sluice::testing
