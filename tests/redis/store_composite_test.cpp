// Composites and requests of several checks: the Redis store against the
// memory store (the in-process store, on the core), field for field,
// per-check decisions included. Policies are all_of/any_of trees of every
// algorithm (nested, with always-allow/deny parts), each under one key
// whose parts live under derived keys; requests name 1 to 3 (policy, key)
// checks over a few shared keys, decided atomically as all_of.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "redis/store_support.hpp"
#include "redis/trace_gen.hpp"
#include "sluice/keyed/memory.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice::redis_test::redis_store_composite_test {
namespace {

/// A leaf drawn small (regimes bar and tiny, always in the exact range) so
/// that composites deny often.
any_policy small_leaf(rng_t& r) {
  const auto a = static_cast<gen_algo>(uniform(r, 0, 7));
  return draw(r, a, static_cast<int>(uniform(r, 0, 1)), [](const any_policy&) { return true; }).policy;
}

any_policy composite(rng_t& r, int depth) {
  const std::int64_t n = uniform(r, 1, 3);
  std::vector<any_policy> parts;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t x = uniform(r, 0, 9);
    if (x == 0)
      parts.emplace_back(always_allow{});
    else if (x == 1)
      parts.emplace_back(always_deny{});
    else if (x == 2 && depth < 2)
      parts.push_back(composite(r, depth + 1));
    else
      parts.push_back(small_leaf(r));
  }
  if (uniform(r, 0, 1) == 0) return any_policy{all_of::make(std::move(parts)).value()};
  return any_policy{any_of::make(std::move(parts)).value()};
}

bool same(const store_decision& a, const store_decision& b) { return a.from == b.from && a.d == b.d; }

TEST(RedisComposite, AgreesWithTheMemoryStore) {
  auto st = open_store();
  ASSERT_TRUE(st);
  rng_t rng(11);
  constexpr int traces = 1'500;
  std::size_t decisions = 0;
  std::size_t agree = 0;
  std::size_t allowed = 0;
  int shown = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < traces; ++t) {
    memory_store_options mo;
    mo.keyed.auto_purge = false;  // no purge: exactly the core on each key
    memory_store mem(mo);
    // Three policies (composites or plain), each defined in both stores.
    std::vector<check> pool;
    std::vector<std::string> keys = {"a", "b", "c"};
    std::vector<policy_id> ids;
    std::string what;
    for (int p = 0; p < 3; ++p) {
      const any_policy pol = uniform(rng, 0, 2) == 0 ? small_leaf(rng) : composite(rng, 0);
      const std::string name = "c" + std::to_string(t) + "_" + std::to_string(p);
      auto a = st->define(name, pol);
      auto b = mem.define(name, pol);
      ASSERT_TRUE(a.ok()) << a.err().what();
      ASSERT_TRUE(b.ok());
      ASSERT_EQ(b.value(), static_cast<policy_id>(p));
      ids.push_back(a.value());
      what += describe_policy(pol) + "; ";
    }
    tick now = pick_start(rng, 1'000'000'000'000);
    const tick unit = std::max<tick>(1, uniform(rng, 0, 1) == 0 ? 1'000'000'000 : 3);
    const bool with_per_check = t % 10 == 0;
    std::vector<std::vector<check>> reqs_checks;
    std::vector<store_request> reqs;
    const int n = static_cast<int>(uniform(rng, 5, 30));
    for (int i = 0; i < n; ++i) {
      const std::int64_t step = uniform(rng, 0, 9);
      now = clamp_tick(static_cast<i128>(now) + (step < 3   ? 0
                                                 : step < 7 ? uniform(rng, 1, unit)
                                                 : step < 9 ? uniform(rng, 1, unit * 40)
                                                            : -uniform(rng, 1, unit)));
      std::vector<check> cs;
      const std::int64_t m = uniform(rng, 1, 3);
      for (std::int64_t k = 0; k < m; ++k) {
        const auto p = static_cast<std::size_t>(uniform(rng, 0, 2));
        const std::string& key = keys[static_cast<std::size_t>(uniform(rng, 0, 2))];
        bool dup = false;
        for (const auto& c : cs) dup = dup || (c.policy == static_cast<policy_id>(p) && c.key == key);
        if (!dup) cs.push_back(check{static_cast<policy_id>(p), key});
      }
      reqs_checks.push_back(std::move(cs));
      store_request r;
      r.now = now;
      r.cost = uniform(rng, 0, 4) == 0 ? uniform(rng, 1, 5) : 1;
      reqs.push_back(r);
    }
    for (std::size_t i = 0; i < reqs.size(); ++i) reqs[i].checks = reqs_checks[i];
    // The memory store decides with memory ids; the Redis store with its own.
    std::vector<std::vector<check>> redis_checks = reqs_checks;
    for (auto& cs : redis_checks)
      for (auto& c : cs) c.policy = ids[c.policy];
    std::vector<store_request> rreqs = reqs;
    for (std::size_t i = 0; i < rreqs.size(); ++i) rreqs[i].checks = redis_checks[i];
    std::vector<store_decision> got(reqs.size());
    std::vector<store_decision> want(reqs.size());
    if (with_per_check) {
      for (std::size_t i = 0; i < reqs.size(); ++i) {
        std::vector<decision> pg(reqs[i].checks.size());
        std::vector<decision> pw(reqs[i].checks.size());
        got[i] = st->decide_at(rreqs[i], pg);
        want[i] = mem.decide_at(reqs[i], pw);
        EXPECT_EQ(pg, pw) << "per-check decisions differ at request " << i << " of " << what;
      }
    } else {
      st->decide_many_at(rreqs, got);
      mem.decide_many_at(reqs, want);
    }
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      ++decisions;
      const bool ok = same(got[i], want[i]);
      agree += ok;
      allowed += want[i].d.allowed;
      if (!ok && shown++ < 3)
        ADD_FAILURE() << what << " request " << i << " (" << reqs[i].checks.size() << " checks, t=" << reqs[i].now
                      << ", cost " << reqs[i].cost << "): redis " << show(got[i].d) << " from " << name_of(got[i].from)
                      << ", memory " << show(want[i].d) << " from " << name_of(want[i].from);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "composites and multi-check requests: %zu/%zu decisions agree with the memory store (%zu allowed), "
      "%d traces, %.1f s\n",
      agree, decisions, allowed, traces, secs);
  EXPECT_EQ(agree, decisions);
  EXPECT_GT(allowed, decisions / 10);
  EXPECT_LT(allowed, decisions);
  EXPECT_EQ(st->redis_stats().mismatches, 0U);
}

TEST(RedisComposite, ADeniedRequestWritesNothing) {
  auto st = open_store();
  ASSERT_TRUE(st);
  const auto a = st->define("room", any_policy{gcra::make(rate{10, 1000}, 10).value()}).value();
  const auto b = st->define("tight", any_policy{quota::make(1).value()}).value();
  const check both[] = {{a, "x"}, {b, "x"}};
  store_request r;
  r.checks = both;
  r.now = 0;
  EXPECT_TRUE(st->decide_at(r).d.allowed);
  const auto d = st->decide_at(r);  // the quota is spent: the GCRA key must not be charged
  EXPECT_FALSE(d.d.allowed);
  EXPECT_EQ(d.d.part, 1);
  const check only_a[] = {{a, "x"}};
  r.checks = only_a;
  std::vector<decision> pc(1);
  const auto p = st->peek_at(r, pc);
  EXPECT_EQ(p.d.remaining, 8) << "one admit charged the GCRA key, the denial did not";
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_composite_test
