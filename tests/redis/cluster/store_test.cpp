// The Redis store on a real cluster: the slot rule for requests of several
// checks (cross-slot: an error that charges nothing; one `{tag}`: atomic),
// request ids in the request's slot, names and prefixes with braces
// refused, the library on every primary, and many threads on one key. The
// decisions' tests run through the Lua library and through the Redis module
// on every node (`ClusterStoreOnPath`, names ending /library and /module:
// docs/redis.md, "The store and the module").
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "redis/cluster/cluster_support.hpp"

namespace sluice::redis_test::cluster_store_test {
namespace {

store_request request(std::span<const check> checks, tick now, std::int64_t cost = 1, std::string_view id = {}) {
  return store_request{.checks = checks, .now = now, .cost = cost, .id = id};
}

/// The units a quota check has left: a peek of cost 1 reports what would
/// remain after it.
std::int64_t remaining(redis_store& st, const check& c, tick now) {
  const auto d = st.peek_at(one_check(c, now));
  EXPECT_EQ(d.from, source::store);
  return d.d.allowed ? d.d.remaining + 1 : 0;
}

/// The store's decisions on a cluster through each path: the library on
/// the shared cluster, the module on every node of the module cluster.
class ClusterStoreOnPath : public ::testing::TestWithParam<cluster_path> {
 protected:
  [[nodiscard]] cluster_path path() const { return GetParam(); }
  [[nodiscard]] testing::redis_cluster& cluster() const { return cluster_of(path()); }
  [[nodiscard]] std::unique_ptr<redis_store> open(store_options o = {}) const { return open_on_path(path(), o); }
};

TEST_P(ClusterStoreOnPath, ACrossSlotRequestIsAnErrorAndChargesNothing) {
  auto st = open();
  ASSERT_TRUE(st);
  const auto q = st->define("q", policy("quota 10")).value();
  ASSERT_NE(redis::braced_key_slot("{a}"), redis::braced_key_slot("{b}"));
  const check two[] = {{q, "{a}"}, {q, "{b}"}};
  const auto d = st->decide_at(request(two, 1));
  EXPECT_EQ(d.from, source::error);
  EXPECT_FALSE(d.d.allowed);
  // In a batch, beside requests that are decided.
  const check one_a[] = {{q, "{a}"}};
  std::vector<store_request> batch = {request(one_a, 2), request(two, 2), request(one_a, 2)};
  std::vector<store_decision> out(batch.size());
  st->decide_many_at(batch, out);
  EXPECT_EQ(out[0].from, source::store);
  EXPECT_EQ(out[1].from, source::error);
  EXPECT_EQ(out[2].from, source::store);
  EXPECT_EQ(remaining(*st, two[0], 3), 8);   // the two single checks only
  EXPECT_EQ(remaining(*st, two[1], 3), 10);  // never charged
  const auto s = st->redis_stats();
  EXPECT_EQ(s.cross_slot, 2U);
  EXPECT_EQ(s.base.errors, 2U);
  EXPECT_EQ(s.base.store_failures, 0U);
  expect_paths(*st, path());
}

TEST_P(ClusterStoreOnPath, KeysThatShareATagDecideAtomically) {
  auto st = open();
  ASSERT_TRUE(st);
  const auto user = st->define("user", policy("quota 3")).value();
  const auto tenant = st->define("tenant", policy("quota 5")).value();
  // 20 tenants spread over the slots; each request checks a user and its tenant.
  for (int t = 0; t < 20; ++t) {
    const std::string tk = "{tenant" + std::to_string(t) + "}";
    const std::string uk = tk + ":alice";
    const check both[] = {{user, uk}, {tenant, tk}};
    for (int i = 0; i < 3; ++i) {
      const auto d = st->decide_at(request(both, i));
      ASSERT_EQ(d.from, source::store);
      EXPECT_TRUE(d.d.allowed);
    }
    const auto denied = st->decide_at(request(both, 3));
    ASSERT_EQ(denied.from, source::store);
    EXPECT_FALSE(denied.d.allowed);
    EXPECT_EQ(denied.d.part, 0);                     // the user's quota denies
    EXPECT_EQ(remaining(*st, both[1], 4), 2) << tk;  // the tenant paid for 3 admits, not the denial
    const std::string bk = tk + ":bob";
    const check bob[] = {{user, bk}, {tenant, tk}};  // another user of the tenant: 2 left
    std::vector<store_request> batch = {request(bob, 5), request(bob, 5), request(bob, 5)};
    std::vector<store_decision> out(batch.size());
    st->decide_many_at(batch, out);
    EXPECT_TRUE(out[0].d.allowed && out[1].d.allowed);
    EXPECT_FALSE(out[2].d.allowed);
    EXPECT_EQ(out[2].d.part, 1);  // now the tenant denies
  }
  EXPECT_EQ(st->redis_stats().cross_slot, 0U);
  expect_paths(*st, path());
}

TEST_P(ClusterStoreOnPath, ACompositeOnAnEmptyKeyCannotShareASlot) {
  // "" and keys starting with '}' have no hash tag: Redis hashes each part's
  // whole key, so a composite's parts land in different slots.
  auto st = open();
  ASSERT_TRUE(st);
  const auto both = st->define("both", policy("all(quota 5, gcra 1/1s)")).value();
  const auto plain = st->define("plain", policy("quota 5")).value();
  EXPECT_EQ(st->decide_at(one_check({both, ""}, 1)).from, source::error);
  EXPECT_EQ(st->decide_at(one_check({both, "}x"}, 1)).from, source::error);
  EXPECT_EQ(st->redis_stats().cross_slot, 2U);
  EXPECT_EQ(st->decide_at(one_check({both, "x"}, 1)).from, source::store);
  EXPECT_EQ(st->decide_at(one_check({plain, ""}, 1)).from, source::store);
  expect_paths(*st, path());
}

TEST_P(ClusterStoreOnPath, RequestIdsLiveInTheRequestsSlot) {
  auto& cluster = this->cluster();
  store_options o;
  o.key_prefix = fresh_prefix("ids");
  auto st = open(o);
  ASSERT_TRUE(st);
  const auto q = st->define("q", policy("quota 10")).value();
  for (const std::string key : {"{t}:x", "plain", ""}) {
    const check c{q, key};
    const auto first = st->decide_at(one_check(c, 1, 2, "req-1" + key));
    ASSERT_EQ(first.from, source::store) << key;
    const auto again = st->decide_at(one_check(c, 2, 2, "req-1" + key));
    EXPECT_EQ(again.from, source::replayed) << key;
    EXPECT_EQ(again.d, first.d) << key;
    EXPECT_EQ(remaining(*st, c, 3), 8) << key;  // charged once
  }
  // The id key sits beside the state key, on the node serving its slot.
  const std::string id_key = o.key_prefix + "i:{{t}req-1{t}:x";
  const std::size_t owner = cluster.owner_of(redis::key_slot("{t"));
  EXPECT_EQ(redis::key_slot(id_key), redis::key_slot(o.key_prefix + "s:q:{{t}:x}"));
  const auto r = cluster.cli(owner, {"EXISTS", id_key});
  EXPECT_EQ(r.out, "1\n") << id_key;
  expect_paths(*st, path());
}

TEST(ClusterStore, BracesInThePrefixOrANameAreRefused) {
  store_options o;
  o.url = shared_cluster().url();
  o.key_prefix = "app{1}:";
  auto bad = redis_store::open(o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.err().field, "prefix");
  auto st = open_cluster_store();
  ASSERT_TRUE(st);
  const auto named = st->define("a}b", policy("quota 1"));
  ASSERT_FALSE(named);
  EXPECT_EQ(named.err().field, "name");
  o.key_prefix = "sluice:";
  o.url = shared_cluster().url() + "/2";
  auto db = redis_store::open(o);
  ASSERT_FALSE(db);
  EXPECT_EQ(db.err().field, "db");
}

TEST(ClusterStore, TheLibraryIsLoadedOnEveryPrimary) {
  auto& cluster = shared_cluster();
  const auto primaries = cluster.primaries();
  ASSERT_GE(primaries.size(), 3U);
  for (const std::size_t p : primaries) ASSERT_EQ(cluster.cli(p, {"FUNCTION", "FLUSH"}).out, "OK\n");
  auto st = open_cluster_store();
  ASSERT_TRUE(st);
  const auto g = st->define("g", policy("gcra 10/1s burst=5")).value();
  std::size_t from = 0;
  for (const std::size_t p : primaries) {
    const auto tags = tags_on(cluster, p, 5, from);
    ASSERT_EQ(tags.size(), 5U);
    from += 100'000;
    std::vector<std::string> keys;
    for (const auto& t : tags) keys.push_back("{" + t + "}");
    std::vector<check> checks;
    for (const auto& k : keys) checks.push_back({g, k});
    std::vector<store_request> batch;
    for (const auto& c : checks) batch.push_back(one_check(c, 1));
    std::vector<store_decision> out(batch.size());
    st->decide_many_at(batch, out);
    for (const auto& d : out) EXPECT_EQ(d.from, source::store);
    EXPECT_EQ(st->decide_at(one_check(checks[0], 2)).from, source::store);
  }
  for (const std::size_t p : primaries) {
    const auto list = cluster.cli(p, {"FUNCTION", "LIST", "LIBRARYNAME", std::string(redis_store::library_name())});
    EXPECT_NE(list.out.find(std::string(redis_store::library_name())), std::string::npos)
        << cluster.address(p) << ": " << list.out;
  }
}

TEST_P(ClusterStoreOnPath, ManyThreadsOnOneKeyAdmitExactlyTheLimit) {
  store_options o;
  o.command_timeout = std::chrono::seconds(5);
  auto st = open(o);
  ASSERT_TRUE(st);
  const auto q = st->define("q", policy("quota 300")).value();
  std::atomic<int> admitted{0}, answered{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      const check c{q, "{hot}"};
      for (int i = 0; i < 100; ++i) {
        const auto d = st->decide_at(one_check(c, 1));
        answered += d.from == source::store ? 1 : 0;
        admitted += d.d.allowed ? 1 : 0;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(answered.load(), 400);
  EXPECT_EQ(admitted.load(), 300);
  expect_paths(*st, path());
}

TEST_P(ClusterStoreOnPath, ACallThatTimedOutIsNeverSentAgain) {
  // A primary that hangs (SIGSTOP) past the command timeout: the call fails,
  // and when the primary wakes it runs the call it had read — once. A
  // router that sent it again would charge it twice.
  auto& cluster = this->cluster();
  store_options o;
  o.command_timeout = std::chrono::milliseconds(150);
  o.breaker_failures = 0;
  auto st = open(o);
  ASSERT_TRUE(st);
  const auto q = st->define("q", policy("quota 10")).value();
  const check c{q, "{hang}"};
  ASSERT_EQ(st->decide_at(one_check(c, 1)).from, source::store);  // connected, library loaded
  const std::size_t owner = cluster.owner_of(*redis::braced_key_slot("{hang}"));
  cluster.node(owner).pause();
  const auto t0 = std::chrono::steady_clock::now();
  const auto d = st->decide_at(one_check(c, 2));
  const auto took = std::chrono::steady_clock::now() - t0;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // well below cluster-node-timeout (1 s)
  cluster.node(owner).resume();
  EXPECT_EQ(d.from, source::fail_closed);
  EXPECT_LT(took, std::chrono::milliseconds(1000));
  const auto after = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::int64_t left = -1;
  while (std::chrono::steady_clock::now() < after) {  // the woken primary answers again
    const auto p = st->peek_at(one_check(c, 3));
    if (p.from == source::store) {
      left = p.d.remaining + 1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(left, 8);  // charged by the first call and by the timed-out one, each once
  EXPECT_EQ(st->stats().store_failures, 1U);
  expect_paths(*st, path());
}

INSTANTIATE_TEST_SUITE_P(Paths, ClusterStoreOnPath, ::testing::Values(cluster_path::library, cluster_path::module),
                         path_name);

TEST(ClusterStore, ASeedThatIsNotAClusterIsAStoreFailure) {
  store_options o;
  o.url = "redis+cluster://" + shared_server().url().substr(8);  // a plain server
  o.key_prefix = fresh_prefix("plain");
  o.on_failure = failure_mode::fail_closed;
  auto st = redis_store::open(o);
  ASSERT_TRUE(st);
  const auto q = st.value()->define("q", policy("quota 3")).value();
  const auto t0 = std::chrono::steady_clock::now();
  const auto d = st.value()->decide_at(one_check({q, "k"}, 1));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(d.from, source::fail_closed);
  EXPECT_EQ(st.value()->stats().store_failures, 1U);
}

}  // namespace
}  // namespace sluice::redis_test::cluster_store_test
