// The Redis store at the store's clock (store_options::clock =
// store_clock::store; semantics.md, "Clocks of a fleet"): each call reads
// Redis's TIME inside its one FCALL and decides at it, whatever the
// request's `now`, and reports the instant it used. Stores whose requests'
// clocks are hours apart then admit one allowance between them, where at
// their own clocks (store_clock::local) they admit more.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "redis/client/binary.hpp"
#include "redis/client_support.hpp"
#include "redis/store/protocol.hpp"
#include "redis/store_support.hpp"
#include "redis/test_client.hpp"
#include "sluice/core/policy_expr.hpp"

namespace sluice::redis_test::redis_store_clock_test {
namespace {

tick realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr tick second = 1'000'000'000;
constexpr tick hour = 3600 * second;

any_policy policy(std::string_view text) { return parse_policy(text).value(); }

store_options at(store_clock c, const std::string& prefix) {
  store_options o;
  o.clock = c;
  o.key_prefix = prefix;
  return o;
}

// A fixed window of `limit` an hour whose window is now half over, so that
// no window ends while a test runs.
std::string mid_window(int limit) {
  const tick into = ((realtime_ns() % hour) + hour / 2) % hour;
  return "fixed-window " + std::to_string(limit) + "/1h origin=" + std::to_string(into / second) + "s";
}

// Every algorithm with an allowance of 5 in the seconds the test runs.
std::vector<std::string> allowance_5() {
  return {"gcra 5/1h burst=5",
          "token-bucket 5/1h burst=5",
          "sliding-log 5/1h",
          "sliding-counter 5/1h",
          "sliding-buckets 5/1h buckets=4",
          "leaky-queue 5/1h queue=5",
          "quota 5",
          "concurrency 5 lease=1h",
          mid_window(5)};
}

// Admits of 5 requests through store A at the machine's clock, then 5
// through store B at that clock plus `offset`, on one key of `text`.
int admits_of_two(store_clock c, std::string_view text, tick offset) {
  const std::string prefix = fresh_prefix("two-clocks");
  auto a = open_store(at(c, prefix));
  auto b = open_store(at(c, prefix));
  if (!a || !b) return -1;
  const any_policy p = policy(text);
  const check ca{a->define("p", p).value(), "k"};
  const check cb{b->define("p", p).value(), "k"};
  int admits = 0;
  for (int i = 0; i < 10; ++i) {
    const bool first = i < 5;
    const store_decision d =
        (first ? *a : *b).decide_at(one_check(first ? ca : cb, realtime_ns() + (first ? 0 : offset)));
    EXPECT_EQ(d.from, source::store) << text;
    admits += d.d.allowed ? 1 : 0;
  }
  return admits;
}

TEST(RedisStoreClock, ClocksHoursApartAdmitOneAllowanceOnEveryAlgorithm) {
  for (const tick offset : {hour, 30 * second, -30 * second}) {
    for (const std::string& text : allowance_5()) {
      // The leaky queue's first unit leaves at the instant it arrived, so
      // every later request finds it gone (semantics.md): 5 + 1 in seconds.
      const int allowance = text.starts_with("leaky") ? 6 : 5;
      EXPECT_EQ(admits_of_two(store_clock::store, text, offset), allowance) << text << " offset " << offset;
    }
  }
  // At their own clocks, the process an hour ahead finds the hour elapsed
  // (semantics.md's table): every algorithm but the quota (and the counter,
  // whose previous window still weighs) admits more than its allowance.
  for (const std::string& text : allowance_5()) {
    const std::string& t = text;
    const int local = admits_of_two(store_clock::local, text, hour);
    const int allowance = t.starts_with("leaky") ? 6 : 5;
    if (t.starts_with("quota") || t.starts_with("sliding-counter"))
      EXPECT_GE(local, allowance) << text;
    else
      EXPECT_GT(local, allowance) << text;
  }
}

TEST(RedisStoreClock, DecidesAtTheServersInstantAndSaysWhich) {
  auto st = open_store(at(store_clock::store, fresh_prefix("says")));
  ASSERT_TRUE(st);
  const check c{st->define("q", policy("quota 5")).value(), "k"};
  tick previous = 0;
  for (const tick now : {tick{0}, tick{-5} * hour, never, realtime_ns() + 1000 * hour}) {
    const tick before = realtime_ns();
    const store_decision d = st->decide_at(one_check(c, now));
    ASSERT_EQ(d.from, source::store);
    EXPECT_GE(d.at, previous) << "Redis's clock stepped back";
    // Redis runs on this machine: its clock is this machine's, to the µs.
    EXPECT_GE(d.at, before - 1000);
    EXPECT_LE(d.at, realtime_ns() + 1000);
    previous = d.at;
  }
}

// Through the store: each request, whatever its `now`, decides as the
// same request at the instant it reports, at a local clock (a store opened
// afresh sends this machine's clock as its first estimate).
TEST(RedisStoreClock, EachRequestDecidesAsAtTheInstantItReports) {
  const tick offsets[] = {hour + 17, -hour - 3, 30 * second + 1, -30 * second, 0, tick{1} << 50, -(tick{1} << 50) + 5};
  for (const char* text : {"fixed-window 3/7ms origin=5ms", "sliding-counter 3/7ms", "sliding-buckets 4/8ms buckets=4",
                           "fixed-window 2/1h", "sliding-counter 2/1h", "sliding-buckets 2/1h buckets=3"}) {
    const std::string shared = fresh_prefix("shifted");
    auto mirror = open_store(at(store_clock::local, fresh_prefix("mirror")));
    ASSERT_TRUE(mirror);
    const check cm{mirror->define("w", policy(text)).value(), "k"};
    int admitted = 0;
    for (int i = 0; i < 14; ++i) {
      auto st = open_store(at(store_clock::store, shared));
      ASSERT_TRUE(st);
      const check c{st->define("w", policy(text)).value(), "k"};
      std::vector<decision> per(1);
      const tick offset = offsets[static_cast<std::size_t>(i) % std::size(offsets)];
      const store_decision d = st->decide_at(one_check(c, realtime_ns() + offset), per);
      ASSERT_EQ(d.from, source::store) << text;
      std::vector<decision> mper(1);
      const store_decision m = mirror->decide_at(one_check(cm, d.at), mper);
      EXPECT_EQ(show(d.d), show(m.d)) << text << " request " << i;
      EXPECT_EQ(show(per[0]), show(mper[0])) << text << " request " << i;
      admitted += d.d.allowed ? 1 : 0;
    }
    EXPECT_GT(admitted, 0) << text;
  }
}

// The library itself, called with estimates far from TIME (a store sends
// its estimate, which is close after its first reply): each windowed leaf
// moves the window the client split at the estimate by TIME minus it, and
// must write what the same call at the instant it reports writes, sent as
// that instant (the local clock's form) on a twin key.
TEST(RedisStoreClock, TheLibraryMovesAWindowSplitAtAFarEstimateExactly) {
  redis::test_client c(redis::client_support::options_for(shared_server().url()));
  ASSERT_TRUE(c.set_library(std::string(redis_store::library_name()), std::string(redis_store::library_code())).ok());
  const std::string fn = std::string(redis_store::library_name()) + "_one";
  const tick offsets[] = {
      hour + 17, -hour - 3, 30 * second + 1, -30 * second, 0, tick{1} << 50, -(tick{1} << 50) + 5, 3 * second, 7, -11};
  for (const std::string& text : {std::string("fixed-window 3/7ms origin=5ms"), std::string("sliding-counter 3/7ms"),
                                  std::string("sliding-buckets 4/8ms buckets=4"), mid_window(2),
                                  std::string("sliding-counter 2/1h"), std::string("sliding-buckets 2/1h buckets=3")}) {
    const redis::plan p = redis::plan::make(policy(text)).value();
    const std::string at_store = fresh_prefix("lib-store") + "k";
    const std::string at_local = fresh_prefix("lib-local") + "k";
    const auto call = [&](const std::string& key, tick now, bool store) {
      std::string b;
      std::int64_t h = 0;
      std::int64_t l = 0;
      redis::split_limbs(now, h, l);
      redis::put_number(b, store ? h + (std::int64_t{1} << 32) : h);
      redis::put_number(b, l);
      redis::put_number(b, 1);       // tns
      redis::put_number(b, 60'002);  // base (ms)
      redis::put_number(b, 0);       // batch
      p.append_leaf(0, now, 1, b);
      const std::string_view argv[] = {key, b};
      auto r = c.fcall({fn, 1, argv});
      EXPECT_TRUE(std::holds_alternative<redis::reply>(r)) << text;
      return std::holds_alternative<redis::reply>(r) ? std::get<redis::reply>(std::move(r)) : redis::reply{};
    };
    int admitted = 0;
    for (std::size_t i = 0; i < 20; ++i) {
      redis::reply s = call(at_store, realtime_ns() + offsets[i % std::size(offsets)], true);
      ASSERT_EQ(s.kind, redis::reply::type::array) << text << ": " << s.str;
      ASSERT_GE(s.elements.size(), 4U) << text;  // {status, before[, after], h, l}
      const tick t =
          *s.elements[s.elements.size() - 2].as_integer() * (tick{1} << 32) + *s.elements.back().as_integer();
      s.elements.resize(s.elements.size() - 2);
      const redis::reply m = call(at_local, t, false);
      ASSERT_EQ(m.kind, redis::reply::type::array) << text;
      ASSERT_EQ(s.elements.size(), m.elements.size()) << text << " call " << i;
      EXPECT_EQ(s.elements[0].as_integer(), m.elements[0].as_integer()) << text << " call " << i;
      if (s.elements.size() == 3) {
        EXPECT_EQ(s.elements[2].as_string(), m.elements[2].as_string()) << text << " call " << i;
      }
      admitted += s.elements[0].as_integer() == 1 ? 1 : 0;
    }
    EXPECT_GT(admitted, 0) << text;
  }
}

TEST(RedisStoreClock, TheDenyCacheAnswersByTheStoresClockNotTheRequests) {
  store_options o = at(store_clock::store, fresh_prefix("deny"));
  o.deny_cache = true;
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const check c{st->define("f", policy(mid_window(2))).value(), "k"};
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(st->decide_at(one_check(c, 0)).d.allowed);
  const store_decision denied = st->decide_at(one_check(c, 0));
  ASSERT_EQ(denied.from, source::store);
  ASSERT_FALSE(denied.d.allowed);
  // A request stamped an hour and a day later is still in the store's
  // window: the cache answers it (at a local clock it would be the next
  // window's, sent to the store and admitted).
  for (const tick now : {realtime_ns() + hour, realtime_ns() + 24 * hour, tick{0}}) {
    const store_decision d = st->decide_at(one_check(c, now));
    EXPECT_EQ(d.from, source::deny_cache);
    EXPECT_FALSE(d.d.allowed);
    EXPECT_GT(d.d.retry_after, 0);
    EXPECT_LE(d.d.retry_after, denied.d.retry_after);
    EXPECT_GE(d.at, denied.at);  // the estimate of the store's clock, never behind what it read
  }
  EXPECT_EQ(st->stats().deny_cache_hits, 3U);
}

TEST(RedisStoreClock, ABatchDecidesEachRequestAtTheStoresClock) {
  auto st = open_store(at(store_clock::store, fresh_prefix("batch")));
  ASSERT_TRUE(st);
  const check c{st->define("q", policy("quota 5")).value(), "k"};
  std::vector<store_request> reqs(8, one_check(c, -hour));
  std::vector<store_decision> out(reqs.size());
  const tick before = realtime_ns();
  st->decide_many_at(reqs, out);
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].from, source::store);
    EXPECT_EQ(out[i].d.allowed, i < 5);
    EXPECT_GE(out[i].at, before - 1000);
    if (i > 0) {
      EXPECT_GE(out[i].at, out[i - 1].at);
    }
  }
}

