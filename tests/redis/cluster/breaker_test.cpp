// A circuit breaker per node: one primary of a real cluster hung with
// SIGSTOP while batches decide keys spread over all three. The keys of the
// other two stay with the store, and once the hung node's breaker is open
// their batches take no longer than before (no command-timeout wait per
// batch, only one probe per cool-down); the hung node's keys go to the
// failure mode at once; after SIGCONT they come back within about a
// cool-down. The figures are printed (docs/redis.md, "Failure modes").
// Through the Lua library and through the Redis module on every node (names
// ending /library and /module: docs/redis.md, "The store and the module").
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "redis/cluster/cluster_support.hpp"

namespace sluice::redis_test::cluster_breaker_test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Through a path: the library, or the module on every node.
class ClusterBreaker : public ::testing::TestWithParam<cluster_path> {};

TEST_P(ClusterBreaker, OneHungPrimaryLeavesTheOthersToTheStore) {
  const cluster_path path = GetParam();
  // Its own cluster, without replicas and with a node timeout longer than
  // the test: the hung primary is never failed over, and the others never
  // answer CLUSTERDOWN.
  testing::redis_cluster c(options_for(path, {.primaries = 3, .replicas = 0, .node_timeout = 60s}));
  store_options o;
  o.command_timeout = 100ms;
  o.on_failure = failure_mode::fail_closed;
  o.breaker_failures = 5;
  o.breaker_cool_down = 1000ms;
  std::mutex lines_mu;
  std::vector<std::string> lines;  // the health lines, once per change of a node's health
  o.on_health_change = [&](std::string_view line) {
    const std::lock_guard lock(lines_mu);
    lines.emplace_back(line);
  };
  auto st = open_on_path(path, o, &c);
  ASSERT_TRUE(st);
  const auto q = st->define("q", policy("quota 1000000000")).value();  // never denies

  const auto primaries = c.primaries();
  ASSERT_EQ(primaries.size(), 3U);
  const std::size_t victim = primaries.back();  // not the node the cluster helpers ask first
  constexpr std::size_t per_node = 20;
  std::vector<std::string> keys;
  std::vector<bool> on_victim;
  for (const std::size_t p : primaries)
    for (const auto& tag : tags_on(c, p, per_node)) {
      keys.push_back("{" + tag + "}");
      on_victim.push_back(p == victim);
    }
  ASSERT_EQ(keys.size(), 3 * per_node);

  std::vector<check> checks(keys.size());
  std::vector<store_request> reqs(keys.size());
  std::vector<store_decision> out(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) checks[i] = {q, keys[i]};
  // One batch over every key; its wall time in ms.
  auto batch = [&] {
    for (std::size_t i = 0; i < keys.size(); ++i) reqs[i] = one_check(checks[i], 1);
    const auto t0 = steady::now();
    st->decide_many_at(reqs, out);
    return ms_between(t0, steady::now());
  };
  auto from = [&](bool victims, source s) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) n += on_victim[i] == victims && out[i].from == s ? 1 : 0;
    return n;
  };

  // Before: every key decided by the store.
  std::vector<double> before_ms;
  for (int i = 0; i < 20; ++i) {
    before_ms.push_back(batch());
    ASSERT_EQ(from(false, source::store) + from(true, source::store), keys.size());
  }

  c.node(victim).pause();  // SIGSTOP: connections stay open, nothing is answered
  const auto t_stop = steady::now();
  const auto s0 = st->redis_stats();
  // The first batch meets the hung node: its calls wait out the command timeout.
  const double first_ms = batch();
  EXPECT_EQ(from(false, source::store), 2 * per_node);
  EXPECT_EQ(from(true, source::fail_closed), per_node);
  EXPECT_GE(first_ms, 90.0);
  EXPECT_GE(st->redis_stats().breakers_open, 1U);
  // The victim's breaker, by its node, is the one open; the others closed.
  for (const auto& b : st->redis_stats().breakers)
    EXPECT_EQ(b.state, b.node == c.address(victim) ? "open" : "closed") << b.node;
  {
    const std::lock_guard lock(lines_mu);
    ASSERT_EQ(lines.size(), 1U);
    EXPECT_EQ(lines[0].rfind("store " + c.address(victim) + ": unhealthy: ", 0), 0U) << lines[0];
    EXPECT_NE(lines[0].find("(the last: timeout)"), std::string::npos) << lines[0];
  }

  // Then for 3 s: the healthy keys by the store, the victim's by the
  // failure mode; a batch waits for the command timeout only when it
  // carries the one probe of a cool-down.
  std::vector<double> open_ms;
  std::size_t slow = 0;
  const auto t_open = steady::now();
  while (ms_between(t_open, steady::now()) < 3000 && open_ms.size() < 100'000) {
    const double ms = batch();
    open_ms.push_back(ms);
    slow += ms >= 90.0 ? 1 : 0;
    ASSERT_EQ(from(false, source::store), 2 * per_node) << "batch " << open_ms.size();
    ASSERT_EQ(from(true, source::fail_closed), per_node) << "batch " << open_ms.size();
  }
  const double open_for = ms_between(t_open, steady::now());
  const std::size_t probes_allowed = static_cast<std::size_t>(open_for / 1000.0) + 1;
  EXPECT_LE(slow, probes_allowed) << "batches that waited for the hung node";
  EXPECT_GE(open_ms.size(), 10U);
  // One call at a time: a healthy key's decision does not wait either, and
  // a key of the hung node is answered without a call.
  std::vector<double> one_ms;
  std::size_t one_slow = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto t0 = steady::now();
    const auto d = st->decide_at(one_check(checks[i], 1));
    const double ms = ms_between(t0, steady::now());
    one_ms.push_back(ms);
    one_slow += ms >= 90.0 ? 1 : 0;
    EXPECT_EQ(d.from, on_victim[i] ? source::fail_closed : source::store) << keys[i];
  }
  EXPECT_LE(one_slow, 1U);
  // The key count asks no node whose breaker is open (it would wait).
  const auto t_count = steady::now();
  EXPECT_FALSE(st->count_keys().has_value());
  const double count_ms = ms_between(t_count, steady::now());
  EXPECT_LT(count_ms, 90.0);
  const auto s1 = st->redis_stats();

  c.node(victim).resume();  // SIGCONT
  const auto t_cont = steady::now();
  double back_ms = -1;
  while (ms_between(t_cont, steady::now()) < 10'000) {
    batch();
    if (from(true, source::store) == per_node) {
      back_ms = ms_between(t_cont, steady::now());
      break;
    }
  }
  ASSERT_GE(back_ms, 0) << "the hung node's keys did not come back within 10 s";
  EXPECT_LE(back_ms, 2500) << "about one cool-down (1 s), with a margin for a loaded machine";
  batch();
  EXPECT_EQ(from(false, source::store) + from(true, source::store), keys.size());
  const auto s2 = st->redis_stats();
  EXPECT_EQ(s2.breakers_open, 0U);
  EXPECT_GE(s2.breaker_trips, 1U);
  {
    // Once per change: opened, then closed by a probe (a probe that failed
    // meanwhile reopened it without a line).
    const std::lock_guard lock(lines_mu);
    ASSERT_EQ(lines.size(), 2U);
    EXPECT_EQ(lines[1], "store " + c.address(victim) + ": healthy again: a probe call succeeded, the store decides");
  }
  // Every victim decision while its breaker was open went to the failure
  // mode without a call: counted as breaker_open, not as a store failure.
  EXPECT_GE(s1.breaker_open - s0.breaker_open, per_node * (open_ms.size() - slow));
  EXPECT_LE(s1.base.store_failures - s0.base.store_failures, per_node * (1 + slow) + 1);

  std::printf(
      "breaker: SIGSTOP of %s (%zu of %zu keys); batches of %zu over all primaries: %.2f ms (median) before; the "
      "first after the stop %.1f ms (the command timeout); then %zu batches in %.0f ms: median %.2f ms, %zu waited "
      "for a probe; one call at a time: median %.3f ms; count_keys %.3f ms; breaker trips %llu, requests "
      "answered while open %llu, store failures %llu; keys back %.0f ms after SIGCONT (%.0f ms after the stop)\n",
      c.address(victim).c_str(), per_node, keys.size(), keys.size(), median(before_ms), first_ms, open_ms.size(),
      open_for, median(open_ms), slow, median(one_ms), count_ms, static_cast<unsigned long long>(s2.breaker_trips),
      static_cast<unsigned long long>(s1.breaker_open - s0.breaker_open),
      static_cast<unsigned long long>(s1.base.store_failures - s0.base.store_failures), back_ms,
      ms_between(t_stop, t_cont) + back_ms);
  expect_paths(*st, path);
}

INSTANTIATE_TEST_SUITE_P(Paths, ClusterBreaker, ::testing::Values(cluster_path::library, cluster_path::module),
                         path_name);

}  // namespace
}  // namespace sluice::redis_test::cluster_breaker_test
