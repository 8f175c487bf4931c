// Leases in the Redis store (semantics.md, "Leases in a Redis store"): the
// conformance suite's lease traces (tests/conformance/lease_traces.hpp)
// through a real Redis — one call at a time, through the asynchronous face
// (decide_async) and pipelined (decide_many_at) —
// compared with the core (allowed, lease taken, units freed per check) and,
// field for field, with the memory store; and what a lease meets besides:
// reports (charge nothing), refunds by request id (release), repeats of an
// id (the same lease), redefinitions (leases carried over), corrupt
// values, the bound on N, and a release being one FCALL.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "redis/alternating_store.hpp"
#include "redis/client/client.hpp"
#include "redis/lease_run.hpp"
#include "redis/store_support.hpp"
#include "redis/test_client.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::redis_test::redis_store_lease_test {
namespace {

/// Lease traces of seeds 1..`seeds` through `rs` (`f`: how it decides
/// acquires), as the core and the memory store, with more than `min_admits`
/// leases taken and `min_freed` releases that freed units.
void run_traces(store& rs, face f, std::uint64_t seeds, redis_store* faced, std::size_t min_admits,
                std::size_t min_freed) {
  memory_store_options mo;
  mo.keyed.auto_purge = false;
  mo.max_policies = 1200;
  memory_store mem(mo);
  std::size_t admits = 0, freed = 0;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    const lease_trace t = conformance::make_lease_trace(seed);
    const std::string prefix = "t" + std::to_string(seed) + ":";
    const auto core = conformance::reference_answers(t);
    const auto m = run_trace(mem, t, prefix, face::one_call);
    const auto got = run_trace(rs, t, prefix, f, faced);
    ASSERT_EQ(judge(t, got, m, core), "") << "seed " << seed;
    for (std::size_t i = 0; i < core.size(); ++i) {
      admits += !t.steps[i].release && core[i].leased;
      for (auto u : core[i].freed) freed += u > 0;
    }
  }
  EXPECT_GT(admits, min_admits);
  EXPECT_GT(freed, min_freed);
  std::printf("lease traces (%s): %llu seeds, %zu leases taken, %zu releases that freed units, all agree\n",
              f == face::one_call ? "one call at a time"
              : f == face::async  ? "asynchronous face"
                                  : "pipelined",
              static_cast<unsigned long long>(seeds), admits, freed);
}

/// The store met no failure and no mismatch, and decided every lease
/// itself (nothing carried over).
void expect_clean(const redis_store& rs) {
  const auto s = rs.redis_stats();
  EXPECT_EQ(s.mismatches, 0U);
  EXPECT_EQ(s.carried, 0U);  // every decision and release by the library (or the module) itself
  EXPECT_EQ(rs.stats().store_failures, 0U);
}

/// The lease tests, on each path (`_module`: every release, decision and
/// compare-and-set through the module's commands).
class RedisLeases : public ::testing::TestWithParam<store_path> {
 protected:
  /// `seeds` traces through a store of this test's path: the module's path
  /// runs a third of them (what differs is the calls' command, not the
  /// arithmetic); on it, the releases ran as SLUICE.RELEASE.
  void run_face(face f, std::uint64_t seeds) const {
    const store_path path = GetParam();
    auto rs = open_patient_store({}, url_of(path));
    ASSERT_TRUE(rs);
    auto raw = raw_client(server_of(path));
    const std::uint64_t releases0 = calls_of(raw, "sluice.release");
    // (The library's path: more than 300 leases and 100 releases; the
    // module's, its third.)
    const std::uint64_t n = path == store_path::library ? seeds : seeds / 3;
    run_traces(*rs, f, n, rs.get(), 300 * n / seeds, 100 * n / seeds);
    expect_clean(*rs);
    if (path == store_path::module) {
      EXPECT_GT(calls_of(raw, "sluice.release"), releases0 + seeds / 6);
    } else {
      EXPECT_EQ(rs->redis_stats().module_calls, 0U);
    }
  }
  [[nodiscard]] std::unique_ptr<redis_store> open(store_options o = {}) const {
    return open_store(std::move(o), url_of(GetParam()));
  }
};

