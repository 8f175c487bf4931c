// Redis behind Sentinel (sentinel.hpp): one master, one replica and three
// redis-sentinel processes on free 127.0.0.1 ports, stopped by PID. The URL
// form; discovery (past a dead sentinel, an unknown name refused); and
// `SENTINEL FAILOVER` while calls run: the test_client follows, every call
// completes (a reply or a counted error), later calls reach the new master.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include "redis/sentinel.hpp"
#include "redis/sync_client.hpp"
#include "redis/test_client.hpp"
#include "support/redis_server.hpp"

namespace sluice::redis::redis_sentinel_test {
namespace {

using namespace std::chrono_literals;
using testing::redis_server;
using testing::redis_server_options;

TEST(SentinelUrl, EveryPart) {
  auto u = parse_sentinel_url("redis+sentinel://app:pw@127.0.0.1:26379,[::1]:26380,h/mymaster/3");
  ASSERT_TRUE(u.ok()) << u.err().what();
  ASSERT_EQ(u.value().sentinels.size(), 3u);
  EXPECT_EQ(u.value().sentinels[1].host, "::1");
  EXPECT_EQ(u.value().sentinels[2].port, 6379);
  EXPECT_TRUE(u.value().sentinels[0].password.empty());  // sentinels are asked without AUTH
  EXPECT_EQ(u.value().master, "mymaster");
  EXPECT_EQ(u.value().login.user, "app");
  EXPECT_EQ(u.value().login.password, "pw");
  EXPECT_EQ(u.value().login.db, 3);
  EXPECT_FALSE(u.value().login.tls.on);
  auto t = parse_sentinel_url("rediss+sentinel://h:1/m?ca_file=/ca.pem");
  ASSERT_TRUE(t.ok()) << t.err().what();
  EXPECT_TRUE(t.value().login.tls.on);
  EXPECT_EQ(t.value().sentinels[0].tls.ca_file, "/ca.pem");
  for (const auto& [text, field] : std::map<std::string, std::string>{{"redis://h/m", "scheme"},
                                                                      {"redis+sentinel://h:1", "master"},
                                                                      {"redis+sentinel://h:1/", "master"},
                                                                      {"redis+sentinel:///m", "sentinel"},
                                                                      {"redis+sentinel://h:1,/m", "sentinel"},
                                                                      {"redis+sentinel://h:0/m", "port"},
                                                                      {"redis+sentinel://h:1/m/x", "db"},
                                                                      {"redis+sentinel://h:1/m?verify=no", "verify"}}) {
    auto r = parse_sentinel_url(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.err().field, field) << text << ": " << r.err().what();
  }
}

// One master, one replica, three sentinels watching "mymaster".
struct deployment {
  redis_server master;
  redis_server replica;
  std::vector<std::unique_ptr<redis_server>> sentinels;

  deployment() : replica({.extra_config = {"replicaof 127.0.0.1 " + std::to_string(master.port())}}) {
    for (int i = 0; i < 3; ++i)
      sentinels.push_back(std::make_unique<redis_server>(redis_server_options{
          .extra_config = {"sentinel monitor mymaster 127.0.0.1 " + std::to_string(master.port()) + " 2",
                           "sentinel down-after-milliseconds mymaster 1000", "sentinel failover-timeout mymaster 5000"},
          .sentinel = true}));
    // Ready when the first sentinel knows the replica and the replica is in sync.
    async_client_options co;
    co.where = parse_url(sentinels[0]->url()).value();
    co.command_timeout = 1000ms;
    test_client s(co);
    co.where = parse_url(replica.url()).value();
    test_client r(co);
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < until) {
      auto reps = s.call({"SENTINEL", "replicas", "mymaster"});
      auto info = r.call({"INFO", "replication"});
      const auto* arr = std::get_if<reply>(&reps);
      const auto* text = std::get_if<reply>(&info);
      if (arr != nullptr && arr->as_array() != nullptr && !arr->elements.empty() && text != nullptr &&
          text->str.find("master_link_status:up") != std::string::npos)
        return;
      std::this_thread::sleep_for(50ms);
    }
    throw std::runtime_error("sentinel deployment: the replica was not seen in sync within 20 s");
  }

