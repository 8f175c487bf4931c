// parse_cluster_url: seed lists, credentials, and hostile inputs whose
// errors must name the part at fault; open() refusing what a cluster cannot
// hold (a db, braces in the prefix).
#include <gtest/gtest.h>

#include <string>

#include "redis/client/cluster.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/redis/store.hpp"

namespace sluice::redis::redis_cluster_url_test {
namespace {

TEST(ClusterUrl, SeedsWithTheirCredentials) {
  auto r = parse_cluster_url("redis+cluster://app:s%40cret@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002,host");
  ASSERT_TRUE(r) << r.err().what();
  const auto& s = r.value();
  ASSERT_EQ(s.size(), 4U);
  EXPECT_EQ(s[0].host, "10.0.0.1");
  EXPECT_EQ(s[0].port, 7000);
  EXPECT_EQ(s[1].host, "10.0.0.2");
  EXPECT_EQ(s[2].host, "::1");
  EXPECT_EQ(s[2].port, 7002);
  EXPECT_EQ(s[3].host, "host");
  EXPECT_EQ(s[3].port, 6379);
  for (const auto& u : s) {
    EXPECT_EQ(u.user, "app");
    EXPECT_EQ(u.password, "s@cret");
    EXPECT_EQ(u.db, 0);
  }
  EXPECT_TRUE(parse_cluster_url("redis+cluster://h:1/0"));
  EXPECT_TRUE(parse_cluster_url("redis+cluster://h:1/"));
  EXPECT_TRUE(is_cluster_url("redis+cluster://h:1"));
  EXPECT_FALSE(is_cluster_url("redis://h:1"));
}

struct cluster_bad_case {
  const char* url;
  const char* field;
};

class ClusterUrlRejects : public ::testing::TestWithParam<cluster_bad_case> {};

TEST_P(ClusterUrlRejects, NamingThePart) {
  const auto r = parse_cluster_url(GetParam().url);
  ASSERT_FALSE(r) << GetParam().url;
  EXPECT_EQ(r.err().field, GetParam().field) << GetParam().url << ": " << r.err().what();
}

INSTANTIATE_TEST_SUITE_P(
    Hostile, ClusterUrlRejects,
    ::testing::Values(
        cluster_bad_case{"redis://h:1", "scheme"}, cluster_bad_case{"redis+cluster://", "seed"},
        cluster_bad_case{"redis+cluster://h:1,", "seed"}, cluster_bad_case{"redis+cluster://,h:1", "seed"},
        cluster_bad_case{"redis+cluster://h:1,,h:2", "seed"}, cluster_bad_case{"redis+cluster://h:0", "port"},
        cluster_bad_case{"redis+cluster://h:1,h:99999", "port"}, cluster_bad_case{"redis+cluster://h:x", "port"},
        cluster_bad_case{"redis+cluster://h:1,bad host:2", "host"}, cluster_bad_case{"redis+cluster://h:1/1", "db"},
        cluster_bad_case{"redis+cluster://h:1/x", "db"}, cluster_bad_case{"redis+cluster://:%zz@h:1", "password"},
        cluster_bad_case{"redis+cluster://[::1:1", "host"}, cluster_bad_case{"redis+cluster://h:1?x=1", "query"},
        cluster_bad_case{"redis+cluster://h:1?wait_replicas=1", "query"}));

TEST(ClusterUrl, TheModuleSettingHoldsForEverySeed) {
  for (const std::string_view text :
       {"redis+cluster://a:1,b:2?module=off", "redis+cluster://u:p@a:1,b:2/0?module=off"}) {
    const auto seeds = parse_cluster_url(text);
    ASSERT_TRUE(seeds.ok()) << text << ": " << seeds.err().what();
    ASSERT_EQ(seeds.value().size(), 2U);
    for (const auto& s : seeds.value()) EXPECT_EQ(s.module, module_use::off) << text;
    EXPECT_EQ(seeds.value()[1].host, "b");
  }
  EXPECT_EQ(module_use_in("redis+cluster://a:1?module=on"), module_use::on);
  EXPECT_EQ(module_use_in("redis+sentinel://s:1/m?module=off"), module_use::off);
  EXPECT_EQ(module_use_in("redis://h"), module_use::automatic);
}

TEST(ClusterUrl, PasswordHoldingCommaOrSlashIsTheUserinfos) {
  auto r = parse_cluster_url("redis+cluster://app:p,a/s@s@h:1,h:2");
  ASSERT_TRUE(r) << r.err().what();
  ASSERT_EQ(r->size(), 2U);
  for (const auto& u : *r) EXPECT_EQ(u.password, "p,a/s@s");
}

// The password given apart from the URL (store.password_file,
// SLUICE_REDIS_PASSWORD): exactly one source, and a user needs one.
TEST(StoreUrl, PasswordFromOneSourceOnly) {
  for (const std::string url : {"redis://app@h:1", "unix://app@/s", "redis+cluster://app@h:1,h:2"}) {
    store_options o;
    o.url = url;
    auto none = redis_store::open(o);
    ASSERT_FALSE(none) << url;
    EXPECT_EQ(none.err().field, "password") << url;
    o.password = "from-a-file";
    EXPECT_TRUE(redis_store::open(o)) << url;
  }
  for (const std::string url : {"redis://:Xy7q@h:1", "unix://:Xy7q@/s", "redis+cluster://:Xy7q@h:1"}) {
    store_options o;
    o.url = url;
    o.password = "from-a-file";
    auto twice = redis_store::open(o);
    ASSERT_FALSE(twice) << url;
    EXPECT_EQ(twice.err().field, "password") << url;
    EXPECT_EQ(twice.err().what().find("from-a-file"), std::string::npos);
    EXPECT_EQ(twice.err().what().find("Xy7q"), std::string::npos);
  }
}

TEST(ClusterUrl, TooManySeeds) {
  std::string u = "redis+cluster://";
  for (int i = 0; i < 65; ++i) u += (i ? ",h:" : "h:") + std::to_string(1000 + i);
  const auto r = parse_cluster_url(u);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().field, "seed");
}

TEST(ClusterUrl, TheStoreRefusesWhatAClusterCannotHold) {
  store_options o;
  o.url = "redis+cluster://127.0.0.1:1/3";
  auto db = redis_store::open(o);
  ASSERT_FALSE(db);
  EXPECT_EQ(db.err().field, "db");
  o.url = "redis+cluster://127.0.0.1:1";
  o.key_prefix = "p{x}:";
  auto prefix = redis_store::open(o);
  ASSERT_FALSE(prefix);
  EXPECT_EQ(prefix.err().field, "prefix");
  o.key_prefix = "p:";
  auto ok = redis_store::open(o);  // connects lazily
  ASSERT_TRUE(ok) << ok.err().what();
  EXPECT_EQ(ok.value()->define("x{y", parse_policy("quota 1").value()).err().field, "name");
  // On one server braces are fine (nothing is routed by slot).
  o.url = "redis://127.0.0.1:1";
  o.key_prefix = "p{x}:";
  auto single = redis_store::open(o);
  ASSERT_TRUE(single) << single.err().what();
}

}  // namespace
}  // namespace sluice::redis::redis_cluster_url_test