TEST_P(RedisLeases, TracesOneCallAtATimeAsTheCoreAndTheMemoryStore) { run_face(face::one_call, 300); }
TEST_P(RedisLeases, TracesThroughTheAsynchronousFace) { run_face(face::async, 150); }
TEST_P(RedisLeases, TracesPipelined) { run_face(face::pipelined, 150); }

/// Two stores of a fleet on one server, one on the module's path and one on
/// the library's, taking a trace's acquires and releases in turn (one key's
/// leases taken by one path and released by the other): as the core and
/// the memory store.
TEST(RedisLeasesAlternatingPaths, TracesOneCallAtATimeAsTheCoreAndTheMemoryStore) {
  alternating_store st;
  ASSERT_TRUE(st.ok());
  auto raw = raw_client(module_server());
  const std::uint64_t releases0 = calls_of(raw, "sluice.release");
  run_traces(st, face::one_call, 100, nullptr, 100, 33);
  expect_clean(st.on_module());
  expect_clean(st.on_library());
  st.expect_paths(300);
  EXPECT_GT(calls_of(raw, "sluice.release"), releases0 + 20);  // the module's store's releases, by the module
}

/// A plain lease-holding store and its memory twin, each with policy `p` as "p".
struct pair_of_stores {
  std::unique_ptr<redis_store> rs;
  memory_store mem;
  policy_id rid = 0, mid = 0;
  pair_of_stores(const std::string& p, store_path path) : rs(open_store({}, url_of(path))) {
    rid = rs->define("p", parse_policy(p).value()).value();
    mid = mem.define("p", parse_policy(p).value()).value();
  }
};

TEST_P(RedisLeases, ReportsChargeAConcurrencyPartNothing) {
  pair_of_stores s("all(gcra 10/1s burst=50, concurrency 2 lease=100ns)", GetParam());
  const check rc{s.rid, "k", 0};
  const check mc{s.mid, "k", 0};
  ASSERT_TRUE(s.rs->decide_at(one_check(rc, 0)).d.allowed);
  ASSERT_TRUE(s.mem.decide_at(one_check(mc, 0)).d.allowed);
  // Reports of 1 and of 3 (past N): the GCRA part is charged, the
  // concurrency part not (no lease): the next acquire still fits.
  for (const std::int64_t c : {1, 3}) {
    const store_decision a = s.rs->report_at(one_check(rc, 10, c));
    const store_decision b = s.mem.report_at(one_check(mc, 10, c));
    EXPECT_EQ(a.from, source::store);
    EXPECT_EQ(a.lease, 0U);
    EXPECT_EQ(show(a.d), show(b.d)) << "cost " << c;
  }
  // A peek reads as the memory store's, and takes no lease.
  for (const std::int64_t c : {1, 2}) {
    const store_decision pa = s.rs->peek_at(one_check(rc, 15, c));
    EXPECT_EQ(pa.lease, 0U);
    EXPECT_EQ(show(pa.d), show(s.mem.peek_at(one_check(mc, 15, c)).d)) << "cost " << c;
  }
  const store_decision a = s.rs->decide_at(one_check(rc, 20));
  const store_decision b = s.mem.decide_at(one_check(mc, 20));
  EXPECT_EQ(show(a.d), show(b.d));
  EXPECT_NE(a.lease, 0U);
  EXPECT_EQ(show(s.rs->peek_at(one_check(rc, 21)).d), show(s.mem.peek_at(one_check(mc, 21)).d));  // full now
}

