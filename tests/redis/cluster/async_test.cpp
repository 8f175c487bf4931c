// The cluster store's asynchronous face (decide_async, count_keys_async) on
// a real cluster: many decisions in flight at once over every primary admit
// exactly the limits; and with one primary stopped (SIGSTOP) and many
// callers waiting, each of its calls is answered by its own deadline, all
// at once, not one after another, while the other primaries' calls are
// answered by the store (semantics.md, "The service's event loops"). Each
// through the Lua library and through the Redis module on every node (names
// ending /library and /module: docs/redis.md, "The store and the module").
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "redis/cluster/cluster_support.hpp"

namespace sluice::redis_test::cluster_async_test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

/// Each test through a path: the library, or the module on every node.
class ClusterAsync : public ::testing::TestWithParam<cluster_path> {
 protected:
  [[nodiscard]] cluster_path path() const { return GetParam(); }
};

TEST_P(ClusterAsync, EventLoopsAreNotAttachedTheRouterStaysOne) {
  // One router per store (its topology, a breaker per node): a cluster
  // refuses to do its I/O on the caller's loops, naming why, and decides on
  // its own thread as before.
  auto st = open_on_path(path());
  ASSERT_TRUE(st);
  boost::asio::io_context ctx;
  boost::asio::io_context* loops[] = {&ctx};
  const auto r = st->attach_loops(loops);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().field, "store");
  EXPECT_NE(r.err().message.find("Cluster"), std::string::npos) << r.err().what();
  const check ch{st->define("q", policy("quota 10")).value(), "{a}k"};
  std::promise<source> got;
  st->decide_async(store_request{std::span<const check>(&ch, 1), st->now(), 1, {}}, {}, {},
                   [&](const store_decision& d) { got.set_value(d.from); });
  EXPECT_EQ(got.get_future().get(), source::store);
  expect_paths(*st, path());
}

TEST_P(ClusterAsync, ManyDecisionsInFlightOverEveryPrimaryAdmitExactlyTheLimits) {
  auto& c = cluster_of(path());
  store_options o;
  o.command_timeout = 3s;
  auto st = open_on_path(path(), o);
  ASSERT_TRUE(st);
  constexpr std::int64_t limit = 10;
  const auto q = st->define("q", policy("quota 10")).value();
  std::vector<std::string> keys;
  for (const std::size_t p : c.primaries())
    for (const auto& tag : tags_on(c, p, 10)) keys.push_back("{" + tag + "}");
  ASSERT_EQ(keys.size(), 10 * c.primaries().size());
  std::vector<check> checks;
  for (const auto& k : keys) checks.push_back({q, k});
  constexpr int per_key = 25;
  const std::size_t n = checks.size() * per_key;
  std::vector<std::atomic<std::int64_t>> admitted(checks.size());
  std::atomic<std::size_t> answered{0}, not_store{0};
  std::promise<void> all;
  const tick now = st->now();
  // Issued from one thread without waiting: in flight together, each
  // node's on its own connection.
  for (int i = 0; i < per_key; ++i)
    for (std::size_t k = 0; k < checks.size(); ++k)
      st->decide_async(one_check(checks[k], now), {}, {}, [&, k](const store_decision& d) {
        admitted[k] += d.from == source::store && d.d.allowed ? 1 : 0;
        // A denial met before may be answered by the deny cache (exact).
        not_store += d.from != source::store && d.from != source::deny_cache ? 1 : 0;
        if (++answered == n) all.set_value();
      });
  ASSERT_EQ(all.get_future().wait_for(60s), std::future_status::ready);
  EXPECT_EQ(not_store.load(), 0U);
  for (std::size_t k = 0; k < checks.size(); ++k) EXPECT_EQ(admitted[k].load(), limit) << keys[k];
  // The key count, asked without waiting, is every primary's DBSIZE summed.
  std::promise<std::optional<std::uint64_t>> counted;
  st->count_keys_async([&](std::optional<std::uint64_t> k) { counted.set_value(k); });
  const auto async_count = counted.get_future().get();
  ASSERT_TRUE(async_count.has_value());
  EXPECT_GE(*async_count, keys.size());
  EXPECT_EQ(async_count, st->count_keys());
  expect_paths(*st, path());
}

