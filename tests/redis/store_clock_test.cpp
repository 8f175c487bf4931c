// The Redis store's server-clock mode (redis_store_options::server_clock):
// requests are decided at Redis's clock (TIME), whatever their `now`, and
// each decision reports the instant it used; deciding the same requests at
// those instants on the client's clock gives the same decisions.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "redis/store_support.hpp"

namespace sluice::redis_test::redis_store_server_clock_test {
namespace {

tick realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(RedisServerClock, DecidesAtTheServersClockAndSaysWhen) {
  redis_store_options o;
  o.server_clock = true;
  o.prefix = fresh_prefix("server-clock");
  auto server = open_store(o);
  redis_store_options p;
  p.prefix = fresh_prefix("client-clock");
  auto client = open_store(p);
  ASSERT_TRUE(server && client);
  // 5 per 100 ms with a burst of 3: time matters at the scale of the sleeps.
  const any_policy pol{gcra::make(rate{5, 100'000'000}, 3).value()};
  const check cs{server->define("g", pol).value(), "k"};
  const check cc{client->define("g", pol).value(), "k"};
  tick previous = 0;
  std::size_t allowed = 0;
  std::size_t denied = 0;
  for (int i = 0; i < 40; ++i) {
    // The request's own instant is ignored: the server's is used.
    std::vector<decision> per(1);
    const store_decision s = server->decide_at(one_check(cs, i % 2 == 0 ? 0 : never), per);
    ASSERT_EQ(s.from, source::store);
    EXPECT_GE(s.at, previous) << "Redis's clock stepped back";
    EXPECT_LT(std::abs(static_cast<double>(s.at - realtime_ns())), 5e9) << "an instant far from this machine's clock";
    previous = s.at;
    // The same request at that instant, on the client's clock.
    std::vector<decision> cper(1);
    const store_decision c = client->decide_at(one_check(cc, s.at), cper);
    ASSERT_EQ(c.from, source::store);
    EXPECT_EQ(c.at, s.at);
    EXPECT_EQ(show(s.d), show(c.d)) << "request " << i;
    EXPECT_EQ(show(per[0]), show(cper[0])) << "request " << i;
    (s.d.allowed ? allowed : denied) += 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(i % 8 == 0 ? 60 : 2));
  }
  EXPECT_GT(allowed, 3U);
  EXPECT_GT(denied, 3U);
}

TEST(RedisServerClock, ABatchIsDecidedAtOneInstant) {
  redis_store_options o;
  o.server_clock = true;
  auto st = open_store(o);
  ASSERT_TRUE(st);
  const check c{st->define("q", any_policy{quota::make(5).value()}).value(), "k"};
  std::vector<store_request> reqs(8, one_check(c, 0));
  std::vector<store_decision> out(reqs.size());
  st->decide_many_at(reqs, out);
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].from, source::store);
    EXPECT_EQ(out[i].at, out[0].at);
    EXPECT_EQ(out[i].d.allowed, i < 5);
  }
  EXPECT_GT(out[0].at, 0);
}

TEST(RedisServerClock, ItsOptionsAreChecked) {
  redis_store_options o;
  o.url = shared_server().url();
  o.server_clock = true;
  o.deny_cache = true;
  auto a = redis_store::open(o);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.err().field, "deny_cache");
  o.deny_cache = false;
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
}

TEST(RedisServerClock, NoServerMeansTheFailureMode) {
  redis_store_options o;
  o.server_clock = true;
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
}  // namespace sluice::redis_test::redis_store_server_clock_test