TEST_P(RedisLeases, ARepeatedIdAnswersTheSameLeaseAndARefundReleasesIt) {
  store_options o;
  auto rs = open(o);
  ASSERT_TRUE(rs);
  const policy_id p = rs->define("p", parse_policy("concurrency 1 lease=1000ns").value()).value();
  const check c{p, "k", 0};
  const store_decision first = rs->decide_at(one_check(c, 0, 1, "id-1"));
  ASSERT_TRUE(first.d.allowed);
  ASSERT_NE(first.lease, 0U);
  const store_decision again = rs->decide_at(one_check(c, 5, 1, "id-1"));
  EXPECT_EQ(again.from, source::replayed);
  EXPECT_EQ(again.lease, first.lease);
  EXPECT_EQ(show(again.d), show(first.d));
  EXPECT_FALSE(rs->decide_at(one_check(c, 10)).d.allowed);  // held
  // The refund of the admit releases its lease (semantics.md, "Leases"),
  // with the memory store's figures.
  memory_store mem;
  const policy_id mp = mem.define("p", parse_policy("concurrency 1 lease=1000ns").value()).value();
  const check mc{mp, "k", 0};
  ASSERT_TRUE(mem.decide_at(one_check(mc, 0, 1, "id-1")).d.allowed);
  std::int64_t given[1] = {};
  decision figs[1] = {};
  const refund_answer a = rs->refund_at("id-1", 20, figs, given);
  EXPECT_EQ(a.status, refund_status::refunded);
  EXPECT_EQ(given[0], 1);
  std::int64_t mgiven[1] = {};
  decision mfigs[1] = {};
  const refund_answer b = mem.refund_at("id-1", 20, mfigs, mgiven);
  EXPECT_EQ(b.status, refund_status::refunded);
  EXPECT_EQ(mgiven[0], 1);
  EXPECT_EQ(show(a.d), show(b.d));
  EXPECT_EQ(show(figs[0]), show(mfigs[0]));
  EXPECT_EQ(rs->refund_at("id-1", 21).status, refund_status::already_refunded);
  const release_result gone = rs->release_at(std::span<const check>(&c, 1), first.lease, 21);
  EXPECT_EQ(gone.from, source::store);
  EXPECT_EQ(gone.units, 0);  // already given back
  const store_decision next = rs->decide_at(one_check(c, 30));
  EXPECT_TRUE(next.d.allowed);
  EXPECT_NE(next.lease, first.lease);
  EXPECT_EQ(rs->redis_stats().mismatches, 0U);
}

TEST_P(RedisLeases, ARedefinitionCarriesTheLeasesOverAndAReleaseCarriesThem) {
  auto rs = open();
  ASSERT_TRUE(rs);
  memory_store mem;
  const any_policy three = parse_policy("concurrency 3 lease=1000ns").value();
  const any_policy one = parse_policy("concurrency 1 lease=50ns").value();
  const policy_id rp = rs->define("p", three).value();
  const policy_id mp = mem.define("p", three).value();
  const check rc{rp, "k", 0};
  const check mc{mp, "k", 0};
  std::uint64_t rl[2] = {};
  std::uint64_t ml[2] = {};
  for (int i = 0; i < 2; ++i) {
    rl[i] = rs->decide_at(one_check(rc, i)).lease;
    ml[i] = mem.decide_at(one_check(mc, i)).lease;
    ASSERT_NE(rl[i], 0U);
  }
  // To N = 1 (and another D): the two leases (expiring at 1000 and 1001)
  // carried over as they are, so nothing is admitted.
  const auto redefined = rs->define("p", one);
  ASSERT_TRUE(redefined.ok()) << redefined.err().what();
  ASSERT_TRUE(mem.define_at("p", one, 2).ok());
  EXPECT_EQ(show(rs->decide_at(one_check(rc, 3)).d), show(mem.decide_at(one_check(mc, 3)).d));
  // A release on the earlier configuration's value: carried, then released.
  const release_result a = rs->release_at(std::span<const check>(&rc, 1), rl[0], 4);
  const release_result b = mem.release_at(std::span<const check>(&mc, 1), ml[0], 4);
  EXPECT_EQ(a.from, source::store);
  EXPECT_EQ(a.units, 1);
  EXPECT_EQ(a.units, b.units);
  EXPECT_EQ(show(rs->decide_at(one_check(rc, 5)).d), show(mem.decide_at(one_check(mc, 5)).d));
  EXPECT_EQ(rs->release_at(std::span<const check>(&rc, 1), rl[1], 6).units, 1);
  EXPECT_EQ(mem.release_at(std::span<const check>(&mc, 1), ml[1], 6).units, 1);
  const store_decision x = rs->decide_at(one_check(rc, 7));
  const store_decision y = mem.decide_at(one_check(mc, 7));
  EXPECT_TRUE(x.d.allowed);
  EXPECT_EQ(show(x.d), show(y.d));
  EXPECT_GE(rs->redis_stats().carried, 1U);
  EXPECT_EQ(rs->redis_stats().mismatches, 0U);
}

