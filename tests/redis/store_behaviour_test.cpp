// The Redis store's rules beyond the decisions themselves: exact ranges at
// define, TTLs, idempotent request ids, clock skew, foreign and corrupt
// values, peeks, and the deny cache.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "redis/client/binary.hpp"
#include "redis/store_support.hpp"
#include "redis/test_client.hpp"
#include "redis/trace_gen.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice::redis_test::redis_store_behaviour_test {
namespace {

std::int64_t pttl(redis::test_client& c, const std::string& key) {
  const auto r = c.call({"PTTL", key});
  const auto* rep = std::get_if<redis::reply>(&r);
  return rep && rep->as_integer() ? *rep->as_integer() : -100;
}

void set(redis::test_client& c, const std::string& key, const std::string& v) { (void)c.call({"SET", key, v}); }

// ---- exact ranges ----

void expect_refused(redis_store& st, const any_policy& p, const std::string& field, const std::string& bound) {
  static int n = 0;
  const auto r = st.define("range" + std::to_string(n++), p);
  ASSERT_FALSE(r.ok()) << describe_policy(p);
  EXPECT_EQ(r.err().field, field) << r.err().what();
  EXPECT_NE(r.err().message.find(bound), std::string::npos) << r.err().what();
}

TEST(RedisStore, RefusesConfigurationsOutsideTheExactRange) {
  auto st = open_store();
  ASSERT_TRUE(st);
  // GCRA / token bucket: floor(S·W/L) < 2^52 ticks, L/gcd(L, W) <= 2^52.
  expect_refused(*st, any_policy{gcra::make(rate{1, p52}, 1).value()}, "burst", "2^52");
  expect_refused(*st, any_policy{token_bucket::make(rate{1, std::int64_t{1} << 40}, 1 << 12).value()}, "burst", "2^52");
  expect_refused(*st, any_policy{gcra::make(rate{p52 + 1, 2}, 1).value()}, "limit", "2^52");
  EXPECT_TRUE(st->define("gcra-edge", any_policy{gcra::make(rate{1, p52 - 1}, 1).value()}).ok());
  EXPECT_TRUE(st->define("gcra-edge2", any_policy{gcra::make(rate{p52, 3}, 1).value()}).ok());
  // Nanosecond ticks: 1000 per hour with a burst of a million fits (gcd 1000).
  EXPECT_TRUE(st->define("hourly", any_policy{gcra::make(rate{1000, 3'600'000'000'000}, 1'000'000).value()}).ok());
  // Leaky queue: floor(Q·W/L) < 2^52.
  expect_refused(*st, any_policy{leaky_queue::make(rate{1, p52}, 1).value()}, "queue", "2^52");
  // Window algorithms and quota: below 2^53.
  expect_refused(*st, any_policy{fixed_window::make(rate{p53, 10}).value()}, "limit", "2^53");
  expect_refused(*st, any_policy{fixed_window::make(rate{10, p53}).value()}, "window", "2^53");
  expect_refused(*st, any_policy{sliding_counter::make(rate{p53, 10}).value()}, "limit", "2^53");
  expect_refused(*st, any_policy{sliding_log::make(rate{10, p53 + 4}).value()}, "window", "2^53");
  expect_refused(*st, any_policy{sliding_buckets::make(rate{10, p53}, 2).value()}, "window", "2^53");
  expect_refused(*st, any_policy{quota::make(p53).value()}, "quota", "2^53");
  EXPECT_TRUE(st->define("fixed-edge", any_policy{fixed_window::make(rate{p53 - 1, p53 - 1}).value()}).ok());
  // A composite is refused for its part.
  expect_refused(*st,
                 any_policy{all_of::make({any_policy{quota::make(3).value()},
                                          any_policy{sliding_counter::make(rate{3, p53}).value()}})
                                .value()},
                 "window", "2^53");
  // A name is one policy: defined again with other parameters it keeps its
  // id (its states are carried over); another algorithm is refused.
  const auto first = st->define("fixed", any_policy{quota::make(3).value()});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(st->define("fixed", any_policy{quota::make(3).value()}).value(), first.value());
  EXPECT_EQ(st->define("fixed", any_policy{quota::make(4).value()}).value(), first.value());
  const auto other = st->define("fixed", any_policy{gcra::make(rate{1, 10}, 1).value()});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.err().field, "algorithm");
}

