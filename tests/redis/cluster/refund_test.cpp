// Refunds through a real Redis Cluster (docs/redis.md, "Refunds"): a
// decision is refunded by its refund id, which names the slot of its id's
// record, from any store of the fleet, once; the plain id names no slot
// (error, no call), and a refund id with another tag finds nothing. The
// decisions through the Lua library and through the Redis module on every
// node (/library, /module; refunds are the library's either way).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redis/cluster/cluster_support.hpp"

namespace sluice::redis_test::cluster_refund_test {
namespace {

class ClusterRefunds : public ::testing::TestWithParam<cluster_path> {};

TEST_P(ClusterRefunds, ARefundIdRefundsOnceFromAnyStoreOfTheFleet) {
  const cluster_path path = GetParam();
  store_options o;
  o.key_prefix = fresh_prefix("refund");
  auto a = open_on_path(path, o);
  ASSERT_TRUE(a);
  auto b = open_on_path(path, o);  // a second process of the same fleet
  ASSERT_TRUE(b);
  const policy_id pa = a->define("q", policy("quota 1")).value();
  const policy_id pb = b->define("q", policy("quota 1")).value();
  // Keys on every primary; a key with a tag of its own, and one with none
  // (its record then takes the short tag of its slot).
  std::vector<std::string> keys = {"{team}:alice", ""};
  for (std::size_t node = 0; node < 3; ++node) keys.push_back("{" + tags_on(cluster_of(path), node, 1).at(0) + "}");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string id = "r-" + std::to_string(i);
    const check c{pa, keys[i], 1};
    const store_request r = one_check(c, 1, 1, id);
    ASSERT_TRUE(a->decide_at(r).d.allowed) << i;
    EXPECT_FALSE(a->decide_at(one_check(c, 2)).d.allowed) << i;  // spent
    const std::string rid = a->refund_id(r);
    ASSERT_NE(rid, id) << i;
    ASSERT_EQ(rid.substr(rid.size() - id.size()), id) << i;            // the id whole, behind the slot's tag
    EXPECT_EQ(b->refund_at(id, 3).status, refund_status::error) << i;  // names no slot
    EXPECT_EQ(b->refund_at("{elsewhere}" + id, 3).status, refund_status::unknown_id) << i;
    std::int64_t given[1] = {0};
    EXPECT_EQ(b->refund_at(rid, 3, {}, given).status, refund_status::refunded) << i;
    EXPECT_EQ(given[0], 1) << i;
    EXPECT_EQ(a->refund_at(rid, 4).status, refund_status::already_refunded) << i;
    const check cb{pb, keys[i], 1};
    EXPECT_TRUE(b->decide_at(one_check(cb, 5)).d.allowed) << i;  // the unit is back
  }
  EXPECT_EQ(a->redis_stats().mismatches + b->redis_stats().mismatches, 0U);
  expect_paths(*a, path, "", false);  // refunds and their reads: the library's
  expect_paths(*b, path, "", false);
}

INSTANTIATE_TEST_SUITE_P(Paths, ClusterRefunds, ::testing::Values(cluster_path::library, cluster_path::module),
                         path_name);

}  // namespace
}  // namespace sluice::redis_test::cluster_refund_test
