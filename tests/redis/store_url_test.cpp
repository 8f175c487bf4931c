// One way into the Redis store (docs/redis.md, "URLs, passwords"): the
// shared options in store_options, Redis's own settings in the URL's query.
// The query's store parameter (`eviction_poll`) on every scheme, its errors
// naming it, and the store reading the servers at the period the URL gives,
// against real redis-servers.
#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "redis/client/cluster.hpp"
#include "redis/client/url_query.hpp"
#include "redis/store_support.hpp"
#include "redis/url_support.hpp"

namespace sluice::redis_test::redis_store_url_test {
namespace {

using redis::bad_case;

/// The URL's eviction_poll, in ms (a failed test, and -1, if refused).
std::int64_t poll_of(std::string_view text) {
  auto s = redis::store_settings_of(text);
  EXPECT_TRUE(s) << text << ": " << (s ? "" : s.err().what());
  return s ? s.value().eviction_poll_ms : -1;
}

TEST(StoreUrl, EvictionPollStandsOnEveryScheme) {
  EXPECT_EQ(poll_of("redis://h"), 1000);  // the default
  EXPECT_EQ(poll_of("redis://:pw@h:7/2?eviction_poll=250ms"), 250);
  EXPECT_EQ(poll_of("redis://h?wait_replicas=1&eviction_poll=0"), 0);
  EXPECT_EQ(poll_of("rediss://h?verify=no&eviction_poll=86400000"), 86'400'000);
  EXPECT_EQ(poll_of("unix:///run/r.sock?db=2&eviction_poll=30"), 30);
  EXPECT_EQ(poll_of("unix://app:pw@/run/r.sock?eviction_poll=40ms"), 40);
  EXPECT_EQ(poll_of("redis+cluster://h:1,h:2?eviction_poll=5ms"), 5);
  EXPECT_EQ(poll_of("redis+cluster://a:p@h:1,h:2/0?eviction_poll=6"), 6);
  EXPECT_EQ(poll_of("redis+sentinel://s:1,s:2/mymaster/3?eviction_poll=7"), 7);
  EXPECT_EQ(poll_of("rediss+sentinel://s:1/mymaster?verify=no&eviction_poll=8ms"), 8);
  // The query does not move the URL's other parts.
  const redis::url u = redis::parsed("unix:///run/r.sock?eviction_poll=30&db=2");
  EXPECT_EQ(u.db, 2);
  EXPECT_EQ(u.socket_path, "/run/r.sock");
  auto seeds = redis::parse_cluster_url("redis+cluster://h:1,h:2?eviction_poll=5");
  ASSERT_TRUE(seeds) << seeds.err().what();
  ASSERT_EQ(seeds->size(), 2U);
  EXPECT_EQ((*seeds)[1].host, "h");
  EXPECT_EQ((*seeds)[1].port, 2);
}

class StoreUrlRejects : public ::testing::TestWithParam<bad_case> {};

TEST_P(StoreUrlRejects, NamingTheParameter) {
  const auto& c = GetParam();
  auto r = redis::store_settings_of(c.text);
  ASSERT_FALSE(r) << c.text << " parsed";
  EXPECT_EQ(r.err().field, c.part) << c.text << ": " << r.err().what();
  EXPECT_EQ(r.err().what().find("pw"), std::string::npos) << r.err().what();  // never the password
}

INSTANTIATE_TEST_SUITE_P(Hostile, StoreUrlRejects,
                         ::testing::Values(bad_case{"redis://:pw@h?eviction_poll=1s", "eviction_poll"},
                                           bad_case{"redis://h?eviction_poll=-1", "eviction_poll"},
                                           bad_case{"redis://h?eviction_poll=86400001", "eviction_poll"},
                                           bad_case{"redis://h?eviction_poll=", "eviction_poll"},
                                           bad_case{"redis://h?eviction_poll", "eviction_poll"},
                                           bad_case{"redis://h?eviction_poll=1&eviction_poll=2", "eviction_poll"},
                                           bad_case{"redis://h?eviction_poll=%zz", "eviction_poll"},
                                           bad_case{"unix://u:pw@/s?eviction_poll=x", "eviction_poll"},
                                           bad_case{"redis+cluster://:pw@h:1?eviction_poll=x", "eviction_poll"},
                                           bad_case{"redis+cluster://h:1,h:2?ca_file=/a", "query"},
                                           bad_case{"redis+cluster://h:1?wait_timeout=5", "query"},
                                           bad_case{"redis+sentinel://:pw@s:1/m?eviction_poll=x", "eviction_poll"}));

TEST(RedisStoreUrl, OpenRefusesABadParameterOrOptionNamingIt) {
  store_registry stores;
  register_redis_stores(stores);
  const auto field_of = [&](const store_options& o) {
    auto direct = redis_store::open(o);
    auto through = stores.open(o);
    EXPECT_FALSE(direct) << o.url;
    EXPECT_FALSE(through) << o.url;
    if (!direct && !through) {
      EXPECT_EQ(direct.err().what(), through.err().what());  // one way in
    }
    return direct ? std::string("(opened)") : direct.err().field;
  };
  store_options o;
  o.url = shared_server().url() + "?eviction_poll=1s";
  EXPECT_EQ(field_of(o), "eviction_poll");
  o.url = shared_server().url();
  o.grace = std::chrono::milliseconds(-1);
  EXPECT_EQ(field_of(o), "grace");
  o.grace = std::chrono::milliseconds(0);
  o.skew_tolerance = -1;
  EXPECT_EQ(field_of(o), "skew_tolerance");
}

/// The INFO commands `srv` has run (INFO commandstats), this call not counted.
std::uint64_t info_calls(redis::test_client& c) {
  const auto r = c.call({"INFO", "commandstats"});
  const auto* rep = std::get_if<redis::reply>(&r);
  if (rep == nullptr || !rep->as_string()) {
    ADD_FAILURE() << "INFO commandstats failed";
    return 0;
  }
  const std::string_view text = *rep->as_string();
  constexpr std::string_view head = "cmdstat_info:calls=";
  const auto at = text.find(head);
  if (at == std::string_view::npos) return 0;
  std::uint64_t n = 0;
  (void)std::from_chars(text.data() + at + head.size(), text.data() + text.size(), n);
  return n;
}

redis::test_client client_of(const testing::redis_server& srv) {
  redis::async_client_options co;
  co.where = redis::parse_url(srv.url()).value();
  co.command_timeout = std::chrono::seconds(10);
  return redis::test_client(co);
}

// The period rides in the URL and reaches the store's watch: a store with
// `?eviction_poll=20ms` reads its server (INFO) 60 times while one with
// `?eviction_poll=0` reads its own only at open — over more than the default
// second, so the default would have read it too.
TEST(RedisStoreUrl, EvictionPollFromTheUrlIsHowOftenTheStoreReadsItsServers) {
  testing::redis_server polled_srv;
  testing::redis_server quiet_srv;
  store_options o;
  o.key_prefix = fresh_prefix("poll");
  o.url = polled_srv.url() + "?eviction_poll=20ms";
  auto polled = redis_store::open(o);
  ASSERT_TRUE(polled) << polled.err().what();
  o.url = quiet_srv.url() + "?eviction_poll=0";
  auto quiet = redis_store::open(o);
  ASSERT_TRUE(quiet) << quiet.err().what();
  auto pc = client_of(polled_srv);
  auto qc = client_of(quiet_srv);
  const std::uint64_t quiet_start = info_calls(qc);  // the store's one read at open
  const std::uint64_t polled_start = info_calls(pc);
  std::uint64_t own = 0;  // this test's INFO calls on the polled server since polled_start
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return info_calls(pc) - polled_start - own++ >= 60; }));
  EXPECT_GT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
  EXPECT_EQ(info_calls(qc), quiet_start + 1);  // only this test's own first call
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_url_test
