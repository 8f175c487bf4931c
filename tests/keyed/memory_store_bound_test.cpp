// The memory store at max_keys (store/memory.hpp; semantics.md, "Keys":
// Bounded memory): a new key that would be admitted at the bound is answered
// by the failure mode and counted, a held key keeps its state, a denied new
// key is denied as always, and once a purge frees room new keys are
// admitted normally. The bound holds over all the store's policies.
#include <gtest/gtest.h>

#include <string>

#include "sluice/core/limiter.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"

#include "keyed/memory_store_support.hpp"

namespace sluice::keyed_memory_store_bound_test {
namespace {

using memory_store_support::one;

const gcra spec = gcra::make({1, 100}, 2).value();  // 1 per 100 ticks, burst 2

memory_store_options bounded(failure_mode mode) {
  memory_store_options o;
  o.max_keys = 2;
  o.on_full = mode;
  o.full_retry_after = 5000;
  o.keyed.hash_seed = 3;
  return o;
}

TEST(MemoryStoreBound, ANewKeyOverTheBoundIsAnsweredByTheFailureModeAndCounted) {
  for (const failure_mode mode : {failure_mode::fail_closed, failure_mode::fail_open, failure_mode::local}) {
    memory_store s(bounded(mode));
    const policy_id a = s.define("a", spec).value();
    const policy_id b = s.define("b", spec).value();
    ASSERT_TRUE(one(s, a, "x", 0).d.allowed);
    ASSERT_TRUE(one(s, a, "x", 0).d.allowed);  // x spent
    ASSERT_TRUE(one(s, b, "y", 0).d.allowed);  // two states, over two policies: full
    decision per[1];
    std::optional<tick> grows[1];
    const check c{a, "z"};
    const store_decision d = s.decide_at({.checks = {&c, 1}, .now = 10, .cost = 1, .id = {}}, per, grows);
    switch (mode) {
      case failure_mode::fail_closed:
        EXPECT_EQ(d.from, source::fail_closed);
        EXPECT_FALSE(d.d.allowed);
        EXPECT_EQ(d.d.retry_after, 5000);
        break;
      case failure_mode::fail_open:
        EXPECT_EQ(d.from, source::fail_open);
        EXPECT_TRUE(d.d.allowed);
        break;
      case failure_mode::local: {
        EXPECT_EQ(d.from, source::fallback);
        limiter<gcra> fresh(spec);
        EXPECT_EQ(d.d.allowed, true);
        EXPECT_EQ(per[0], fresh.try_acquire_at(10));
        break;
      }
    }
    EXPECT_FALSE(grows[0].has_value());  // no state behind the answer
    EXPECT_EQ(s.stats().fallbacks, 1U);
    EXPECT_EQ(s.keyed_totals().refused, 1U);
    EXPECT_EQ(s.stats().keys, 2U);  // nothing stored for z
    // The held key keeps its state: x is spent, as its own limiter says.
    limiter<gcra> x(spec);
    (void)x.try_acquire_at(0);
    (void)x.try_acquire_at(0);
    decision want = x.try_acquire_at(20);
    want.part = 0;
    EXPECT_EQ(one(s, a, "x", 20).d, want);
    EXPECT_EQ(one(s, a, "x", 20).from, source::store);
    // A new key that would be denied needs no room: decided by the store.
    EXPECT_EQ(one(s, a, "w", 20, 3).from, source::store);
    EXPECT_EQ(s.stats().fallbacks, 1U);
    // A purge at 300 frees both states (fresh from 200 and 100): new keys
    // are decided and stored as always.
    EXPECT_EQ(s.purge(300), 2U);
    const store_decision z = one(s, a, "z", 300);
    EXPECT_EQ(z.from, source::store);
    limiter<gcra> fresh(spec);
    decision fz = fresh.try_acquire_at(300);
    fz.part = 0;
    EXPECT_EQ(z.d, fz);
    EXPECT_EQ(s.stats().keys, 1U);
  }
}

TEST(MemoryStoreBound, AMultiCheckRequestNeedingRoomIsAnsweredWholeByTheMode) {
  memory_store s(bounded(failure_mode::fail_closed));
  const policy_id a = s.define("a", spec).value();
  ASSERT_TRUE(one(s, a, "x", 0).d.allowed);
  ASSERT_TRUE(one(s, a, "y", 0).d.allowed);
  const check checks[] = {{a, "x"}, {a, "new"}};
  const store_decision d = s.decide_at({.checks = checks, .now = 1, .cost = 1, .id = {}});
  EXPECT_EQ(d.from, source::fail_closed);
  EXPECT_FALSE(d.d.allowed);
  // x was not charged: one more unit at 1, then spent.
  EXPECT_TRUE(one(s, a, "x", 1).d.allowed);
  EXPECT_FALSE(one(s, a, "x", 1).d.allowed);
}

TEST(MemoryStoreBound, BatchesAnswerRefusedKeysByTheMode) {
  memory_store s(bounded(failure_mode::fail_closed));
  const policy_id a = s.define("a", spec).value();
  const check cs[] = {{a, "p"}, {a, "q"}, {a, "r"}, {a, "p"}};
  std::vector<store_request> rs;
  for (const check& c : cs) rs.push_back({.checks = {&c, 1}, .now = 0, .cost = 1, .id = {}});
  std::vector<store_decision> out(rs.size());
  s.decide_many_at(rs, out);
  EXPECT_EQ(out[0].from, source::store);
  EXPECT_EQ(out[1].from, source::store);
  EXPECT_EQ(out[2].from, source::fail_closed);
  EXPECT_EQ(out[3].from, source::store);  // p is held
  EXPECT_TRUE(out[3].d.allowed);
  EXPECT_EQ(s.stats().fallbacks, 1U);
  EXPECT_EQ(s.stats().from_store, 3U);
}

}  // namespace
}  // namespace sluice::keyed_memory_store_bound_test
