// A keyed_budget (semantics.md, "Keys": Bounded memory): never more states
// than the bound, held keys always decide on their own state, a new key
// that would be admitted at the bound is refused (keyed_refused) and
// counted once the fresh states a sweep finds are dropped, and after a
// purge frees room new keys are admitted as always.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "keyed/keyed_support.hpp"
#include "sluice/core/limiter.hpp"

namespace sluice::keyed_budget_test {
namespace {

using namespace sluice::keyed_test;

const gcra policy = gcra::make({1, 100}, 2).value();  // 1 per 100 ticks, burst 2

TEST(KeyedBudget, AKeyOverTheBoundIsRefusedAndCountedAndHeldKeysKeepTheirState) {
  auto budget = std::make_shared<keyed_budget>(3);
  keyed_limiter k(policy, {.shards = 4, .hash_seed = 1, .budget = budget});
  limiter<gcra> a(policy);
  for (const char* key : {"a", "b", "c"}) ASSERT_TRUE(k.try_acquire_at(key, 0).allowed);
  ASSERT_TRUE(a.try_acquire_at(0).allowed);
  ASSERT_TRUE(k.try_acquire_at("a", 0).allowed);  // "a" spent
  ASSERT_TRUE(a.try_acquire_at(0).allowed);
  EXPECT_EQ(budget->held(), 3U);
  const decision d = k.try_acquire_at("d", 0);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.part, keyed_refused);
  EXPECT_EQ(d.retry_after, never);
  EXPECT_FALSE(k.state_of("d").has_value());
  EXPECT_EQ(k.stats().refused, 1U);
  EXPECT_EQ(budget->refused(), 1U);
  EXPECT_EQ(k.size(), 3U);
  // A held key decides on its state: "a" is still spent, not fresh.
  EXPECT_EQ(k.try_acquire_at("a", 1), a.try_acquire_at(1));
  EXPECT_FALSE(k.try_acquire_at("a", 1).allowed);
  // A new key that would be denied needs no room: denied as always, not refused.
  const decision big = k.try_acquire_at("e", 0, 3);
  EXPECT_EQ(big.part, -1);
  EXPECT_EQ(big.retry_after, never);
  EXPECT_EQ(k.stats().refused, 1U);
  // At 150 nothing is fresh at the horizon (no purge yet): still refused.
  EXPECT_EQ(k.try_acquire_at("d", 150).part, keyed_refused);
  EXPECT_EQ(k.stats().refused, 2U);
  // A purge at 250 frees every state (fresh from 100 and 200): new keys are
  // admitted as a fresh limiter admits them.
  EXPECT_EQ(k.purge(250), 3U);
  EXPECT_EQ(budget->held(), 0U);
  limiter<gcra> fresh(policy);
  EXPECT_EQ(k.try_acquire_at("d", 250), fresh.try_acquire_at(250));
  EXPECT_EQ(budget->held(), 1U);
}

TEST(KeyedBudget, AtTheBoundFreshStatesAreDroppedFirst) {
  auto budget = std::make_shared<keyed_budget>(2);
  keyed_limiter k(policy, {.shards = 1, .in_time_order = true, .hash_seed = 1, .budget = budget});
  ASSERT_TRUE(k.try_acquire_at("a", 0).allowed);
  ASSERT_TRUE(k.try_acquire_at("b", 50).allowed);
  EXPECT_EQ(k.try_acquire_at("c", 60).part, keyed_refused);  // nothing fresh at 60
  // At 120 "a" is fresh (since 100): dropped, and "c" takes its room.
  const decision d = k.try_acquire_at("c", 120);
  EXPECT_TRUE(d.allowed);
  EXPECT_FALSE(k.state_of("a").has_value());
  EXPECT_TRUE(k.state_of("b").has_value());
  EXPECT_EQ(k.stats().purged, 1U);
  EXPECT_EQ(k.stats().evicted, 0U);
  EXPECT_EQ(k.stats().refused, 1U);
}

TEST(KeyedBudget, ABudgetIsSharedAndGivenBackByAStoreThatGoes) {
  auto budget = std::make_shared<keyed_budget>(2);
  keyed_limiter one(policy, {.hash_seed = 1, .budget = budget});
  {
    keyed_limiter two(policy, {.hash_seed = 2, .budget = budget});
    ASSERT_TRUE(one.try_acquire_at("a", 0).allowed);
    ASSERT_TRUE(two.try_acquire_at("a", 0).allowed);
    EXPECT_EQ(one.try_acquire_at("b", 0).part, keyed_refused);
    EXPECT_EQ(two.try_acquire_at("b", 0).part, keyed_refused);
  }
  EXPECT_EQ(budget->held(), 1U);
  EXPECT_TRUE(one.try_acquire_at("b", 0).allowed);
  one.clear();
  EXPECT_EQ(budget->held(), 0U);
}

TEST(KeyedBudget, AMultiKeyRequestNeedingRoomIsRefusedWhole) {
  auto budget = std::make_shared<keyed_budget>(1);
  keyed_limiter held(policy, {.hash_seed = 1, .budget = budget});
  keyed_limiter other(policy, {.hash_seed = 2, .budget = budget});
  ASSERT_TRUE(held.try_acquire_at("a", 0).allowed);
  const auto before = held.state_of("a");
  const keyed_check checks[] = {{&held, "a", 0}, {&other, "new", 0}};
  decision per[2];
  const decision d = keyed_limiter::try_acquire_all_at(checks, 10, 1, per);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.part, keyed_refused);
  EXPECT_EQ(held.state_of("a"), before);  // not charged
  EXPECT_FALSE(other.state_of("new").has_value());
  EXPECT_EQ(other.stats().refused, 1U);
  EXPECT_EQ(budget->held(), 1U);
}