TEST_P(RedisLeases, NPastTheBoundIsRefusedNamingConcurrency) {
  auto rs = open();
  ASSERT_TRUE(rs);
  EXPECT_TRUE(rs->define("ok", parse_policy("concurrency 65536").value()).ok());
  const auto r = rs->define("big", parse_policy("concurrency 65537").value());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().field, "concurrency");
  const auto in = rs->define("nested", parse_policy("all(gcra 5/1s, concurrency 100000)").value());
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.err().field, "concurrency");
}

TEST_P(RedisLeases, AReleaseIsOneCallAndNamesNothingItDoesNotHold) {
  auto rs = open();
  ASSERT_TRUE(rs);
  const policy_id p = rs->define("p", parse_policy("all(gcra 100/1s, concurrency 2)").value()).value();
  const check c{p, "k", 0};
  const std::uint64_t lease = rs->decide_at(one_check(c, 0)).lease;
  ASSERT_NE(lease, 0U);
  const auto calls = [&] {
    const std::optional<store_figures> f = rs->figures();
    std::uint64_t n = 0;
    if (f)
      for (const std::uint64_t b : f->latency_buckets) n += b;
    return n;
  };
  auto raw = raw_client(server_of(GetParam()));
  const std::string command = GetParam() == store_path::module ? "sluice.release" : "fcall";
  const std::uint64_t before = calls(), ran = calls_of(raw, command);
  const release_result r = rs->release_at(std::span<const check>(&c, 1), lease, 1);
  EXPECT_EQ(calls() - before, 1U);  // one call: an FCALL, or SLUICE.RELEASE on the module's path
  EXPECT_EQ(calls_of(raw, command) - ran, 1U);
  EXPECT_EQ(r.from, source::store);
  EXPECT_EQ(r.units, 1);
  EXPECT_EQ(r.per_check[0], 1);
  // Released, never issued, another key's: nothing held, nothing changes.
  EXPECT_EQ(rs->release_at(std::span<const check>(&c, 1), lease, 2).units, 0);
  EXPECT_EQ(rs->release_at(std::span<const check>(&c, 1), 12345, 2).units, 0);
  const check other{p, "other", 0};
  EXPECT_EQ(rs->release_at(std::span<const check>(&other, 1), lease, 2).units, 0);
  // A bad request: no checks, an unknown policy.
  EXPECT_EQ(rs->release_at({}, lease, 2).from, source::error);
  const check unknown{p + 100, "k", 0};
  EXPECT_EQ(rs->release_at(std::span<const check>(&unknown, 1), lease, 2).from, source::error);
}

TEST_P(RedisLeases, ACorruptValueIsAnErrorAndNothingIsReleased) {
  store_options o;
  o.key_prefix = fresh_prefix("corrupt");
  auto rs = open(o);
  ASSERT_TRUE(rs);
  const policy_id p = rs->define("p", parse_policy("concurrency 2").value()).value();
  const check c{p, "k", 0};
  const std::uint64_t lease = rs->decide_at(one_check(c, 0)).lease;
  ASSERT_NE(lease, 0U);
  redis::async_client_options co;
  co.where = redis::parse_url(server_of(GetParam()).url()).value();
  co.command_timeout = std::chrono::seconds(2);
  redis::test_client cli(co);
  const auto get = [&](const std::string& key) {
    const auto r = cli.call({"GET", key});
    const auto* rep = std::get_if<redis::reply>(&r);
    return rep != nullptr && rep->as_string() ? std::string(*rep->as_string()) : std::string();
  };
  const std::string key = o.key_prefix + "s:p:{k}";
  std::string bad = get(key);
  ASSERT_EQ(bad.size(), 9U + 2 * 8 + 5 * 8) << "the tag, latest, one lease";
  bad.resize(bad.size() - 8);  // a lease cut short
  (void)cli.call({"SET", key, bad});
  EXPECT_EQ(rs->release_at(std::span<const check>(&c, 1), lease, 1).from, source::error);
  EXPECT_EQ(rs->decide_at(one_check(c, 2)).from, source::error);
  EXPECT_EQ(get(key), bad);  // untouched
}

