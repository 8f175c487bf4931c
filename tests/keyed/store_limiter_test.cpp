// The single-policy view over a store (store_limiter.hpp), on the memory
// store: each call decides as a keyed store of its policy would (the
// check's own decision, its `part` too), on the store's clock or at an
// explicit instant; peeks change nothing, reports are never denied, request
// ids replay, a batch decides in order, and the store's errors come back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sluice/core/policy_expr.hpp"
#include "sluice/core/store_limiter.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"

#include "keyed/memory_store_support.hpp"

namespace sluice::keyed_store_limiter_test {
namespace {

using memory_store_support::policy;

TEST(StoreLimiter, DecidesAsTheKeyedStoreOfItsPolicy) {
  // A composite, so that the check's own `part` (which part binds) differs
  // from the request's (the check's index, 0).
  const char* text = "all(gcra 2/10ns, fixed-window 3/40ns)";
  memory_store s;
  const auto api = store_limiter::make(s, "api", policy(text));
  ASSERT_TRUE(api.ok()) << api.err().what();
  keyed_limiter k(policy(text));
  bool parts_differ = false;
  for (tick t : {0, 0, 0, 3, 5, 9, 10, 30, 41, 41, 41, 41}) {
    const store_decision d = api->decide_at("a", t);
    const decision want = k.try_acquire_at("a", t, 1);
    EXPECT_EQ(d.d, want) << t;
    EXPECT_EQ(d.from, source::store);
    EXPECT_EQ(d.at, t);
    parts_differ = parts_differ || want.part != 0;
  }
  EXPECT_TRUE(parts_differ) << "no decision told the view's part from the request's";
}

TEST(StoreLimiter, TheDocsExample) {
  // docs/stores.md and store_limiter.hpp, as written there.
  sluice::memory_store memory;
  auto api = sluice::store_limiter::make(memory, "api", sluice::parse_policy("gcra 100/1s burst=20").value());
  ASSERT_TRUE(api.ok());
  sluice::store_decision d = api->decide("user:42");
  EXPECT_TRUE(d.d.allowed);
  EXPECT_EQ(d.d.remaining, 19);
  EXPECT_EQ(d.d.part, -1);
  EXPECT_EQ(d.from, source::store);
}

TEST(StoreLimiter, ReadsTheStoresClock) {
  manual_clock clock(1'000);
  memory_store s({.clock = &clock});
  const auto api = store_limiter::make(s, "api", policy("gcra 1/10ns burst=1")).value();
  const store_decision first = api.decide("a");
  EXPECT_TRUE(first.d.allowed);
  EXPECT_EQ(first.at, 1'000);
  const store_decision second = api.decide("a");
  EXPECT_FALSE(second.d.allowed);
  EXPECT_EQ(second.d.retry_after, 10);
  EXPECT_EQ(api.peek("a").d.retry_after, 10);
  clock.advance(4);
  EXPECT_EQ(api.peek("a").d.retry_after, 6);
  EXPECT_EQ(api.peek("a").at, 1'004);
  const store_decision charged = api.report("a", 3);
  EXPECT_TRUE(charged.d.allowed);
  EXPECT_EQ(charged.at, 1'004);
  EXPECT_EQ(api.decide("a").d.retry_after, 36);
}

TEST(StoreLimiter, PeekChangesNothingAndReportIsNeverDenied) {
  memory_store s;
  const auto api = store_limiter::make(s, "api", policy("token-bucket 2/10ns burst=2")).value();
  keyed_limiter k(policy("token-bucket 2/10ns burst=2"));
  for (int i = 0; i < 3; ++i) {
    const store_decision p = api.peek_at("a", 0, 2);
    EXPECT_TRUE(p.d.allowed);
    EXPECT_EQ(p.d, k.peek_at("a", 0, 2));
  }
  const store_decision r = api.report_at("a", 0, 5);
  EXPECT_TRUE(r.d.allowed);
  EXPECT_EQ(r.from, source::store);
  EXPECT_EQ(r.d, k.report_at("a", 0, 5));
  const store_decision after = api.decide_at("a", 0);
  EXPECT_FALSE(after.d.allowed);
  EXPECT_EQ(after.d, k.try_acquire_at("a", 0));
}

TEST(StoreLimiter, ARequestIdReplaysTheFirstDecision) {
  memory_store s;
  const auto api = store_limiter::make(s, "api", policy("fixed-window 1/10ns")).value();
  const store_decision first = api.decide_at("a", 0, 1, "req-1");
  EXPECT_TRUE(first.d.allowed);
  const store_decision again = api.decide_at("a", 1, 1, "req-1");
  EXPECT_EQ(again.from, source::replayed);
  EXPECT_EQ(again.d, first.d);
  EXPECT_FALSE(api.decide_at("a", 1).d.allowed);  // the replay took nothing more
}

TEST(StoreLimiter, ABatchDecidesInOrder) {
  memory_store s;
  const auto api = store_limiter::make(s, "api", policy("gcra 2/10ns")).value();
  keyed_limiter k(policy("gcra 2/10ns"));
  const std::vector<store_limiter::request> batch = {
      {"a", 0, 1, {}}, {"b", 0, 2, {}}, {"a", 0, 1, {}}, {"a", 0, 1, {}}, {"a", 5, 1, {}}};
  std::vector<store_decision> out(batch.size());
  api.decide_many_at(batch, out);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    decision want = k.try_acquire_at(batch[i].key, batch[i].now, batch[i].cost);
    want.part = 0;  // a batch answers each request's decision
    EXPECT_EQ(out[i].d, want) << i;
    EXPECT_EQ(out[i].from, source::store) << i;
  }
}

TEST(StoreLimiter, ABadCostIsTheStoresError) {
  memory_store s;
  const auto api = store_limiter::make(s, "api", policy("gcra 2/10ns")).value();
  const store_decision d = api.decide_at("a", 0, 0);
  EXPECT_EQ(d.from, source::error);
  EXPECT_FALSE(d.d.allowed);
  EXPECT_EQ(s.stats().errors, 1U);
}

TEST(StoreLimiter, DefiningTheNameAgainKeepsItsStates) {
  // The store carries the states over at its clock's instant.
  manual_clock clock;
  memory_store s({.clock = &clock});
  const auto first = store_limiter::make(s, "api", policy("fixed-window 2/10ns")).value();
  EXPECT_TRUE(first.decide("a", 2).d.allowed);
  const auto second = store_limiter::make(s, "api", policy("fixed-window 3/10ns")).value();
  EXPECT_EQ(second.id(), first.id());
  EXPECT_EQ(&second.backing_store(), &s);
  const store_decision d = second.decide("a");
  EXPECT_TRUE(d.d.allowed);
  EXPECT_EQ(d.d.remaining, 0);  // 2 of 3 were spent under the old limit
}

TEST(StoreLimiter, TheStoresRefusalNamesTheField) {
  memory_store s;
  ASSERT_TRUE(store_limiter::make(s, "api", policy("gcra 2/10ns")).ok());
  const auto changed = store_limiter::make(s, "api", policy("sliding-log 2/10ns"));
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.err().field, "algorithm");
}

}  // namespace
}  // namespace sluice::keyed_store_limiter_test
