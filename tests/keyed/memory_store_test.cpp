// The memory store (store/memory.hpp): one check decides as the keyed store,
// several atomically as all_of, bad requests are counted errors, request ids
// replay, and a redefinition carries every state over.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sluice/core/policy_expr.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"

#include "keyed/memory_store_support.hpp"

namespace sluice::keyed_memory_store_test {
namespace {

using memory_store_support::one;
using memory_store_support::policy;

TEST(MemoryStore, OneCheckDecidesAsTheKeyedStore) {
  memory_store s;
  const policy_id p = s.define("api", policy("gcra 2/10ns")).value();
  keyed_limiter k(policy("gcra 2/10ns"));
  for (tick t : {0, 0, 0, 3, 5, 9, 10, 30}) {
    const store_decision d = one(s, p, "a", t);
    decision want = k.try_acquire_at("a", t, 1);
    want.part = 0;
    EXPECT_EQ(d.d, want) << t;
    EXPECT_EQ(d.from, source::store);
  }
  EXPECT_EQ(s.stats().decisions, 8U);
  EXPECT_EQ(s.stats().from_store, 8U);
  EXPECT_EQ(s.stats().keys, 1U);
}

TEST(MemoryStore, TheDocsExample) {
  // docs/stores.md, as written there.
  sluice::memory_store store;
  auto api = store.define("api", sluice::parse_policy("gcra 100/1s burst=20").value()).value();
  auto day = store.define("day", sluice::parse_policy("fixed-window 10000/1d").value()).value();
  const sluice::check checks[] = {{api, "user:42"}, {day, "user:42"}};
  sluice::decision each[2];
  sluice::store_decision d =
      store.decide({.checks = checks, .now = 0, .cost = 1, .id = {}}, each);  // decide reads the clock
  EXPECT_TRUE(d.d.allowed);
  EXPECT_EQ(d.from, source::store);
  EXPECT_EQ(each[0].remaining, 19);
  EXPECT_EQ(each[1].remaining, 9999);
  EXPECT_EQ(d.d.remaining, 19);
  EXPECT_EQ(d.d.part, 0);
}

TEST(MemoryStore, SameNameKeepsItsIdAndNewNamesGetNewOnes) {
  memory_store s;
  const policy_id a = s.define("a", policy("fixed-window 3/10ns")).value();
  const policy_id b = s.define("b", policy("gcra 1/1ns")).value();
  EXPECT_NE(a, b);
  EXPECT_EQ(s.define("a", policy("fixed-window 5/10ns")).value(), a);
  EXPECT_EQ(s.find("b"), b);
  EXPECT_FALSE(s.find("c").has_value());
  const auto bad = s.define("", policy("gcra 1/1ns"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.err().field, "name");
}

TEST(MemoryStore, ADeniedMultiCheckChargesNoCheck) {
  memory_store s;
  const policy_id fw = s.define("fw", policy("fixed-window 3/100ns")).value();
  const policy_id g = s.define("g", policy("gcra 1/100ns burst=1")).value();
  const check both[] = {{fw, "A"}, {g, "B"}};
  decision per[2];
  store_decision d = s.decide_at({.checks = both, .now = 0, .cost = 1, .id = {}}, per);
  ASSERT_TRUE(d.d.allowed);
  EXPECT_EQ(per[0].remaining, 2);
  EXPECT_EQ(per[1].remaining, 0);
  EXPECT_EQ(d.d.remaining, 0);
  EXPECT_EQ(d.d.part, 1);
  // B is spent: the pair is denied, and A is not charged.
  d = s.decide_at({.checks = both, .now = 1, .cost = 1, .id = {}}, per);
  ASSERT_FALSE(d.d.allowed);
  EXPECT_EQ(d.d.part, 1);
  EXPECT_EQ(d.d.retry_after, 99);
  EXPECT_FALSE(per[0].allowed);
  EXPECT_EQ(per[0].retry_after, 0);  // it alone would have admitted
  EXPECT_EQ(per[0].remaining, 2);    // and reports its untouched state
  EXPECT_EQ(per[1].retry_after, 99);
  EXPECT_EQ(one(s, fw, "A", 2).d.remaining, 1);  // A holds one admit only
}

TEST(MemoryStore, EachCheckIsChargedItsOwnCostAndADenialNone) {
  // One request: 1 unit of a request limit, 40 of a token budget. When the
  // budget check denies, the request check (which alone would admit) is not
  // charged; when both admit, each is charged its own cost.
  memory_store s;
  const policy_id req = s.define("req", policy("fixed-window 10/100ns")).value();
  const policy_id tok = s.define("tok", policy("fixed-window 100/100ns")).value();
  const check both[] = {{req, "u", 1}, {tok, "u", 40}};
  decision per[2];
  for (tick t : {0, 1}) {
    const store_decision d = s.decide_at({.checks = both, .now = t, .cost = 1, .id = {}}, per);
    ASSERT_TRUE(d.d.allowed) << t;
  }
  EXPECT_EQ(per[0].remaining, 8);
  EXPECT_EQ(per[1].remaining, 20);
  const store_decision d = s.decide_at({.checks = both, .now = 2, .cost = 1, .id = {}}, per);
  ASSERT_FALSE(d.d.allowed);
  EXPECT_EQ(d.d.part, 1);
  EXPECT_EQ(d.d.retry_after, 98);
  EXPECT_FALSE(per[0].allowed);
  EXPECT_EQ(per[0].retry_after, 0);
  EXPECT_EQ(per[0].remaining, 8);
  EXPECT_EQ(per[1].remaining, 20);
  EXPECT_EQ(per[1].retry_after, 98);
  EXPECT_EQ(one(s, req, "u", 3).d.remaining, 7);      // two admits of 1, then this one
  EXPECT_EQ(one(s, tok, "u", 3, 20).d.remaining, 0);  // 80 charged before: 20 left
  // A check's cost of 0 is the request's; below 0 a bad request.
  const check inherit[] = {{req, "v"}, {tok, "v", 3}};
  ASSERT_TRUE(s.decide_at({.checks = inherit, .now = 4, .cost = 5, .id = {}}, per).d.allowed);
  EXPECT_EQ(per[0].remaining, 5);
  EXPECT_EQ(per[1].remaining, 97);
  const check negative[] = {{req, "w", -1}};
  EXPECT_EQ(s.decide_at({.checks = negative, .now = 5, .cost = 1, .id = {}}).from, source::error);
  // A request cost below 1 that no check uses is no error.
  const check own[] = {{req, "w", 2}};
  EXPECT_TRUE(s.decide_at({.checks = own, .now = 5, .cost = 0, .id = {}}).d.allowed);
}

TEST(KeyedMultiKey, EachCheckAtItsOwnCostAndANegativeOneRefused) {
  keyed_limiter a(policy("fixed-window 5/100ns"));
  keyed_limiter b(policy("gcra 10/100ns burst=10"));
  const keyed_check mixed[] = {{&a, "k", 4}, {&b, "k"}};
  decision per[2];
  ASSERT_TRUE(keyed_limiter::try_acquire_all_at(mixed, 0, 7, per).allowed);
  EXPECT_EQ(per[0].remaining, 1);                                             // 4 of 5
  EXPECT_EQ(per[1].remaining, 3);                                             // the call's 7 of 10
  EXPECT_FALSE(keyed_limiter::try_acquire_all_at(mixed, 1, 1, per).allowed);  // a: 4 > 1 left
  EXPECT_EQ(per[1].remaining, 3);                                             // b not charged
  const keyed_check bad[] = {{&a, "k", -2}};
  EXPECT_THROW((void)keyed_limiter::try_acquire_all_at(bad, 2, 1), std::invalid_argument);
  EXPECT_TRUE(a.peek_at("k", 2, 1).allowed);  // one unit left: nothing charged
  EXPECT_FALSE(a.peek_at("k", 2, 2).allowed);
}

TEST(MemoryStore, NewKeysInAMultiCheckAreStoredOnlyWhenAdmitted) {
  memory_store s;
  const policy_id a = s.define("a", policy("sliding-log 2/10ns")).value();
  const policy_id b = s.define("b", policy("token-bucket 1/10ns burst=1")).value();
  const check both[] = {{a, "x"}, {b, "y"}};
  EXPECT_TRUE(s.decide_at({.checks = both, .now = 0, .cost = 1, .id = {}}).d.allowed);
  EXPECT_EQ(s.stats().keys, 2U);
  const check other[] = {{a, "new"}, {b, "y"}};
  EXPECT_FALSE(s.decide_at({.checks = other, .now = 1, .cost = 1, .id = {}}).d.allowed);
  EXPECT_EQ(s.stats().keys, 2U);  // "new" was not stored
}

TEST(MemoryStore, BadRequestsAreCountedErrors) {
  memory_store s;
  const policy_id p = s.define("p", policy("gcra 1/1ns")).value();
  const check unknown{p + 7, "k"};
  EXPECT_EQ(s.decide_at({.checks = {&unknown, 1}, .now = 0, .cost = 1, .id = {}}).from, source::error);
  EXPECT_EQ(one(s, p, "k", 0, 0).from, source::error);
  EXPECT_EQ(one(s, p, "k", 0, -5).from, source::error);
  std::vector<check> many(max_checks + 1);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = {p, "k"};
  const store_decision d = s.decide_at({.checks = many, .now = 0, .cost = 1, .id = {}});
  EXPECT_EQ(d.from, source::error);
  EXPECT_FALSE(d.d.allowed);
  EXPECT_EQ(d.d.retry_after, never);
  const check twice[] = {{p, "k"}, {p, "k"}};
  EXPECT_EQ(s.decide_at({.checks = twice, .now = 0, .cost = 1, .id = {}}).from, source::error);
  EXPECT_EQ(s.decide_at({.checks = {}, .now = 0, .cost = 1, .id = {}}).from, source::error);
  EXPECT_EQ(s.stats().errors, 6U);
  EXPECT_EQ(s.stats().keys, 0U);
  EXPECT_TRUE(one(s, p, "k", 0).d.allowed);  // nothing was charged
}

TEST(MemoryStore, ARepeatedIdReplaysTheFirstDecisionWithinTheWindow) {
  memory_store_options o;
  o.idempotency_window = 100;
  memory_store s(o);
  const policy_id p = s.define("p", policy("fixed-window 2/1000ns")).value();
  const check c{p, "k"};
  const store_decision first = s.decide_at({.checks = {&c, 1}, .now = 0, .cost = 1, .id = "req-1"});
  ASSERT_TRUE(first.d.allowed);
  EXPECT_EQ(first.from, source::store);
  const store_decision again = s.decide_at({.checks = {&c, 1}, .now = 50, .cost = 1, .id = "req-1"});
  EXPECT_EQ(again.from, source::replayed);
  EXPECT_EQ(again.d, first.d);
  EXPECT_EQ(one(s, p, "k", 60).d.remaining, 0);  // charged once: 2 − 1 − 1
  // Past the window the id is decided again (and denied: the window is full).
  const store_decision late = s.decide_at({.checks = {&c, 1}, .now = 100, .cost = 1, .id = "req-1"});
  EXPECT_EQ(late.from, source::store);
  EXPECT_FALSE(late.d.allowed);
  EXPECT_EQ(s.stats().replayed, 1U);
  // A peek neither charges nor remembers.
  EXPECT_EQ(s.peek_at({.checks = {&c, 1}, .now = 100, .cost = 1, .id = "req-2"}).from, source::store);
  EXPECT_EQ(s.peek_at({.checks = {&c, 1}, .now = 100, .cost = 1, .id = "req-1"}).from, source::replayed);
}

TEST(MemoryStore, ARepeatedIdReplaysTheFirstDecisionsGrowsAfter) {
  // store.hpp: a repeated id's answer holds the figures of its first
  // decision, each check's RateLimit t (grows_after) too, not one read on
  // the key's state now.
  memory_store_options o;
  o.idempotency_window = 100;
  memory_store s(o);
  const policy_id p = s.define("p", policy("fixed-window 3/1000ns")).value();
  const check c{p, "k"};
  decision per[1];
  std::optional<tick> grows[1];
  ASSERT_TRUE(s.decide_at({.checks = {&c, 1}, .now = 0, .cost = 1, .id = "req-1"}, per, grows).d.allowed);
  EXPECT_EQ(per[0].remaining, 2);
  EXPECT_EQ(grows[0], std::optional<tick>(1000));  // one more unit at the window's end
  ASSERT_TRUE(s.decide_at({.checks = {&c, 1}, .now = 10, .cost = 2, .id = {}}, per, grows).d.allowed);
  EXPECT_EQ(grows[0], std::optional<tick>(990));  // the window's end, from 10
  const store_decision again = s.decide_at({.checks = {&c, 1}, .now = 20, .cost = 1, .id = "req-1"}, per, grows);
  EXPECT_EQ(again.from, source::replayed);
  EXPECT_EQ(per[0].remaining, 2);
  EXPECT_EQ(grows[0], std::optional<tick>(1000));  // the first decision's, from 0 (read now: 980)
  // An id first decided without grows_after asked still has them.
  ASSERT_TRUE(s.decide_at({.checks = {&c, 1}, .now = 1000, .cost = 1, .id = "req-2"}).d.allowed);
  ASSERT_TRUE(s.decide_at({.checks = {&c, 1}, .now = 1010, .cost = 2, .id = {}}).d.allowed);
  EXPECT_EQ(s.decide_at({.checks = {&c, 1}, .now = 1020, .cost = 1, .id = "req-2"}, per, grows).from, source::replayed);
  EXPECT_EQ(grows[0], std::optional<tick>(1000));  // read now: 980
}

TEST(MemoryStore, PeekChangesNothing) {
  memory_store s;
  const policy_id a = s.define("a", policy("fixed-window 1/10ns")).value();
  const policy_id b = s.define("b", policy("gcra 1/10ns")).value();
  const check both[] = {{a, "x"}, {b, "y"}};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(s.peek_at({.checks = both, .now = 0, .cost = 1, .id = {}}).d.allowed);
  EXPECT_TRUE(one(s, a, "x", 0).d.allowed);
  EXPECT_EQ(s.stats().keys, 1U);
}

TEST(MemoryStore, RedefiningCarriesStatesOver) {
  memory_store s;
  const policy_id p = s.define_at("p", policy("fixed-window 3/100ns"), 0).value();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(one(s, p, "k", 1).d.allowed);
  EXPECT_FALSE(one(s, p, "k", 2).d.allowed);
  ASSERT_TRUE(s.define_at("p", policy("fixed-window 5/100ns"), 3).ok());
  // The three admits carry over: two more fit under the new limit.
  EXPECT_TRUE(one(s, p, "k", 4).d.allowed);
  EXPECT_TRUE(one(s, p, "k", 4).d.allowed);
  EXPECT_FALSE(one(s, p, "k", 4).d.allowed);
}

TEST(MemoryStore, RedefiningToAnotherAlgorithmIsRefused) {
  memory_store s;
  const policy_id p = s.define("p", policy("gcra 1/10ns")).value();
  EXPECT_TRUE(one(s, p, "k", 0).d.allowed);
  const auto r = s.define("p", policy("fixed-window 1/10ns"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().field, "algorithm");
  EXPECT_FALSE(one(s, p, "k", 1).d.allowed);  // the old policy and state stay
}

TEST(MemoryStore, DefiningTheSamePolicyAgainChangesNothing) {
  memory_store s;
  const policy_id p = s.define_at("p", policy("gcra 1/10ns burst=2"), 0).value();
  EXPECT_TRUE(one(s, p, "k", 100).d.allowed);
  EXPECT_TRUE(one(s, p, "k", 100).d.allowed);
  EXPECT_FALSE(one(s, p, "k", 100).d.allowed);
  // Carried over onto itself at 1000 the state would be fresh there, and a
  // request whose clock is still at 100 would be admitted.
  ASSERT_EQ(s.define_at("p", policy("gcra 1/10ns burst=2"), 1000).value(), p);
  EXPECT_FALSE(one(s, p, "k", 100).d.allowed);
}

TEST(MemoryStore, ADecisionReportsItsInstant) {
  memory_store s;
  const policy_id p = s.define("p", policy("gcra 1/10ns burst=2")).value();
  EXPECT_EQ(one(s, p, "k", 1234).at, 1234);
  const check c{p, "k"};
  EXPECT_EQ(s.peek_at({.checks = {&c, 1}, .now = 77, .cost = 1, .id = {}}).at, 77);
  std::vector<store_request> rs(3, store_request{.checks = {&c, 1}, .now = 5, .cost = 1, .id = {}});
  rs[2].now = 9;
  std::vector<store_decision> out(3);
  s.decide_many_at(rs, out);
  EXPECT_EQ(out[0].at, 5);
  EXPECT_EQ(out[2].at, 9);
}

TEST(MemoryStore, ShrinkingABurstKeepsTheDebt) {
  memory_store s;
  const policy_id p = s.define_at("p", policy("gcra 1/10ns burst=10"), 0).value();
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(one(s, p, "k", 0).d.allowed);
  ASSERT_TRUE(s.define_at("p", policy("gcra 1/10ns burst=2"), 0).ok());
  // Ten units spent against a burst of two: nothing until the debt is paid.
  EXPECT_FALSE(one(s, p, "k", 0).d.allowed);
  EXPECT_FALSE(one(s, p, "k", 50).d.allowed);
}

}  // namespace
}  // namespace sluice::keyed_memory_store_test