TEST_P(ClusterAsync, AStoppedPrimaryHoldsOnlyItsOwnCallsEachUntilItsDeadline) {
  // Its own cluster, without replicas and with a node timeout longer than
  // the test: the stopped primary is not failed over.
  testing::redis_cluster c(options_for(path(), {.primaries = 3, .replicas = 0, .node_timeout = 60s}));
  store_options o;
  o.command_timeout = 500ms;
  o.on_failure = failure_mode::fail_closed;
  o.breaker_failures = 0;  // every call goes to its node: none answered early by a breaker
  auto st = open_on_path(path(), o, &c);
  ASSERT_TRUE(st);
  const auto q = st->define("q", policy("quota 1000000000")).value();
  const auto primaries = c.primaries();
  ASSERT_EQ(primaries.size(), 3U);
  const std::size_t victim = primaries.back();
  std::vector<check> checks;
  std::vector<bool> on_victim;
  std::vector<std::string> keys;
  for (const std::size_t p : primaries)
    for (const auto& tag : tags_on(c, p, 50)) {
      keys.push_back("{" + tag + "}");
      on_victim.push_back(p == victim);
    }
  for (const auto& k : keys) checks.push_back({q, k});
  // Warm: every node connected, the library loaded.
  for (const auto& ch : checks) ASSERT_EQ(st->decide_at(one_check(ch, st->now())).from, source::store);

  c.node(victim).pause();
  // Well under the cluster's node timeout (60 s here), and under a loaded
  // machine's slowest answer from a healthy node.
  constexpr double deadline_ms = 500;
  constexpr int rounds = 4;  // 4 × 150 calls in flight, 200 of them on the stopped node
  const std::size_t n = checks.size() * rounds;
  std::mutex mu;
  std::vector<double> victim_ms, other_ms;
  std::size_t victim_store = 0, other_not_store = 0;
  std::promise<void> all;
  std::size_t answered = 0;
  const auto t0 = steady::now();
  const tick now = st->now();
  for (int r = 0; r < rounds; ++r)
    for (std::size_t k = 0; k < checks.size(); ++k)
      st->decide_async(one_check(checks[k], now), {}, {}, [&, k](const store_decision& d) {
        const double ms = std::chrono::duration<double, std::milli>(steady::now() - t0).count();
        const std::lock_guard lock(mu);
        if (on_victim[k]) {
          victim_ms.push_back(ms);
          victim_store += d.from == source::store ? 1 : 0;
        } else {
          other_ms.push_back(ms);
          other_not_store += d.from != source::store ? 1 : 0;
        }
        if (++answered == n) all.set_value();
      });
  const auto ready = all.get_future().wait_for(10s);
  const double issued_ms = std::chrono::duration<double, std::milli>(steady::now() - t0).count();
  c.node(victim).resume();
  ASSERT_EQ(ready, std::future_status::ready);
  const std::lock_guard lock(mu);
  ASSERT_EQ(victim_ms.size(), n / 3);
  ASSERT_EQ(other_ms.size(), 2 * n / 3);
  const double victim_last = *std::max_element(victim_ms.begin(), victim_ms.end());
  const double victim_first = *std::min_element(victim_ms.begin(), victim_ms.end());
  const double other_last = *std::max_element(other_ms.begin(), other_ms.end());
  std::printf(
      "one primary stopped, %zu calls in flight (%zu on it): its calls answered from %.0f to %.0f ms (deadline "
      "%.0f ms), the others' all by %.0f ms\n",
      n, victim_ms.size(), victim_first, victim_last, deadline_ms, other_last);
  // The stopped node's calls: each by the failure mode, at its deadline,
  // all together (one after another would take 200 × the deadline).
  EXPECT_EQ(victim_store, 0U);
  EXPECT_GE(victim_first, deadline_ms * 0.95);
  EXPECT_LT(victim_last, deadline_ms + 1000.0);
  // The other primaries' calls: by the store, without waiting for the
  // stopped one.
  EXPECT_EQ(other_not_store, 0U);
  EXPECT_LT(other_last, deadline_ms * 0.95);
  (void)issued_ms;
  // Woken, the node answers again.
  bool back = false;
  const auto until = steady::now() + 5s;
  const std::size_t vk =
      static_cast<std::size_t>(std::find(on_victim.begin(), on_victim.end(), true) - on_victim.begin());
  while (!back && steady::now() < until) {
    back = st->peek_at(one_check(checks[vk], st->now())).from == source::store;
    if (!back) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(back);
  expect_paths(*st, path());
}

INSTANTIATE_TEST_SUITE_P(Paths, ClusterAsync, ::testing::Values(cluster_path::library, cluster_path::module),
                         path_name);

}  // namespace
}  // namespace sluice::redis_test::cluster_async_test
