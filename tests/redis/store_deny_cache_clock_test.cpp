// The deny cache stays exact when the clock steps back (semantics.md,
// "Keys"): the shared suite's traces (every algorithm and composite, several
// keys, requests of several checks at mixed costs), re-timed so that they
// jump past the end of a denial, admit there, and then come back with a
// request stamped before that end — through a Redis store with the deny
// cache and one without, beside the memory store, decision for decision.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "conformance/traces.hpp"
#include "redis/conformance_draw.hpp"
#include "redis/store_support.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::redis_test::redis_store_deny_cache_clock_test {
namespace {

/// A memory store that decides as one limiter per key whatever the clock
/// does (no automatic purge: its floor never moves).
std::unique_ptr<memory_store> reference_store() {
  memory_store_options o;
  o.keyed.auto_purge = false;
  o.keyed.shards = 1;
  o.keyed.hash_seed = 7;
  return std::make_unique<memory_store>(o);
}

tick sat(detail::i128 v) {
  if (v > detail::i64_max) return detail::i64_max;
  if (v < detail::i64_min) return detail::i64_min;
  return static_cast<tick>(v);
}

struct cache_figures {
  std::size_t steps = 0, cache_hits = 0, back_probes = 0, store_denials = 0;
};

/// One step's answer from a store: the request's decision and its checks'.
struct got {
  store_decision d;
  std::vector<decision> per;
};

got decide(store& s, std::span<const check> checks, tick now, std::int64_t cost) {
  got g;
  g.per.assign(checks.size(), decision{});
  g.d = s.decide_at({.checks = checks, .now = now, .cost = cost, .id = {}}, g.per);
  return g;
}

/// Runs trace `t` (policies and keys under `prefix`), re-timed: a step keeps
/// its own instant (shifted by the jumps so far), or jumps to just past the
/// end of the latest denial, or back to before the end of a denial whose end
/// some request has reached, or far back or forward. Returns "" or the first
/// difference.
std::string run(const conformance::trace& t, std::uint64_t seed, store& with, store& without, cache_figures& f,
                const std::string& prefix) {
  auto ref = reference_store();
  auto [ids_ref, e0] = conformance::define_all(*ref, t, prefix);
  auto [ids_with, e1] = conformance::define_all(with, t, prefix);
  auto [ids_without, e2] = conformance::define_all(without, t, prefix);
  if (!e0.empty() || !e1.empty() || !e2.empty()) return t.describe() + ": define: " + e0 + e1 + e2;
  std::mt19937_64 g(seed);
  const auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(g);
  };
  std::optional<std::pair<tick, tick>> latest;  // (at, until) of the latest finite denial
  std::vector<std::pair<tick, tick>> passed;    // denials whose end a request has reached
  detail::i128 shift = 0;
  tick now = t.steps.empty() ? 0 : t.steps[0].now;
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const conformance::trace_step& st = t.steps[i];
    const int roll = static_cast<int>(uniform(0, 99));
    bool probe = false;
    if (roll < 30 || (roll < 55 && !latest) || (roll >= 55 && roll < 85 && passed.empty())) {
      now = sat(st.now + shift);
    } else if (roll < 55) {
      now = sat(static_cast<detail::i128>(latest->second) + uniform(0, 2));  // at or just past the end
      if (now >= latest->second) passed.push_back(*latest);
      latest.reset();
    } else if (roll < 85) {
      const auto& [at, until] =
          passed[static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(passed.size()) - 1))];
      now = sat(static_cast<detail::i128>(at) + uniform(0, std::max<std::int64_t>(0, until - at - 1)));
      probe = true;
    } else {
      const std::int64_t jump = uniform(1, std::int64_t{1} << uniform(1, 40));
      const detail::i128 d = roll < 93 ? -static_cast<detail::i128>(jump) : static_cast<detail::i128>(jump);
      shift += d;
      now = sat(static_cast<detail::i128>(now) + d);
    }
    std::vector<std::string> keys;
    for (const auto& c : st.checks) keys.push_back(prefix + c.key);
    const auto checks_of = [&](const std::vector<policy_id>& ids) {
      std::vector<check> cs;
      for (std::size_t k = 0; k < st.checks.size(); ++k)
        cs.push_back({ids[st.checks[k].policy], keys[k], st.checks[k].cost});
      return cs;
    };
    const auto c0 = checks_of(ids_ref), c1 = checks_of(ids_with), c2 = checks_of(ids_without);
    const got want = decide(*ref, c0, now, st.cost);
    const got a = decide(with, c1, now, st.cost);
    const got b = decide(without, c2, now, st.cost);
    ++f.steps;
    f.back_probes += probe;
    const std::string where = t.describe() + "\n  step " + std::to_string(i) + " now=" + std::to_string(now) + " (" +
                              conformance::show(st) + "): ";
    if (want.d.from == source::error) {
      if (a.d.from != source::error || b.d.from != source::error) return where + "a bad request, not an error";
      continue;
    }
    if (b.d.from != source::store || !(b.d.d == want.d.d) || b.per != want.per)
      return where + "without the cache " + show(b.d.d) + " from " + std::string(name_of(b.d.from)) +
             ", memory store " + show(want.d.d);
    if (a.d.d.allowed != want.d.d.allowed)
      return where + "with the cache " + show(a.d.d) + " from " + std::string(name_of(a.d.from)) + ", memory store " +
             show(want.d.d);
    if (a.d.from == source::deny_cache) {
      ++f.cache_hits;
      // A lower bound on the wait: never longer than the store's.
      if (a.d.d.retry_after <= 0 || a.d.d.retry_after > want.d.d.retry_after)
        return where + "cached retry_after " + show_tick(a.d.d.retry_after) + ", store " +
               show_tick(want.d.d.retry_after);
    } else if (a.d.from != source::store || !(a.d.d == want.d.d) || a.per != want.per) {
      return where + "with the cache " + show(a.d.d) + " from " + std::string(name_of(a.d.from)) + ", memory store " +
             show(want.d.d);
    }
    if (!want.d.d.allowed && want.d.d.retry_after > 0 && want.d.d.retry_after != never) {
      ++f.store_denials;
      latest.emplace(now, sat(static_cast<detail::i128>(now) + want.d.d.retry_after));
    }
  }
  return "";
}