TEST(RedisStoreClock, ReportsReleasesAndRefundsTakeTheStoresInstant) {
  auto st = open_store(at(store_clock::store, fresh_prefix("others")));
  ASSERT_TRUE(st);
  const check lease{st->define("l", policy("concurrency 1 lease=1h")).value(), "k"};
  const store_decision held = st->decide_at(one_check(lease, 0));
  ASSERT_TRUE(held.d.allowed);
  // Stamped an hour later, the lease would look expired at a local clock.
  EXPECT_FALSE(st->decide_at(one_check(lease, realtime_ns() + 2 * hour)).d.allowed);
  const check checks[] = {lease};
  EXPECT_EQ(st->release_at(checks, held.lease, -hour).from, source::store);
  EXPECT_TRUE(st->decide_at(one_check(lease, 0)).d.allowed);  // released: held again
  const check g{st->define("g", policy(mid_window(3))).value(), "k"};
  const store_decision r = st->report_at(one_check(g, realtime_ns() + 2 * hour, 2));
  EXPECT_GE(r.at, realtime_ns() - hour);
  EXPECT_LE(r.at, realtime_ns() + 1000);
  EXPECT_TRUE(st->decide_at(one_check(g, 0, 1, "id-1")).d.allowed);  // the report's window: 1 left
  EXPECT_FALSE(st->decide_at(one_check(g, 0)).d.allowed);
  const refund_answer a = st->refund_at("id-1", -hour);
  EXPECT_EQ(a.status, refund_status::refunded);
  EXPECT_LE(a.at, realtime_ns() + 1000);
  EXPECT_GE(a.at, realtime_ns() - hour);
  EXPECT_TRUE(st->decide_at(one_check(g, 0)).d.allowed);  // refunded in the store's window
}

