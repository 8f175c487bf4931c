// The Redis store decides exactly as the core `decide`: random, boundary and
// clock-back traces (trace_gen.hpp) through the core and through a real
// Redis, compared field for field, 10,000 traces per algorithm, pipelined
// through decide_many_at. Configurations reach the edges of the exact range
// (docs/redis.md). Each test prints its figures.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "redis/store_support.hpp"
#include "redis/trace_gen.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice::redis_test::redis_store_conformance_test {
namespace {

struct figures {
  std::size_t traces = 0, traces_ok = 0, decisions = 0, decisions_ok = 0, allowed = 0, never_denied = 0, denied = 0;
};

/// Runs `traces` traces of `a` through the core and the store; returns the
/// figures and fails the test on the first few mismatches.
figures run(gen_algo a, std::size_t traces, std::uint64_t seed, int regimes) {
  store_options opts;
  opts.command_timeout = std::chrono::seconds(10);  // a loaded CI machine must not turn into store failures
  auto st = open_store(opts);
  if (!st) return {};
  rng_t rng(seed);
  figures f;
  int shown = 0;
  constexpr std::size_t batch = 100;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t first = 0; first < traces; first += batch) {
    struct one {
      std::string key;
      check c;
      std::vector<step> steps;
      std::string cfg;
    };
    std::vector<one> group;
    for (std::size_t i = first; i < std::min(traces, first + batch); ++i) {
      const int regime = static_cast<int>(i % static_cast<std::size_t>(regimes));
      policy_id id = 0;
      drawn d = draw(rng, a, regime, [&](const any_policy& p) {
        auto r = st->define("p" + std::to_string(i), p);
        if (r) id = r.value();
        return r.ok();
      });
      one o;
      o.key = "k" + std::to_string(i);
      o.c = check{id, {}};
      o.steps = walk(rng, d.policy, static_cast<int>(uniform(rng, 5, 40)), d.unit, d.big, d.costs);
      o.cfg = describe_policy(d.policy);
      group.push_back(std::move(o));
    }
    std::vector<store_request> reqs;
    for (auto& o : group) {
      o.c.key = o.key;
      for (const auto& s : o.steps) reqs.push_back(one_check(o.c, s.t, s.cost));
    }
    std::vector<store_decision> got(reqs.size());
    st->decide_many_at(reqs, got);
    std::size_t at = 0;
    for (const auto& o : group) {
      bool trace_ok = true;
      for (std::size_t j = 0; j < o.steps.size(); ++j, ++at) {
        decision want = o.steps[j].want;
        want.part = 0;  // the store names the binding check (there is one)
        const bool ok = got[at].from == source::store && got[at].d == want;
        ++f.decisions;
        f.decisions_ok += ok;
        f.allowed += want.allowed;
        f.never_denied += want.never_allowed();
        f.denied += want.retry_later();
        if (!ok && trace_ok && shown < 3) {
          ++shown;
          ADD_FAILURE() << name_of(a) << " " << o.cfg << " step " << j << " t=" << o.steps[j].t
                        << " cost=" << o.steps[j].cost << ": redis " << show(got[at].d) << " from "
                        << name_of(got[at].from) << ", core " << show(want);
        }
        trace_ok = trace_ok && ok;
      }
      ++f.traces;
      f.traces_ok += trace_ok;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "conformance %-16s traces %zu/%zu agree, decisions %zu/%zu agree (allowed %zu, denied %zu, never %zu), "
      "%.1f s\n",
      name_of(a).c_str(), f.traces_ok, f.traces, f.decisions_ok, f.decisions, f.allowed, f.denied, f.never_denied,
      secs);
  const auto s = st->redis_stats();
  EXPECT_EQ(s.mismatches, 0U);
  EXPECT_EQ(s.base.store_failures, 0U);
  return f;
}

constexpr std::size_t traces_per_algorithm =
    3'000;  // edge-of-range regimes; the shared suite runs 10,000 per algorithm

void expect_all(const figures& f) {
  EXPECT_EQ(f.traces, traces_per_algorithm);
  EXPECT_EQ(f.traces_ok, f.traces);
  EXPECT_EQ(f.decisions_ok, f.decisions);
  EXPECT_GT(f.allowed, 0U);
  EXPECT_GT(f.denied, 0U);
}

TEST(RedisConformance, Gcra) { expect_all(run(gen_algo::gcra, traces_per_algorithm, 1, 4)); }
TEST(RedisConformance, TokenBucket) { expect_all(run(gen_algo::token_bucket, traces_per_algorithm, 2, 4)); }
TEST(RedisConformance, LeakyQueue) { expect_all(run(gen_algo::leaky_queue, traces_per_algorithm, 3, 4)); }
TEST(RedisConformance, FixedWindow) { expect_all(run(gen_algo::fixed_window, traces_per_algorithm, 4, 6)); }
TEST(RedisConformance, SlidingCounter) { expect_all(run(gen_algo::sliding_counter, traces_per_algorithm, 5, 6)); }
TEST(RedisConformance, SlidingLog) { expect_all(run(gen_algo::sliding_log, traces_per_algorithm, 6, 6)); }
TEST(RedisConformance, SlidingBuckets) { expect_all(run(gen_algo::sliding_buckets, traces_per_algorithm, 7, 6)); }
TEST(RedisConformance, Quota) {
  const figures f = run(gen_algo::quota, traces_per_algorithm, 8, 4);
  EXPECT_EQ(f.traces_ok, f.traces);
  EXPECT_EQ(f.decisions_ok, f.decisions);
  EXPECT_GT(f.allowed, 0U);
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_conformance_test