class RedisDenyCacheClock : public ::testing::TestWithParam<algorithm> {};

TEST_P(RedisDenyCacheClock, DecidesAsWithoutItWhenTheClockJumpsBothWays) {
  store_options o;
  o.command_timeout = std::chrono::seconds(10);
  o.deny_cache = true;
  auto with = open_store(o);
  o.deny_cache = false;
  auto without = open_store(o);
  ASSERT_TRUE(with && without);
  // The suite's traces, 40 steps each, within the Redis store's range.
  conformance::trace_options to = redis_trace_options();
  to.length = 40;
  std::vector<conformance::trace> traces;
  for (std::uint64_t seed = 7'000'000; traces.size() < 100; ++seed) {
    auto t = conformance::make_trace(GetParam(), seed, to);
    if (in_range(t, true)) traces.push_back(std::move(t));
  }
  cache_figures f;
  for (std::size_t j = 0; j < traces.size(); ++j)
    ASSERT_EQ(run(traces[j], j, *with, *without, f, "dc" + std::to_string(j) + ":"), "");
  std::printf(
      "deny cache, clock both ways, %-16s %zu traces, %zu steps, %zu store denials, %zu cache hits, "
      "%zu probes back before a passed end\n",
      std::string(name_of(GetParam())).c_str(), traces.size(), f.steps, f.store_denials, f.cache_hits, f.back_probes);
  EXPECT_GT(f.cache_hits, 0U);
  EXPECT_GT(f.back_probes, 50U);
  EXPECT_EQ(with->redis_stats().mismatches, 0U);
  EXPECT_EQ(with->stats().store_failures, 0U);
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, RedisDenyCacheClock, ::testing::ValuesIn(conformance::all_algorithms),
                         algorithm_test_name);

// The case itself: a token bucket of 3, one back every 100 ticks. Denied a
// cost of 2 at 0 (until 200), the key admits 1 at 500 (2 tokens left); a
// request of 2 stamped 100 is read at 500 and admits: the cache must not
// answer it from the entry whose end has passed.
TEST(RedisDenyCacheClock, AnEntryWhoseEndHasPassedIsNotRevivedByAnEarlierStamp) {
  store_options o;
  o.deny_cache = true;
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const check c{st->define("tb", any_policy{token_bucket::make(rate{1, 100}, 3).value()}).value(), "k"};
  ASSERT_TRUE(st->decide_at(one_check(c, 0, 3)).d.allowed);
  const auto denied = st->decide_at(one_check(c, 0, 2));
  ASSERT_FALSE(denied.d.allowed);
  EXPECT_EQ(denied.d.retry_after, 200);
  // Before the end: the cache's (soon, not necessarily the first repeat).
  EXPECT_TRUE(cache_answers_denial(*st, one_check(c, 150, 2)));
  ASSERT_TRUE(st->decide_at(one_check(c, 500, 1)).d.allowed);
  const auto back = st->decide_at(one_check(c, 100, 2));
  EXPECT_TRUE(back.d.allowed) << show(back.d) << " from " << name_of(back.from);
  EXPECT_EQ(back.from, source::store);
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_deny_cache_clock_test
