// Shared by the Redis Cluster tests: one cluster per test process (3
// primaries + 3 replicas, started on first use, stopped by PID at exit), a
// store on it under a fresh prefix, a plain client on one node, and keys
// placed in chosen slots.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "redis/client/slots.hpp"
#include "redis/store_support.hpp"
#include "redis/test_client.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/redis/store.hpp"
#include "support/redis_cluster.hpp"

namespace sluice::redis_test {

/// The process's cluster (tests that kill a node start their own).
inline testing::redis_cluster& shared_cluster() {
  static testing::redis_cluster c;
  return c;
}

/// `o` with every node loading sluice's Redis module (docs/redis.md, "The
/// store and the module"), but node `without` (by start order: the
/// primaries first) when given.
inline testing::redis_cluster_options module_nodes(testing::redis_cluster_options o = {},
                                                   std::optional<std::size_t> without = std::nullopt) {
  o.node_config.resize(o.primaries * (1 + o.replicas));
  for (std::size_t i = 0; i < o.node_config.size(); ++i)
    if (i != without) o.node_config[i].push_back("loadmodule " + testing::module_path());
  return o;
}

/// A cluster whose every node loads the module: the store's module path
/// with `?module=on`, started on first use.
inline testing::redis_cluster& module_cluster() {
  static testing::redis_cluster c(module_nodes());
  return c;
}

/// A cluster whose every node loads the module but node 0 (a primary): the
/// store's module path with `?module=auto`, started on first use.
inline testing::redis_cluster& mixed_module_cluster() {
  static testing::redis_cluster c(module_nodes({}, 0));
  return c;
}

/// The path a Cluster test's decisions take.
enum class cluster_path {
  library,       ///< a cluster without the module, `?module=off`: the Lua library
  module,        ///< the module on every node, `?module=on`
  mixed_module,  ///< the module on every node but one, `?module=auto`
};

/// Options of a cluster of a test's own (one that kills or stops a node)
/// for `path`: `o`, with the module on every node (module) or every node but
/// node 0 (mixed_module).
inline testing::redis_cluster_options options_for(cluster_path path, testing::redis_cluster_options o = {}) {
  return path == cluster_path::library  ? o
         : path == cluster_path::module ? module_nodes(std::move(o))
                                        : module_nodes(std::move(o), 0);
}

/// The store URL's query for `path`.
inline std::string module_query(cluster_path path) {
  return path == cluster_path::library ? "?module=off" : path == cluster_path::module ? "?module=on" : "?module=auto";
}

/// The shared cluster of `path` (a test that kills or stops a node starts
/// its own, with module_nodes()).
inline testing::redis_cluster& cluster_of(cluster_path path) {
  return path == cluster_path::library  ? shared_cluster()
         : path == cluster_path::module ? module_cluster()
                                        : mixed_module_cluster();
}

/// A test name's end for `path`: "", "_module", "_mixed_module".
inline std::string path_suffix(cluster_path path) {
  return path == cluster_path::library ? "" : path == cluster_path::module ? "_module" : "_mixed_module";
}

/// The parameter's name of a test run on each path: "library", "module".
inline std::string path_name(const ::testing::TestParamInfo<cluster_path>& i) {
  return i.param == cluster_path::library ? "library" : i.param == cluster_path::module ? "module" : "mixed_module";
}

/// A store on `cluster` (the shared one by default) under a fresh prefix,
/// `query` after its URL (e.g. "?module=off").
inline std::unique_ptr<redis_store> open_cluster_store(store_options o = {}, testing::redis_cluster* cluster = nullptr,
                                                       const std::string& query = "") {
  o.url = (cluster != nullptr ? cluster : &shared_cluster())->url() + query;
  if (o.key_prefix == "sluice:") o.key_prefix = fresh_prefix("cluster");
  auto s = redis_store::open(o);
  if (!s) ADD_FAILURE() << s.err().what();
  return s ? std::move(s).value() : nullptr;
}

/// A store on `cluster` (cluster_of(path) by default) through `path`.
inline std::unique_ptr<redis_store> open_on_path(cluster_path path, store_options o = {},
                                                 testing::redis_cluster* cluster = nullptr) {
  return open_cluster_store(std::move(o), cluster != nullptr ? cluster : &cluster_of(path), module_query(path));
}

/// The calls went `path`'s way, as the store shows it (redis_stats): none to
/// the module through the library; through the module, at least two nodes
/// on the module's path (a node not connected yet shows "unknown") and calls
/// sent to it, most of them when `decisions_only` (a node's first calls may
/// go to the library, sent with its connection's probe before it answered;
/// refunds and releases are the library's: docs/redis.md); on a mixed
/// cluster, node `without` (its address) by the library, and calls each way.
inline void expect_paths(const redis_store& st, cluster_path path, const std::string& without = "",
                         bool decisions_only = true) {
  const auto s = st.redis_stats();
  if (path == cluster_path::library) {
    EXPECT_EQ(s.module_calls, 0U);
    return;
  }
  EXPECT_GT(s.module_calls, 0U);
  std::size_t module_nodes = 0, library_nodes = 0;
  for (const auto& p : s.module_paths) {
    if (path == cluster_path::mixed_module && p.node == without) {
      EXPECT_EQ(p.path, "library (no module)");
      ++library_nodes;
    } else if (p.path.starts_with("module")) {
      ++module_nodes;
    }
  }
  EXPECT_GE(module_nodes, 2U);
  if (path == cluster_path::mixed_module) {
    EXPECT_EQ(library_nodes, 1U);
    EXPECT_GT(s.library_calls, 0U);
  } else if (decisions_only) {
    EXPECT_GT(s.module_calls, s.library_calls);
  }
}

/// A plain (single-node) client on node `i` of `cluster`.
inline std::unique_ptr<redis::test_client> node_client(testing::redis_cluster& cluster, std::size_t i) {
  redis::async_client_options co;
  co.where = redis::parse_url("redis://" + cluster.address(i)).value();
  co.command_timeout = std::chrono::seconds(5);
  return std::make_unique<redis::test_client>(co);
}

/// The policy of an expression (docs/policy-expressions.md).
inline any_policy policy(std::string_view text) {
  auto p = parse_policy(text);
  if (!p) ADD_FAILURE() << text << ": " << p.err().what();
  return std::move(p).value();
}

/// `count` tags ("t<n>") such that keys `{<tag>}...` (which hash by
/// `{<tag>`, their part up to the first '}' inside the store's braces) are
/// served by node `node` of `cluster` (as it says now), searching n from
/// `from`.
inline std::vector<std::string> tags_on(testing::redis_cluster& cluster, std::size_t node, std::size_t count,
                                        std::size_t from = 0) {
  std::vector<std::pair<int, int>> ranges;
  const std::string addr = cluster.address(node);
  for (const auto& n : cluster.nodes(cluster.live_node()))
    if (n.address == addr) ranges = n.slots;
  std::vector<std::string> out;
  for (std::size_t n = from; out.size() < count && n < from + 10'000'000; ++n) {
    const std::string tag = "t" + std::to_string(n);
    const int slot = *redis::braced_key_slot("{" + tag + "}");
    for (const auto& [a, b] : ranges)
      if (slot >= a && slot <= b) {
        out.push_back(tag);
        break;
      }
  }
  return out;
}

}  // namespace sluice::redis_test