  [[nodiscard]] std::string url(const std::string& first = "") const {
    std::string u = "redis+sentinel://" + first;
    for (std::size_t i = 0; i < sentinels.size(); ++i)
      u += (i == 0 && first.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(sentinels[i]->port());
    return u + "/mymaster";
  }
};

// `out` observes the sentinel client without owning it: the sync_client owns
// it and the io_context its timers live on, so it must not outlive them.
std::unique_ptr<sync_client> open_sentinel(const std::string& text, std::weak_ptr<sentinel_client>* out = nullptr) {
  sentinel_options so;
  so.where = parse_sentinel_url(text).value();
  so.connect_timeout = 500ms;
  so.command_timeout = 500ms;
  auto c = sync_client::open([&](boost::asio::any_io_executor ex) -> result<std::shared_ptr<async_backend>> {
    auto s = sentinel_client::create(std::move(ex), so);
    if (!s) return s.err();
    if (out != nullptr) *out = s.value();
    return std::shared_ptr<async_backend>(std::move(s).value());
  });
  EXPECT_TRUE(c.ok());
  return std::move(c).value();
}

std::uint16_t a_dead_port() {
  redis_server gone;
  const auto p = gone.port();
  gone.kill9();
  return p;
}

TEST(Sentinel, DiscoversTheMasterPastADeadSentinel) {
  deployment d;
  std::weak_ptr<sentinel_client> s;
  auto c = open_sentinel(d.url("127.0.0.1:" + std::to_string(a_dead_port())), &s);
  auto r = c->call({"SET", "k", "v"});
  ASSERT_TRUE(std::holds_alternative<reply>(r)) << std::get<call_error>(r).what();
  EXPECT_EQ(s.lock()->master_address(), "127.0.0.1:" + std::to_string(d.master.port()));
  EXPECT_EQ(std::get<reply>(c->call({"GET", "k"})).as_string(), "v");

  auto unknown = open_sentinel("redis+sentinel://127.0.0.1:" + std::to_string(d.sentinels[0]->port()) + "/nosuch");
  auto e = unknown->call({"PING"});
  ASSERT_TRUE(std::holds_alternative<call_error>(e));
  EXPECT_EQ(std::get<call_error>(e).kind, call_error::refused);
  EXPECT_NE(std::get<call_error>(e).message.find("does not know a master named \"nosuch\""), std::string::npos)
      << std::get<call_error>(e).message;
}

TEST(Sentinel, FollowsAFailoverUnderLoad) {
  deployment d;
  std::weak_ptr<sentinel_client> s;
  auto c = open_sentinel(d.url(), &s);
  const std::string old_master = "127.0.0.1:" + std::to_string(d.master.port());
  const std::string new_master = "127.0.0.1:" + std::to_string(d.replica.port());

  std::int64_t ok = 0, calls = 0, after_switch = 0, last = 0;
  std::map<std::string, int> errors;
  bool failover_sent = false;
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < until && after_switch < 500) {
    auto r = c->call({"INCR", "n"});
    ++calls;
    if (auto* rep = std::get_if<reply>(&r)) {
      ++ok;
      last = rep->as_integer().value_or(0);
      if (s.lock()->master_address() == new_master) ++after_switch;
    } else {
      const auto& e = std::get<call_error>(r);
      ++errors[std::string(call_error::name(e.kind)) + (e.maybe_applied ? " (maybe applied)" : "")];
    }
    if (!failover_sent && ok == 300) {
      async_client_options co;
      co.where = parse_url(d.sentinels[1]->url()).value();
      test_client admin(co);
      auto f = admin.call({"SENTINEL", "FAILOVER", "mymaster"});
      ASSERT_TRUE(std::holds_alternative<reply>(f)) << std::get<call_error>(f).what();
      failover_sent = true;
    }
  }
  std::int64_t failed = 0;
  std::string shown;
  for (const auto& [k, v] : errors) {
    failed += v;
    shown += " " + k + "=" + std::to_string(v);
  }
  const auto st = s.lock()->stats();
  std::printf(
      "sentinel failover: %lld calls, %lld answered, %lld errors (%s ), %lld after the switch; %llu "
      "+switch-master, %llu discoveries, %llu resent\n",
      static_cast<long long>(calls), static_cast<long long>(ok), static_cast<long long>(failed),
      shown.empty() ? " none" : shown.c_str(), static_cast<long long>(after_switch),
      static_cast<unsigned long long>(st.switch_messages), static_cast<unsigned long long>(st.discoveries),
      static_cast<unsigned long long>(st.resent));
  EXPECT_TRUE(failover_sent);
  EXPECT_EQ(ok + failed, calls);
  EXPECT_EQ(s.lock()->master_address(), new_master) << "was " << old_master;
  EXPECT_GE(after_switch, 500) << "the client did not follow within 30 s";
  EXPECT_GE(st.switches, 1u);
  // Later calls go to the new master: its own count is the client's.
  async_client_options co;
  co.where = parse_url(d.replica.url()).value();
  test_client direct(co);
  auto role = direct.call({"ROLE"});
  ASSERT_TRUE(std::holds_alternative<reply>(role));
  EXPECT_EQ(std::get<reply>(role).elements.at(0).str, "master");
  auto mine = c->call({"INCR", "n"});
  ASSERT_TRUE(std::holds_alternative<reply>(mine));
  auto theirs = direct.call({"GET", "n"});
  EXPECT_EQ(std::get<reply>(theirs).as_string(), std::to_string(*std::get<reply>(mine).as_integer()));
  // Writes the old master took after the replica was promoted are lost
  // (asynchronous replication): the window, counted.
  std::printf("sentinel failover: %lld INCRs answered, the new master counts %lld (last answer %lld)\n",
              static_cast<long long>(ok), static_cast<long long>(*std::get<reply>(mine).as_integer() - 1),
              static_cast<long long>(last));
}

}  // namespace
}  // namespace sluice::redis::redis_sentinel_test
