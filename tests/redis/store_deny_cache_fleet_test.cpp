// The deny cache in a fleet (docs/redis.md, "The deny cache"): two stores
// on one real redis-server, as two processes would be. A change made through
// one (an override set or deleted, a refund) ends the other's cached denials
// of the key once it has heard the store's message; a store that cannot hear
// the channel (a subscription killed, or refused by an ACL) answers nothing
// from its cache. The waits below wait for an event of the other store's
// listener thread (a message heard, a subscription made), bounded; nothing
// sleeps.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "redis/store/invalidation.hpp"
#include "redis/store_support.hpp"
#include "redis/test_client.hpp"
#include "sluice/core/policy_expr.hpp"

namespace sluice::redis_test::redis_store_deny_cache_fleet_test {
namespace {

any_policy expr(std::string_view text) { return parse_policy(text).value(); }

struct fleet {
  std::unique_ptr<redis_store> a, b;
  policy_id pa = 0, pb = 0;
};

fleet two_stores(const std::string& what, const std::string& url_a = "", const std::string& url_b = "") {
  store_options o;
  o.key_prefix = fresh_prefix(what);
  o.deny_cache = true;
  fleet f;
  f.a = open_store(o, url_a);
  f.b = open_store(o, url_b);
  if (!f.a || !f.b) return f;
  f.pa = f.a->define_at("fw", expr("fixed-window 2/1h"), 0).value();
  f.pb = f.b->define_at("fw", expr("fixed-window 2/1h"), 0).value();
  return f;
}

/// `key` exhausted through b, its denial cached there; the first admit with
/// request id `id` when given.
void exhaust(redis_store& b, policy_id p, const std::string& key, tick now, std::string_view id = {}) {
  const check c{p, key};
  ASSERT_TRUE(b.decide_at(one_check(c, now, 1, id)).d.allowed);
  ASSERT_TRUE(b.decide_at(one_check(c, now)).d.allowed);
  const auto first = b.decide_at(one_check(c, now));
  ASSERT_EQ(first.from, source::store);
  ASSERT_FALSE(first.d.allowed);
  ASSERT_TRUE(cache_answers_denial(b, one_check(c, now)));
}

/// Waits until b has heard one more message than `before`.
bool heard(const redis_store& b, std::uint64_t before) {
  return eventually([&] { return b.redis_stats().deny_cache_invalidations > before; });
}

/// Makes `change` through a (true when it was made), waits until b has
/// heard its message, and gives b's next decision on `key`.
store_decision after_change(fleet& f, const std::string& key, tick now, const std::function<bool()>& change) {
  const auto before = f.b->redis_stats().deny_cache_invalidations;
  EXPECT_TRUE(change());
  EXPECT_TRUE(heard(*f.b, before));
  return f.b->decide_at(one_check(check{f.pb, key}, now));
}

TEST(RedisDenyCacheFleet, AnOverrideSetThroughAnotherStoreEndsTheCachedDenial) {
  auto f = two_stores("dcf-set");
  ASSERT_TRUE(f.a && f.b);
  ASSERT_TRUE(f.b->redis_stats().deny_cache_subscribed);
  const tick now = f.b->now();
  exhaust(*f.b, f.pb, "alice", now);
  const auto d = after_change(f, "alice", now,
                              [&] { return f.a->set_override_at(f.pa, "alice", expr("fixed-window 3/1h"), now).ok(); });
  EXPECT_EQ(d.from, source::store);
  EXPECT_TRUE(d.d.allowed);
}

TEST(RedisDenyCacheFleet, AnOverrideDeletedThroughAnotherStoreEndsTheCachedDenial) {
  auto f = two_stores("dcf-del");
  ASSERT_TRUE(f.a && f.b);
  const tick now = f.b->now();
  const check bob{f.pb, "bob"};
  // Heard first: an unread message keeps b's cache from answering.
  ASSERT_TRUE(after_change(f, "bob", now, [&] {
                return f.a->set_override_at(f.pa, "bob", expr("fixed-window 1/1h"), now).ok();
              }).d.allowed);
  ASSERT_EQ(f.b->decide_at(one_check(bob, now)).from, source::store);
  ASSERT_TRUE(cache_answers_denial(*f.b, one_check(bob, now)));
  // Back to 2/1h: one more.
  const auto d = after_change(f, "bob", now, [&] {
    const auto deleted = f.a->delete_override_at(f.pa, "bob", now);
    return deleted.ok() && deleted.value();
  });
  EXPECT_EQ(d.from, source::store);
  EXPECT_TRUE(d.d.allowed);
}

TEST(RedisDenyCacheFleet, ARefundThroughAnotherStoreEndsTheCachedDenial) {
  auto f = two_stores("dcf-refund");
  ASSERT_TRUE(f.a && f.b);
  const tick now = f.b->now();
  exhaust(*f.b, f.pb, "carol", now, "carol-1");
  const auto d =
      after_change(f, "carol", now, [&] { return f.a->refund_at("carol-1", now).status == refund_status::refunded; });
  EXPECT_EQ(d.from, source::store);
  EXPECT_TRUE(d.d.allowed);
}

TEST(RedisDenyCacheFleet, AKilledSubscriptionEmptiesTheCacheUntilItIsBack) {
  auto f = two_stores("dcf-kill");
  ASSERT_TRUE(f.a && f.b);
  const tick now = f.b->now();
  exhaust(*f.b, f.pb, "dave", now);
  auto raw = raw_client();
  const auto killed = raw.call({"CLIENT", "KILL", "TYPE", "pubsub"});
  ASSERT_TRUE(std::holds_alternative<redis::reply>(killed));
  // Lost, then made again by itself: the cache was emptied meanwhile.
  ASSERT_TRUE(eventually([&] { return f.b->redis_stats().deny_cache_subscriptions >= 2; }));
  ASSERT_TRUE(eventually([&] { return f.b->redis_stats().deny_cache_subscribed; }));
  const check dave{f.pb, "dave"};
  EXPECT_EQ(f.b->decide_at(one_check(dave, now)).from, source::store);
  EXPECT_TRUE(cache_answers_denial(*f.b, one_check(dave, now)));  // and caches again
}

TEST(RedisDenyCacheFleet, AStoreThatCannotSubscribeAnswersNothingFromItsCache) {
  // A user without channels: its SUBSCRIBE is refused (NOPERM), so its
  // cache never answers, and the requests that would have asked it are
  // counted. Another user's store, subscribed, answers from its own.
  auto raw = raw_client();
  const auto made = raw.call({"ACL", "SETUSER", "dcf-deaf", "on", ">pw", "~*", "resetchannels", "+@all"});
  ASSERT_TRUE(std::holds_alternative<redis::reply>(made));
  const std::string deaf = "redis://dcf-deaf:pw@" + shared_server().url().substr(std::string("redis://").size());
  auto f = two_stores("dcf-deaf", "", deaf);
  ASSERT_TRUE(f.a && f.b);
  EXPECT_FALSE(f.b->redis_stats().deny_cache_subscribed);
  const tick now = f.b->now();
  const check erin{f.pb, "erin"};
  ASSERT_TRUE(f.b->decide_at(one_check(erin, now)).d.allowed);
  ASSERT_TRUE(f.b->decide_at(one_check(erin, now)).d.allowed);
  for (int i = 0; i < 3; ++i) {
    const auto d = f.b->decide_at(one_check(erin, now));
    EXPECT_FALSE(d.d.allowed);
    EXPECT_EQ(d.from, source::store);
  }
  EXPECT_EQ(f.b->redis_stats().deny_cache_bypassed, 5U);
  EXPECT_EQ(f.b->stats().deny_cache_hits, 0U);
  // A change through `a` reaches b's next decision without any message.
  ASSERT_TRUE(f.a->set_override_at(f.pa, "erin", expr("fixed-window 3/1h"), now));
  EXPECT_TRUE(f.b->decide_at(one_check(erin, now)).d.allowed);
  (void)raw.call({"ACL", "DELUSER", "dcf-deaf"});
}

TEST(RedisDenyCacheFleet, InvalidationMessagesNameEveryKeyByItsLength) {
  std::string m;
  redis::append_invalidated_key(m, "a:b");
  redis::append_invalidated_key(m, "");
  redis::append_invalidated_key(m, std::string("x\0y", 3));
  EXPECT_EQ(m, std::string("3:a:b0:3:x\0y", 12));
  std::vector<std::string> keys;
  EXPECT_TRUE(redis::for_each_invalidated_key(m, [&](std::string_view k) { keys.emplace_back(k); }));
  EXPECT_EQ(keys, (std::vector<std::string>{"a:b", "", std::string("x\0y", 3)}));
  for (const std::string_view bad : {"3:ab", "x:a", ":", "5", "-1:a"})
    EXPECT_FALSE(redis::for_each_invalidated_key(bad, [](std::string_view) {})) << bad;
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_deny_cache_fleet_test