TEST_P(RedisLeases, AConcurrencyDenialIsNeverCachedSoAReleaseElsewhereEndsIt) {
  // Two processes of a fleet, each with its deny cache: a release through
  // one must let the other admit at once, not after the cached retry_after.
  store_options o;
  o.key_prefix = fresh_prefix("fleet");
  o.deny_cache = true;
  auto a = open(o);
  auto b = open(o);
  ASSERT_TRUE(a && b);
  const any_policy p = parse_policy("concurrency 1 lease=1000000ns").value();
  const check ca{a->define("p", p).value(), "k", 0};
  const check cb{b->define("p", p).value(), "k", 0};
  const store_decision first = a->decide_at(one_check(ca, 0));
  ASSERT_TRUE(first.d.allowed);
  for (tick t = 1; t <= 3; ++t) {
    const store_decision d = a->decide_at(one_check(ca, t));
    EXPECT_FALSE(d.d.allowed);
    EXPECT_EQ(d.from, source::store);  // never the deny cache
    EXPECT_EQ(d.d.retry_after, 1000000 - t);
  }
  EXPECT_EQ(b->release_at(std::span<const check>(&cb, 1), first.lease, 4).units, 1);
  const store_decision next = a->decide_at(one_check(ca, 5));
  EXPECT_TRUE(next.d.allowed);
  EXPECT_EQ(next.from, source::store);
  EXPECT_EQ(a->stats().deny_cache_hits, 0U);
}

TEST_P(RedisLeases, AKeyLivesUntilItsLatestLeaseExpiresPlusTheGraceAndAReleaseKeepsItsTtl) {
  store_options o;
  o.key_prefix = fresh_prefix("ttl");
  auto rs = open(o);  // ticks of 1 ns
  ASSERT_TRUE(rs);
  const policy_id p = rs->define("p", parse_policy("concurrency 3 lease=5s").value()).value();
  const check c{p, "k", 0};
  const std::uint64_t lease = rs->decide_at(one_check(c, 0)).lease;
  ASSERT_NE(lease, 0U);
  redis::async_client_options co;
  co.where = redis::parse_url(server_of(GetParam()).url()).value();
  co.command_timeout = std::chrono::seconds(2);
  redis::test_client cli(co);
  const auto pttl = [&] {
    const auto r = cli.call({"PTTL", o.key_prefix + "s:p:{k}"});
    const auto* rep = std::get_if<redis::reply>(&r);
    return rep != nullptr && rep->as_integer() ? *rep->as_integer() : -100;
  };
  const std::int64_t grace = o.grace.count();
  const std::int64_t first = pttl();
  EXPECT_GT(first, 5000 + grace - 2000);  // 5 s of lease and the grace, less a loaded machine's delay
  EXPECT_LE(first, 5000 + grace + 3);
  // A later lease (expiring at 7 s) lengthens it to 7 s and the grace: a PX
  // counts from the writing decision's instant (2 s), so 5 s of it are left
  // (docs/redis.md, "Key layout": ceil(ticks_to_fresh) + grace + 1 ms). A
  // release keeps it.
  ASSERT_NE(rs->decide_at(one_check(c, 2'000'000'000)).lease, 0U);
  const std::int64_t second = pttl();
  EXPECT_GT(second, 5000 + grace - 2000);
  EXPECT_LE(second, 5000 + grace + 3);
  ASSERT_EQ(rs->release_at(std::span<const check>(&c, 1), lease, 2'000'000'001).units, 1);
  const std::int64_t after = pttl();
  EXPECT_GT(after, second - 2000);
  EXPECT_LE(after, second);
}

INSTANTIATE_TEST_SUITE_P(EachPath, RedisLeases, ::testing::Values(store_path::library, store_path::module),
                         path_test_name);

}  // namespace
}  // namespace sluice::redis_test::redis_store_lease_test
