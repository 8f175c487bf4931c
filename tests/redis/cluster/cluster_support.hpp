// Shared by the Redis Cluster tests: one cluster per test process (3
// primaries + 3 replicas, started on first use, stopped by PID at exit), a
// store on it under a fresh prefix, a plain client on one node, and keys
// placed in chosen slots.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
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

/// A cluster whose every node loads sluice's Redis module but node 0 (a
/// primary): the store's module path with `?module=auto` (docs/redis.md,
/// "The store and the module"), started on first use.
inline testing::redis_cluster& mixed_module_cluster() {
  static testing::redis_cluster c([] {
    testing::redis_cluster_options o;
    o.node_config.assign(o.primaries * (1 + o.replicas), {"loadmodule " + testing::module_path()});
    o.node_config[0].clear();
    return o;
  }());
  return c;
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