TEST(RedisStoreClock, TheOffsetToTheStoresClockIsMeasured) {
  auto st = open_store(at(store_clock::local, fresh_prefix("offset")));
  ASSERT_TRUE(st);
  EXPECT_FALSE(st->redis_stats().clock_offset_ns);
  const auto o = st->measure_clock_offset();
  ASSERT_TRUE(o);
  EXPECT_LT(std::llabs(*o), second) << "Redis runs on this machine";
  EXPECT_EQ(st->redis_stats().clock_offset_ns, o);
}

TEST(RedisStoreClock, ItsOptionsAreChecked) {
  store_options o;
  o.url = shared_server().url();
  o.clock = store_clock::store;
  o.deny_cache = true;  // fine at the store's clock
  for (const std::int64_t ns : {0, 3, 7, 1001, 2000}) {
    o.tick_ns = ns;
    auto b = redis_store::open(o);
    ASSERT_FALSE(b.ok()) << ns;
    EXPECT_EQ(b.err().field, "tick_ns");
  }
  for (const std::int64_t ns : {1, 8, 125, 1000}) {
    o.tick_ns = ns;
    EXPECT_TRUE(redis_store::open(o).ok()) << ns;
  }
  o.tick_ns = 1;
  o.max_clock_offset = std::chrono::milliseconds(-1);
  auto c = redis_store::open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.err().field, "max_clock_offset");
}

TEST(RedisStoreClock, NoServerMeansTheFailureMode) {
  store_options o;
  o.clock = store_clock::store;
  o.on_failure = failure_mode::fail_closed;
  o.connect_timeout = std::chrono::milliseconds(100);
  o.url = "redis://127.0.0.1:1";  // nothing listens on port 1
  auto st = open_store(o, o.url);
  ASSERT_TRUE(st);
  const check c{st->define("g", any_policy{gcra::make(rate{1, 1000}, 1).value()}).value(), "k"};
  const auto d = st->decide_at(one_check(c, 123));
  EXPECT_EQ(d.from, source::fail_closed);
  EXPECT_FALSE(d.d.allowed);
  EXPECT_EQ(st->stats().store_failures, 1U);
}

}  // namespace
}  // namespace sluice::redis_test::redis_store_clock_test