// ---- TTL ----

// The options of the TTL tests: a grace of 2 s, a prefix of their own.
store_options ttl_options(const char* name) {
  store_options o;
  o.grace = std::chrono::milliseconds(2000);
  o.key_prefix = fresh_prefix(name);
  return o;
}

// A key's PTTL `left`, read `spent` ms after its decision, against the
// time until its state is fresh: no sooner than that plus the grace (2 s),
// at most 1 s later (docs/redis.md, "TTL").
void expect_ttl(std::int64_t left, std::int64_t fresh_ms, std::int64_t spent, const std::string& what) {
  EXPECT_GE(left, fresh_ms + 2000 - spent - 1) << what;
  EXPECT_LE(left, fresh_ms + 2000 + 1000) << what;
}

TEST(RedisStore, ASlidingBucketsKeyExpiresWhenItsLatestSubWindowLeaves) {
  // 2 sub-windows of 5 s; an admit 4.9 s into its sub-window is fresh 5.1 s
  // later (when that sub-window leaves the window), not a whole window
  // later: its TTL is at most 1 s more than that plus the grace.
  const store_options o = ttl_options("bttl");
  auto st = open_store(o);
  ASSERT_TRUE(st);
  auto c = raw_client();
  const tick ms = 1'000'000;
  const tick sub = 5000 * ms;
  const auto id = st->define("b", any_policy{sliding_buckets::make(rate{5, 2 * sub}, 2).value()}).value();
  const check ch{id, "k"};
  const tick now = st->now() / sub * sub + sub - 100 * ms;
  const auto before = std::chrono::steady_clock::now();
  const store_decision d = st->decide_at(one_check(ch, now, 1));
  const std::int64_t left = pttl(c, o.key_prefix + "s:b:{k}");
  const auto spent =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - before).count();
  ASSERT_EQ(d.from, source::store);
  ASSERT_TRUE(d.d.allowed);
  ASSERT_EQ(d.d.reset_after, 5100 * ms);
  expect_ttl(left, 5100, spent, show(d.d));
}

TEST(RedisStore, EveryKeyExpiresNoSoonerThanFreshPlusGraceAndNoLater) {
  const store_options o = ttl_options("ttl");
  auto st = open_store(o);
  ASSERT_TRUE(st);
  auto c = raw_client();
  rng_t rng(21);
  const tick ms = 1'000'000;
  std::size_t checked = 0;
  for (int t = 0; t < 300; ++t) {
    const auto a = static_cast<gen_algo>(t % 7);  // every algorithm but quota
    const std::int64_t L = uniform(rng, 1, 6);
    const tick W = uniform(rng, 1, 30) * 100 * ms;  // up to 3 s windows
    any_policy p = any_policy{always_allow{}};
    switch (a) {
      case gen_algo::gcra:
        p = any_policy{gcra::make(rate{L, W}, uniform(rng, 1, 4)).value()};
        break;
      case gen_algo::token_bucket:
        p = any_policy{token_bucket::make(rate{L, W}, uniform(rng, 1, 4)).value()};
        break;
      case gen_algo::leaky_queue:
        p = any_policy{leaky_queue::make(rate{L, W}, uniform(rng, 1, 4)).value()};
        break;
      case gen_algo::fixed_window:
        p = any_policy{fixed_window::make(rate{L, W}).value()};
        break;
      case gen_algo::sliding_counter:
        p = any_policy{sliding_counter::make(rate{L, W}).value()};
        break;
      case gen_algo::sliding_log:
        p = any_policy{sliding_log::make(rate{L, W}).value()};
        break;
      default:
        p = any_policy{sliding_buckets::make(rate{L, W - W % 4}, 4).value()};
        break;
    }
    const auto id = st->define("ttl" + std::to_string(t), p).value();
    const std::string key = "k" + std::to_string(t);
    const std::string redis_key = o.key_prefix + "s:ttl" + std::to_string(t) + ":{" + key + "}";
    const check ch{id, key};
    tick now = st->now();
    for (int i = 0; i < 12; ++i) {
      now += uniform(rng, 0, 3) == 0 ? 0 : uniform(rng, 0, W / 2);
      const auto before = std::chrono::steady_clock::now();
      const store_decision d = st->decide_at(one_check(ch, now, uniform(rng, 1, 2)));
      const std::int64_t left = pttl(c, redis_key);
      const auto spent =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - before).count();
      ASSERT_EQ(d.from, source::store);
      if (!d.d.allowed) continue;
      // reset_after is the time until the state is fresh (ticks are ns).
      const std::int64_t fresh_ms = (d.d.reset_after + ms - 1) / ms;
      expect_ttl(left, fresh_ms, spent, describe_policy(p) + " " + show(d.d));
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000U);
}