testing::AssertionResult bounded(std::uint64_t seed, std::uint64_t& refusals) {
  rng_t g(seed * 0x2545F4914F6CDD1DULL + 77);
  const drawn_policy dp = random_policy(g);
  auto budget = std::make_shared<keyed_budget>(1 + g() % 8);
  keyed_options o;
  o.shards = std::size_t{1} << (g() % 3);
  o.in_time_order = g() % 2 == 0;
  o.hash_seed = seed;
  o.budget = budget;
  keyed_limiter store(dp.policy, o);
  reference ref(dp.policy);
  const auto trace = keyed_trace(dp.c, g, 300, 2 + g() % 20, /*back=*/false);
  std::uint64_t refused = 0;
  std::uint64_t drops_seen = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const trace_request& q = trace[i];
    if (g() % 100 < 3) (void)store.purge(q.now, 1 + g() % 8);
    const bool had = store.state_of(q.key).has_value();
    const tick floor = floor_for(store, q.key);
    any_state copy = ref.state(q.key);
    const decision got = store.try_acquire_at(q.key, q.now, q.cost);
    if (got.part == keyed_refused) {
      // Refused only for a key without a state whose request would have been admitted.
      const tick eff = std::max(q.now, floor);
      if (had || !decide(dp.policy, copy, eff, q.cost).allowed || store.state_of(q.key))
        return testing::AssertionFailure() << "seed " << seed << " step " << i << ": a wrong refusal of " << q.key;
      ++refused;
    } else {
      const decision want = ref.decide_at(q.key, q.now, q.cost, floor);
      if (!(got == want))
        return testing::AssertionFailure()
               << "seed " << seed << " (" << dp.describe << ", budget " << budget->max_states() << ") step " << i
               << " key " << q.key << ": got " << show(got) << ", want " << show(want);
    }
    if (store.size() > budget->max_states() || budget->held() != store.size())
      return testing::AssertionFailure() << "seed " << seed << ": " << store.size() << " states, budget held "
                                         << budget->held() << " of " << budget->max_states();
    if (const auto s = store.stats(); s.purged != drops_seen) {
      drops_seen = s.purged;
      for (auto& [key, st] : ref.all())
        if (!(st == ref.fresh()) && !store.state_of(key)) {
          if (!is_fresh(dp.policy, st, store.drop_bound(key)))
            return testing::AssertionFailure() << "seed " << seed << ": " << key << " dropped while not fresh";
          st = ref.fresh();
        }
    }
  }
  const keyed_stats s = store.stats();
  if (s.evicted != 0 || s.refused != refused || budget->refused() != refused)
    return testing::AssertionFailure() << "seed " << seed << ": evicted " << s.evicted << ", refused counted "
                                       << s.refused << " / " << budget->refused() << ", seen " << refused;
  refusals += refused;
  return testing::AssertionSuccess();
}

TEST(KeyedBudget, NeverPastTheBoundAndEveryRefusalCounted) {
  std::uint64_t refusals = 0;
  for (std::uint64_t seed = 1; seed <= 500; ++seed) ASSERT_TRUE(bounded(seed, refusals));
  EXPECT_GT(refusals, 1000U);
}

}  // namespace
}  // namespace sluice::keyed_budget_test
