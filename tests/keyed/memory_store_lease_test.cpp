// Leases in the memory store (semantics.md, "Leases"): an admit on a policy
// with a concurrency part answers the nonce of the leases it took, one for
// all its checks; release_at frees them, once, on the keys the checks name
// and nowhere else; a repeated request id answers the same lease; a
// redefinition keeps the leases; a snapshot keeps them exactly.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sluice/core/concurrency.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"
#include "sluice/keyed/snapshot.hpp"

#include "keyed/memory_store_support.hpp"

namespace sluice::keyed_memory_store_lease_test {
namespace {

using memory_store_support::one;
using memory_store_support::policy;

release_result release_one(memory_store& s, policy_id p, std::string_view key, std::uint64_t nonce, tick now) {
  const check c{p, key};
  return s.release_at({&c, 1}, nonce, now);
}

TEST(MemoryStoreLeases, AtMostNInFlightAndAReleaseFreesOne) {
  memory_store s;
  const policy_id p = s.define("jobs", policy("concurrency 2 lease=100ns")).value();
  const store_decision a = one(s, p, "u", 0);
  const store_decision b = one(s, p, "u", 1);
  const store_decision c = one(s, p, "u", 2);
  ASSERT_TRUE(a.d.allowed);
  ASSERT_TRUE(b.d.allowed);
  EXPECT_FALSE(c.d.allowed);
  EXPECT_NE(a.lease, 0U);
  EXPECT_NE(b.lease, 0U);
  EXPECT_NE(a.lease, b.lease);
  EXPECT_EQ(c.lease, 0U);          // a denial takes no lease
  EXPECT_EQ(c.d.retry_after, 98);  // until the first lease expires at 100
  const release_result r = release_one(s, p, "u", a.lease, 3);
  EXPECT_EQ(r.from, source::store);
  EXPECT_EQ(r.units, 1);
  EXPECT_EQ(release_one(s, p, "u", a.lease, 3).units, 0);  // once
  EXPECT_TRUE(one(s, p, "u", 4).d.allowed);
  EXPECT_FALSE(one(s, p, "u", 5).d.allowed);
  EXPECT_TRUE(one(s, p, "u", 101).d.allowed);  // b's lease expired at 101
}

TEST(MemoryStoreLeases, AReleaseNamingAnotherKeyDoesNothing) {
  memory_store s;
  const policy_id p = s.define("jobs", policy("concurrency 1")).value();
  const store_decision a = one(s, p, "alice", 0);
  ASSERT_TRUE(a.d.allowed);
  EXPECT_EQ(release_one(s, p, "bob", a.lease, 1).units, 0);
  EXPECT_EQ(release_one(s, p, "alice", a.lease + 1, 1).units, 0);
  EXPECT_FALSE(one(s, p, "alice", 2).d.allowed);  // still held
  EXPECT_EQ(release_one(s, 99, "alice", a.lease, 1).from, source::error);
  EXPECT_EQ(s.release_at({}, a.lease, 1).from, source::error);
}

TEST(MemoryStoreLeases, APolicyWithoutConcurrencyTakesNoLease) {
  memory_store s;
  const policy_id g = s.define("api", policy("gcra 10/1s")).value();
  EXPECT_EQ(one(s, g, "u", 0).lease, 0U);
  (void)s.define("jobs", policy("concurrency 1")).value();
  EXPECT_EQ(one(s, g, "u", 1).lease, 0U);  // with a concurrency policy defined too
}

TEST(MemoryStoreLeases, OneLeaseForEveryConcurrencyCheckOfARequest) {
  memory_store s;
  const policy_id a = s.define("a", policy("all(gcra 100/1s, concurrency 1)")).value();
  const policy_id b = s.define("b", policy("concurrency 3")).value();
  const policy_id g = s.define("g", policy("gcra 100/1s")).value();
  const check checks[] = {{a, "k"}, {b, "k"}, {g, "k"}};
  const store_decision d = s.decide_at({.checks = checks, .now = 0, .cost = 1, .id = {}});
  ASSERT_TRUE(d.d.allowed);
  ASSERT_NE(d.lease, 0U);
  EXPECT_FALSE(s.decide_at({.checks = checks, .now = 1, .cost = 1, .id = {}}).d.allowed);  // a's one unit held
  const release_result r = s.release_at(checks, d.lease, 2);
  EXPECT_EQ(r.from, source::store);
  EXPECT_EQ(r.per_check[0], 1);
  EXPECT_EQ(r.per_check[1], 1);
  EXPECT_EQ(r.per_check[2], 0);
  EXPECT_EQ(r.units, 2);
  EXPECT_TRUE(s.decide_at({.checks = checks, .now = 3, .cost = 1, .id = {}}).d.allowed);
}

TEST(MemoryStoreLeases, ADeniedRequestHoldsNothingAnywhere) {
  memory_store s;
  const policy_id c = s.define("c", policy("concurrency 5")).value();
  const policy_id q = s.define("q", policy("quota 0")).value();
  const check checks[] = {{c, "k"}, {q, "k"}};
  const store_decision d = s.decide_at({.checks = checks, .now = 0, .cost = 1, .id = {}});
  EXPECT_FALSE(d.d.allowed);
  EXPECT_EQ(d.lease, 0U);
  const check alone{c, "k"};
  decision each[1];
  (void)s.peek_at({.checks = {&alone, 1}, .now = 0, .cost = 1, .id = {}}, each);
  EXPECT_EQ(each[0].remaining, 4);  // the figures of an admit of 1 on a state that holds nothing
}

TEST(MemoryStoreLeases, ARepeatedIdAnswersTheSameLease) {
  memory_store s;
  const policy_id p = s.define("jobs", policy("concurrency 1")).value();
  const store_decision a = one(s, p, "u", 0, 1, "req-1");
  const store_decision b = one(s, p, "u", 1, 1, "req-1");
  ASSERT_TRUE(a.d.allowed);
  EXPECT_EQ(b.from, source::replayed);
  EXPECT_EQ(b.lease, a.lease);
  EXPECT_EQ(release_one(s, p, "u", b.lease, 2).units, 1);
}

TEST(MemoryStoreLeases, ARedefinitionKeepsTheLeases) {
  memory_store s;
  const policy_id p = s.define_at("jobs", policy("concurrency 1 lease=100ns"), 0).value();
  const store_decision a = one(s, p, "u", 0);
  ASSERT_TRUE(a.d.allowed);
  ASSERT_TRUE(s.define_at("jobs", policy("concurrency 2 lease=1s"), 5).ok());
  EXPECT_TRUE(one(s, p, "u", 6).d.allowed);
  EXPECT_FALSE(one(s, p, "u", 7).d.allowed);
  EXPECT_EQ(release_one(s, p, "u", a.lease, 8).units, 1);  // the lease carried over with its nonce
  EXPECT_TRUE(one(s, p, "u", 9).d.allowed);
}

TEST(MemoryStoreLeases, ASnapshotKeepsEveryLeaseExactly) {
  const any_policy p = policy("all(gcra 10/1s, concurrency 3 lease=1m)");
  any_state st = fresh_state(p);
  {
    lease_scope scope(0xfeedfacecafebeefULL);
    ASSERT_TRUE(decide(p, st, 1000, 2).allowed);
  }
  {
    lease_scope scope(7);
    ASSERT_TRUE(decide(p, st, 2000, 1).allowed);
  }
  const std::string bytes = encode_state(p, st, 1500);
  auto back = decode_state(p, bytes, 1500);
  ASSERT_TRUE(back.ok()) << back.err().what();
  EXPECT_EQ(back.value(), st);
  auto pol = decode_policy(encode_policy(p));
  ASSERT_TRUE(pol.ok());
  EXPECT_EQ(format_policy(pol.value()), format_policy(p));
  // Older tags read as before: the composites keep 10 and 11.
  EXPECT_EQ(static_cast<unsigned char>(encode_policy(p)[0]), 10U);
  EXPECT_EQ(static_cast<unsigned char>(encode_policy(policy("any(quota 1)"))[0]), 11U);
  EXPECT_EQ(static_cast<unsigned char>(encode_policy(policy("concurrency 1"))[0]), 12U);
  // A corrupt state is refused, naming the state.
  std::string bad = bytes;
  bad[bad.size() - 1] = '\x7f';  // the last lease's units past 2^62
  EXPECT_FALSE(decode_state(p, bad, 1500).ok());
}

}  // namespace
}  // namespace sluice::keyed_memory_store_lease_test