TEST(RedisStore, AQuotaNeverExpiresAndUnknownTicksGetTheLongTtl) {
  store_options o;
  o.tick_ns = 0;
  o.unknown_tick_ttl = std::chrono::hours(5);
  o.key_prefix = fresh_prefix("vttl");
  auto st = open_store(o);
  ASSERT_TRUE(st);
  auto c = raw_client();
  const auto q = st->define("q", any_policy{quota::make(5).value()}).value();
  const auto g = st->define("g", any_policy{gcra::make(rate{1, 10}, 1).value()}).value();
  const check cq{q, "a"};
  const check cg{g, "a"};
  ASSERT_TRUE(st->decide_at(one_check(cq, 0)).d.allowed);
  ASSERT_TRUE(st->decide_at(one_check(cg, 0)).d.allowed);
  EXPECT_EQ(pttl(c, o.key_prefix + "s:q:{a}"), -1);
  const std::int64_t left = pttl(c, o.key_prefix + "s:g:{a}");
  EXPECT_GT(left, 5 * 3'600'000 - 10'000);
  EXPECT_LE(left, 5 * 3'600'000);
}

// The contract (semantics.md, "Remote stores", Expiry): a quota's state
// never becomes fresh, so its key has no TTL, whatever the tick length and
// wherever it sits in a composite: an expiry would hand the quota out
// again. Every other leaf's key of the same check does expire.
TEST(RedisStore, AQuotaPartOfACompositeNeverExpiresAndItsOtherPartsDo) {
  store_options o;  // tick_ns = 1: the realtime clock's ns
  o.key_prefix = fresh_prefix("qttl");
  auto st = open_store(o);
  ASSERT_TRUE(st);
  auto c = raw_client();
  const auto id =
      st->define("c", parse_policy("all(gcra 1/1s burst=3, quota 5, any(quota 3, fixed-window 2/1m))").value()).value();
  const check ch{id, "a"};
  tick now = st->now();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(st->decide_at(one_check(ch, now + i)).d.allowed);
  const auto r = c.call({"KEYS", o.key_prefix + "*"});
  const auto* rep = std::get_if<redis::reply>(&r);
  ASSERT_TRUE(rep && rep->as_array());
  std::size_t quotas = 0;
  std::size_t others = 0;
  for (const redis::reply& k : *rep->as_array()) {
    const std::string key(*k.as_string());
    const std::string value = value_at(c, key);
    const std::int64_t left = pttl(c, key);
    if (value.rfind('u', 0) == 0) {  // a quota leaf's tag starts with 'u'
      EXPECT_EQ(left, -1) << key;
      ++quotas;
    } else {
      EXPECT_GT(left, 0) << key;
      ++others;
    }
  }
  // quota 5 and the any's quota 3 (which admitted all three, so its
  // fixed window was never written), and the GCRA.
  EXPECT_EQ(quotas, 2u);
  EXPECT_EQ(others, 1u);
}

// ---- denials and peeks write nothing ----

TEST(RedisStore, DenialsAndPeeksWriteNothing) {
  store_options o;
  o.key_prefix = fresh_prefix("deny");
  auto st = open_store(o);
  ASSERT_TRUE(st);
  auto c = raw_client();
  const auto id = st->define("g", any_policy{gcra::make(rate{1, 1000}, 1).value()}).value();
  const check ch{id, "k"};
  ASSERT_TRUE(st->decide_at(one_check(ch, 5000)).d.allowed);
  const std::string prefix = o.key_prefix + "s:g:{k}";
  const std::string v = value_at(c, prefix);
  const auto d = st->decide_at(one_check(ch, 5500));
  EXPECT_FALSE(d.d.allowed);
  EXPECT_EQ(d.d.retry_after, 500);
  EXPECT_EQ(value_at(c, prefix), v) << "a denial moved the stored state";
  const auto p = st->peek_at(one_check(ch, 7000));
  EXPECT_TRUE(p.d.allowed);
  EXPECT_EQ(value_at(c, prefix), v) << "a peek wrote";
}

// ---- idempotent request ids ----

TEST(RedisStore, ARepeatedRequestIdGetsTheFirstDecisionAndPaysOnce) {
  store_options o;
  o.idempotency_window = std::chrono::milliseconds(400);
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const auto id = st->define("q", any_policy{quota::make(5).value()}).value();
  const check ch{id, "k"};
  const auto first = st->decide_at(one_check(ch, 10, 2, "req-1"));
  ASSERT_TRUE(first.d.allowed);
  EXPECT_EQ(first.from, source::store);
  EXPECT_EQ(first.d.remaining, 3);
  const auto again = st->decide_at(one_check(ch, 20, 2, "req-1"));
  EXPECT_EQ(again.from, source::replayed);
  EXPECT_EQ(again.d, first.d);
  EXPECT_EQ(st->peek_at(one_check(ch, 30)).d.remaining, 2) << "the repeat was charged";
  ASSERT_TRUE(st->decide_at(one_check(ch, 35, 2)).d.allowed);
  const auto other = st->decide_at(one_check(ch, 40, 2, "req-2"));
  EXPECT_FALSE(other.d.allowed);
  EXPECT_EQ(other.from, source::store);
  // A denial is remembered too: its repeat is the same denial.
  EXPECT_EQ(st->decide_at(one_check(ch, 50, 2, "req-2")).from, source::replayed);
  // Pipelined repeats too.
  std::vector<store_request> batch = {one_check(ch, 60, 1, "req-3"), one_check(ch, 61, 1, "req-3")};
  std::vector<store_decision> out(2);
  st->decide_many_at(batch, out);
  EXPECT_TRUE(out[0].d.allowed);
  EXPECT_EQ(out[1].from, source::replayed);
  EXPECT_EQ(out[1].d, out[0].d);
  EXPECT_EQ(st->stats().replayed, 3U);
  // After the window the id is forgotten: decided (and denied: the quota is spent).
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const auto late = st->decide_at(one_check(ch, 70, 1, "req-3"));
  EXPECT_EQ(late.from, source::store);
  EXPECT_FALSE(late.d.allowed);
}

TEST(RedisStore, ARepeatedRequestIdReplaysTheFirstDecisionsGrowsAfter) {
  // As the memory store (memory_store_test.cpp): a repeat's RateLimit t
  // (grows_after) is its first decision's, not one read on the key now.
  store_options o;
  o.idempotency_window = std::chrono::seconds(10);
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const auto id = st->define("w", any_policy{fixed_window::make(rate{3, 1000}).value()}).value();
  const check ch{id, "k"};
  decision per[1];
  std::optional<tick> grows[1];
  ASSERT_TRUE(st->decide_at(one_check(ch, 0, 1, "req-1"), per, grows).d.allowed);
  EXPECT_EQ(per[0].remaining, 2);
  EXPECT_EQ(grows[0], std::optional<tick>(1000));  // one more unit at the window's end
  ASSERT_TRUE(st->decide_at(one_check(ch, 10, 2), per, grows).d.allowed);
  EXPECT_EQ(grows[0], std::optional<tick>(990));  // the window's end, from 10
  const auto again = st->decide_at(one_check(ch, 20, 1, "req-1"), per, grows);
  EXPECT_EQ(again.from, source::replayed);
  EXPECT_EQ(per[0].remaining, 2);
  EXPECT_EQ(grows[0], std::optional<tick>(1000));  // the first decision's, from 0 (read now: 980)
}

// ---- clock skew ----

TEST(RedisStore, CountsRequestsBehindTheLatestAdmitByMoreThanTheTolerance) {
  store_options o;
  o.skew_tolerance = 100;
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const auto id = st->define("g", any_policy{gcra::make(rate{100, 1000}, 100).value()}).value();
  const check ch{id, "k"};
  ASSERT_TRUE(st->decide_at(one_check(ch, 10'000)).d.allowed);
  (void)st->decide_at(one_check(ch, 9'950));  // 50 behind: within
  EXPECT_EQ(st->stats().clock_skew, 0U);
  const auto d = st->decide_at(one_check(ch, 9'000));  // 1000 behind
  EXPECT_EQ(st->stats().clock_skew, 1U);
  EXPECT_TRUE(d.d.allowed) << "decided at the latest admit (time never runs backwards)";
}

// ---- foreign and corrupt values ----

TEST(RedisStore, AForeignOrCorruptValueIsAnErrorNeverAnAdmit) {
  store_options o;
  o.key_prefix = fresh_prefix("corrupt");
  auto st = open_store(o);
  ASSERT_TRUE(st);
  auto c = raw_client();
  const auto id = st->define("g", any_policy{gcra::make(rate{10, 1000}, 10).value()}).value();
  const check ch{id, "k"};
  ASSERT_TRUE(st->decide_at(one_check(ch, 0)).d.allowed);
  const std::string key = o.key_prefix + "s:g:{k}";
  const std::string good = value_at(c, key);
  ASSERT_EQ(good.size(), 9U + 4 * 8) << "the tag, then dq dr lh ll as doubles";
  // The value with its field `i` (0: dq, 1: dr, 2: lh, 3: ll) replaced by
  // the double whose bits are `bits`.
  const auto with_field = [&](std::size_t i, std::uint64_t bits) {
    std::string v = good;
    for (std::size_t b = 0; b < 8; ++b) v[9 + 8 * i + b] = static_cast<char>(bits >> (8 * b) & 0xff);
    return v;
  };
  const std::vector<std::string> bad = {"hello",
                                        "",
                                        good + " 1",
                                        good.substr(0, good.size() - 8),
                                        good.substr(0, good.size() - 1) + "x",
                                        "g 1 2 3 4",
                                        with_field(0, 0x3fe0000000000000ULL),                      // dq = 0.5
                                        with_field(1, 0x7ff8000000000000ULL),                      // dr = NaN
                                        with_field(0, redis::double_bits(std::int64_t{1} << 52)),  // a debt past 2^52
                                        with_field(1, redis::double_bits(10)),                     // dr = L
                                        with_field(3, redis::double_bits(-1)),  // a negative low limb
                                        with_field(2, 0x7ff0000000000000ULL)};  // lh = infinity
  std::uint64_t errors = st->stats().errors;
  std::uint64_t corrupt = st->redis_stats().corrupt;
  for (const auto& v : bad) {
    set(c, key, v);
    const auto d = st->decide_at(one_check(ch, 1));
    EXPECT_EQ(d.from, source::error) << "'" << v << "'";
    EXPECT_FALSE(d.d.allowed);
    EXPECT_EQ(st->stats().errors, ++errors);
    EXPECT_EQ(st->redis_stats().corrupt, ++corrupt);
    EXPECT_EQ(value_at(c, key), v) << "an error wrote";
  }
  (void)c.call({"DEL", key});
  (void)c.call({"HSET", key, "a", "b"});
  const auto d = st->decide_at(one_check(ch, 1));
  EXPECT_EQ(d.from, source::error);
  EXPECT_EQ(st->redis_stats().corrupt, ++corrupt);
  // A value written for a configuration this store does not know (another
  // process that defined the name otherwise) is not read as this one's: an
  // error, counted as an unknown configuration, and nothing is written.
  (void)c.call({"DEL", key});
  auto other = open_store(o);
  const auto id2 = other->define("g", any_policy{gcra::make(rate{5, 1000}, 10).value()}).value();
  ASSERT_TRUE(other->decide_at(one_check(check{id2, "k"}, 0)).d.allowed);
  const std::string theirs = value_at(c, key);
  EXPECT_EQ(st->decide_at(one_check(ch, 1)).from, source::error);
  EXPECT_EQ(st->redis_stats().unknown_config, 1U);
  EXPECT_EQ(value_at(c, key), theirs);
  set(c, key, theirs.substr(0, 1) + "00000000" + theirs.substr(9));
  EXPECT_EQ(st->decide_at(one_check(ch, 1)).from, source::error);
  EXPECT_EQ(st->redis_stats().unknown_config, 2U);
}

// ---- the deny cache ----

TEST(RedisStore, TheDenyCacheAnswersDenialsExactlyAsTheStore) {
  store_options with;
  with.deny_cache = true;
  auto a = open_store(with);
  auto b = open_store();
  ASSERT_TRUE(a && b);
  rng_t rng(31);
  std::size_t hits = 0;
  for (int t = 0; t < 200; ++t) {
    const auto a_id = static_cast<gen_algo>(t % 8);
    const drawn d = draw(rng, a_id, t % 2, [](const any_policy&) { return true; });
    const std::string name = "d" + std::to_string(t);
    const check ca{a->define(name, d.policy).value(), "k"};
    const check cb{b->define(name, d.policy).value(), "k"};
    const auto steps = walk(rng, d.policy, 40, d.unit, d.big, d.costs, /*monotone=*/true);
    for (const auto& s : steps) {
      const auto x = a->decide_at(one_check(ca, s.t, s.cost));
      const auto y = b->decide_at(one_check(cb, s.t, s.cost));
      ASSERT_EQ(x.d.allowed, y.d.allowed) << describe_policy(d.policy) << " t=" << s.t;
      if (x.from == source::deny_cache) {
        ++hits;
        // A lower bound: exact for the cost that was denied, shorter for a
        // larger one (never longer than the store's).
        EXPECT_LE(x.d.retry_after, y.d.retry_after);
        EXPECT_GT(x.d.retry_after, 0);
      } else {
        EXPECT_EQ(x.d, y.d);
      }
    }
  }
  EXPECT_GT(hits, 100U);
  EXPECT_EQ(a->stats().deny_cache_hits, hits);
}

TEST(RedisStore, TheDenyCacheKeysEachCheckByItsOwnCost) {
  // A request of two checks at different costs, denied by the costlier
  // check, charges neither, and the cache remembers that check's own cost:
  // a cheaper request on the same key still goes to the store and admits.
  store_options with;
  with.deny_cache = true;
  auto st = open_store(with);
  ASSERT_TRUE(st);
  const auto hour = std::int64_t{3'600'000'000'000};
  const policy_id p = st->define("p", any_policy{fixed_window::make(rate{10, hour}).value()}).value();
  const policy_id q = st->define("q", any_policy{fixed_window::make(rate{100, hour}).value()}).value();
  const auto decide = [&](std::vector<check> cs, tick now, std::vector<decision>& per) {
    per.assign(cs.size(), decision{});
    return st->decide_at({.checks = cs, .now = now, .cost = 1, .id = {}}, per);
  };
  std::vector<decision> per;
  auto d = decide({{p, "k", 8}, {q, "k", 1}}, 0, per);
  ASSERT_TRUE(d.d.allowed);
  EXPECT_EQ(per[0].remaining, 2);
  EXPECT_EQ(per[1].remaining, 99);
  // q at 1 would admit, p at 5 denies: nothing charged.
  d = decide({{q, "k", 1}, {p, "k", 5}}, 1, per);
  EXPECT_FALSE(d.d.allowed);
  EXPECT_EQ(d.from, source::store);
  EXPECT_EQ(d.d.part, 1);
  EXPECT_FALSE(per[0].allowed);
  EXPECT_EQ(per[0].retry_after, 0);
  EXPECT_EQ(per[0].remaining, 99);
  EXPECT_EQ(per[1].remaining, 2);
  EXPECT_EQ(per[1].retry_after, hour - 1);
  // The cache holds (p, k) at cost 5, not at the request's cost 1: a request
  // of 2 on p is the store's to answer, and admits.
  d = decide({{p, "k", 2}}, 2, per);
  EXPECT_TRUE(d.d.allowed);
  EXPECT_EQ(d.from, source::store);
  EXPECT_EQ(per[0].remaining, 0);
  // A request of 5 again is the cache's (5 >= 5), and charges q nothing.
  // (Soon, not necessarily the first repeat: the cache may pass a request
  // to the store while its listener reads; each repeat is denied, and the
  // first the cache answers is its first hit.)
  const std::vector<check> again{{q, "k", 1}, {p, "k", 5}};
  EXPECT_TRUE(cache_answers_denial(*st, {.checks = again, .now = 3, .cost = 1, .id = {}}));
  EXPECT_EQ(st->stats().deny_cache_hits, 1U);
  d = decide({{q, "k", 1}}, 4, per);
  EXPECT_TRUE(d.d.allowed);
  EXPECT_EQ(per[0].remaining, 98);  // charged at t=0 and now only
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_behaviour_test
