// Redis behind Sentinel (sentinel.hpp): one master, one replica and three
// redis-sentinel processes on free 127.0.0.1 ports, stopped by PID. The URL
// form; discovery (past a dead sentinel, an unknown name refused); and
// `SENTINEL FAILOVER` while calls run: the test_client follows, every call
// completes (a reply or a counted error), later calls reach the new master.
// And the store through repeated failovers: with `wait_replicas=1` and
// fail-closed it admits nothing a failover loses; without, the loss is
// printed (docs/redis.md, "Sentinel failover").
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "redis/client/sentinel.hpp"
#include "redis/client/sync_client.hpp"
#include "redis/store_support.hpp"
#include "redis/test_client.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/redis/store.hpp"
#include "support/redis_module_server.hpp"
#include "support/redis_server.hpp"
#include "support/stop_and_join.hpp"

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

// One master, one replica, three sentinels watching "mymaster"; with
// `module_on_master`, the master loads sluice's Redis module and the
// replica does not (docs/redis.md, "The store and the module").
struct deployment {
  static redis_server_options in_memory(redis_server_options o) {
    o.in_memory_dir = true;
    return o;
  }
  redis_server master;
  redis_server replica;
  std::vector<std::unique_ptr<redis_server>> sentinels;

  // A full sync starts at once (not after the default 5 s of diskless
  // sync's delay): a demoted master is a replica in sync soon after. Every
  // server's directory is in memory, as the sentinels' are: a failover
  // fsyncs their configurations (redis_server_options::in_memory_dir).
  explicit deployment(bool module_on_master = false)
      : master(in_memory(module_on_master ? testing::with_module({"repl-diskless-sync-delay 0"})
                                          : redis_server_options{.extra_config = {"repl-diskless-sync-delay 0"}})),
        replica(in_memory(
            {.extra_config = {"replicaof 127.0.0.1 " + std::to_string(master.port()), "repl-diskless-sync-delay 0"}})) {
    for (int i = 0; i < 3; ++i)
      sentinels.push_back(std::make_unique<redis_server>(redis_server_options{
          .extra_config = {"sentinel monitor mymaster 127.0.0.1 " + std::to_string(master.port()) + " 2",
                           "sentinel down-after-milliseconds mymaster 1000", "sentinel failover-timeout mymaster 5000"},
          .sentinel = true}));
    // Ready when every sentinel knows the replica as a healthy one (any of
    // them may be asked to fail over: one that has not seen it yet answers
    // NOGOODSLAVE) and the replica is in sync. With the sync at once, the
    // replica is in sync before the later sentinels' first look at the
    // master, so the first sentinel's view alone was not enough.
    async_client_options co;
    co.command_timeout = 1000ms;
    std::vector<std::unique_ptr<test_client>> watchers;
    for (const auto& sentinel : sentinels) {
      co.where = parse_url(sentinel->url()).value();
      watchers.push_back(std::make_unique<test_client>(co));
    }
    co.where = parse_url(replica.url()).value();
    test_client r(co);
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < until) {
      auto info = r.call({"INFO", "replication"});
      const auto* text = std::get_if<reply>(&info);
      bool ready = text != nullptr && text->str.find("master_link_status:up") != std::string::npos;
      for (auto& w : watchers) ready = ready && knows_a_healthy_replica(*w);
      if (ready) return;
      std::this_thread::sleep_for(50ms);
    }
    throw std::runtime_error("sentinel deployment: the replica was not seen in sync by every sentinel within 20 s");
  }

  // Whether a sentinel lists a replica of "mymaster" flagged only "slave"
  // whose link to the master it reads as ok.
  static bool knows_a_healthy_replica(test_client& sentinel) {
    auto reps = sentinel.call({"SENTINEL", "replicas", "mymaster"});
    const auto* arr = std::get_if<reply>(&reps);
    if (arr == nullptr || arr->as_array() == nullptr) return false;
    for (const auto& one : arr->elements) {
      if (one.as_array() == nullptr) continue;
      std::string flags, link;
      for (std::size_t i = 0; i + 1 < one.elements.size(); i += 2) {
        if (one.elements[i].str == "flags") flags = one.elements[i + 1].str;
        if (one.elements[i].str == "master-link-status") link = one.elements[i + 1].str;
      }
      if (flags == "slave" && link == "ok") return true;
    }
    return false;
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

// The address the sentinels name for "mymaster"; "" when the sentinel
// named none (a call that failed, under load: a timeout), `why` then says
// what it answered.
std::string master_named(test_client& sentinel, std::string* why = nullptr) {
  auto r = sentinel.call({"SENTINEL", "get-master-addr-by-name", "mymaster"});
  const auto* rep = std::get_if<reply>(&r);
  if (rep == nullptr || rep->as_array() == nullptr || rep->elements.size() != 2) {
    if (why != nullptr) *why = rep == nullptr ? std::get<call_error>(r).what() : "a reply that names no master";
    return "";
  }
  return rep->elements[0].str + ":" + rep->elements[1].str;
}

// Whether the server at `address` is a master with a replica online.
bool master_with_replica_online(const std::string& address) {
  async_client_options co;
  co.where = parse_url("redis://" + address).value();
  co.command_timeout = 1000ms;
  test_client c(co);
  auto r = c.call({"INFO", "replication"});
  const auto* rep = std::get_if<reply>(&r);
  return rep != nullptr && rep->str.find("role:master") != std::string::npos &&
         rep->str.find("state=online") != std::string::npos;
}

// The sentinels turn an old master into a replica of the new one only
// after about 8 s (and see it as one at their next INFO, 10 s): done at
// once, as they would, so that the next failover finds a replica in sync
// within seconds. `REPLICAOF` sent to `old_master`, naming `master`.
call_result demote(const std::string& old_master, const std::string& master) {
  const auto colon = master.rfind(':');
  async_client_options oc;
  oc.where = parse_url("redis://" + old_master).value();
  oc.command_timeout = 1000ms;
  test_client old(oc);
  return old.call({"REPLICAOF", master.substr(0, colon), master.substr(colon + 1)});
}

// What a store shows when a read got no store answer: the read's source,
// its breaker, its path, its calls each way and its latest failure.
std::string shown_by(redis_store& st, const store_decision& p) {
  const auto s = st.redis_stats();
  std::string out = "source " + std::string(name_of(p.from)) + "; breakers:";
  for (const auto& b : s.breakers) out += " " + b.node + " " + std::string(b.state);
  out += "; paths:";
  for (const auto& m : s.module_paths) out += " " + m.node + " " + m.path;
  out += "; module_calls " + std::to_string(s.module_calls) + ", library_calls " + std::to_string(s.library_calls) +
         ", failures " + std::to_string(s.base.store_failures) + ", breaker_open " + std::to_string(s.breaker_open) +
         ", trips " + std::to_string(s.breaker_trips) + "; failures by reason:";
  for (std::size_t i = 0; i < s.call_failures.size(); ++i)
    if (s.call_failures[i] != 0)
      out += " " + std::string(redis_store_stats::failure_reasons[i]) + " " + std::to_string(s.call_failures[i]);
  return out + "; last failure: " + s.last_failure;
}

// Two stores on one Sentinel deployment decide a quota's admits under load
// while the master is failed over by `SENTINEL FAILOVER`, 3 times: one store
// with `?wait_replicas=1&wait_timeout=50ms`, one without, both fail-closed.
// A quota never resets, so a key admitted `a` units in the run and still
// charged `u` by the last master has over-admitted a - u: had its allowance
// been u, it would have admitted a. With WAIT that is never above 0 (an
// admit is answered only once the replica has it); without, it is what the
// old master took after the promotion (printed, not asserted). Run twice:
// on servers without the module (/library), and with the module on the
// first master only, `?module=auto` (/module_on_the_master_only): each
// failover switches the stores' path, module -> library -> module ->
// library, and the WAIT store still over-admits nothing.
class SentinelFailover : public ::testing::TestWithParam<bool> {};

TEST_P(SentinelFailover, WaitReplicasBoundsAFailoverToNoOverAdmission) {
  const bool module = GetParam();
  deployment d(module);
  constexpr std::int64_t quota = 1'000'000'000;  // the allowance; never reached here
  constexpr std::size_t n_keys = 8, batch = 16;
  store_options o;
  o.command_timeout = 500ms;
  o.connect_timeout = 500ms;
  o.on_failure = failure_mode::fail_closed;
  std::array<std::unique_ptr<redis_store>, 2> st;  // [0] waits, [1] does not
  for (std::size_t w = 0; w < 2; ++w) {
    o.url = d.url() + (w == 0 ? "?wait_replicas=1&wait_timeout=50ms" : "") +
            (module ? (w == 0 ? "&module=auto" : "?module=auto") : "");
    o.key_prefix = w == 0 ? "wait:" : "nowait:";
    auto s = redis_store::open(o);
    ASSERT_TRUE(s.ok()) << s.err().what();
    st[w] = std::move(s).value();
  }
  const auto parsed = parse_policy("quota 1000000000");
  ASSERT_TRUE(parsed.ok());
  std::array<policy_id, 2> q{};
  for (std::size_t w = 0; w < 2; ++w) q[w] = st[w]->define("q", *parsed).value();
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < n_keys; ++i) keys.push_back("k" + std::to_string(i));

  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::steady_clock::now() - t0; };
  std::atomic<bool> stop{false};
  std::array<std::vector<std::int64_t>, 2> admits{std::vector<std::int64_t>(n_keys), std::vector<std::int64_t>(n_keys)};
  std::array<std::atomic<std::uint64_t>, 2> decided{}, failed{};
  auto load = [&](std::size_t w) {
    std::vector<check> checks(batch);
    std::vector<store_request> reqs(batch);
    std::vector<store_decision> out(batch);
    for (int round = 0; !stop && round < 1'000'000 && elapsed() < 300s; ++round) {
      const tick now =
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      for (std::size_t i = 0; i < batch; ++i) {
        checks[i] = {q[w], keys[(round * batch + i) % n_keys]};
        reqs[i] = redis_test::one_check(checks[i], now);
      }
      st[w]->decide_many_at(reqs, out);
      std::size_t failed_here = 0;
      for (std::size_t i = 0; i < batch; ++i) {
        if (out[i].from != source::store) {
          ++failed[w];
          ++failed_here;
          EXPECT_FALSE(out[i].d.allowed);  // fail-closed
          continue;
        }
        ++decided[w];
        if (out[i].d.allowed) ++admits[w][(round * batch + i) % n_keys];
      }
      // A batch the failure mode answered whole (the breaker open: no call
      // made) is followed by a pause, as a client backing off, so that
      // the round bound is not spent in microseconds.
      if (failed_here == batch) std::this_thread::sleep_for(1ms);
    }
  };
  std::thread a(load, 0), b(load, 1);
  const testing::stop_and_join join_on_exit(stop, {&a, &b});

  async_client_options co;
  co.where = parse_url(d.sentinels[0]->url()).value();
  co.command_timeout = 1000ms;
  test_client admin(co);
  // Each failover once both stores have decided under load on the master
  // of the time and its replica is online, so that each one promotes a
  // replica in sync while calls run.
  // SLUICE_SENTINEL_FAILOVERS=10 (1..20) for the figures of docs/redis.md,
  // run by hand; each failover has 10 s.
  int failovers = 3;
  if (const char* n = std::getenv("SLUICE_SENTINEL_FAILOVERS"); n != nullptr)
    failovers = std::clamp(std::atoi(n), 1, 20);
  const auto budget = std::chrono::seconds(10 * failovers);
  int done = 0;
  std::string master, why;
  while ((master = master_named(admin, &why)).empty() && elapsed() < budget) std::this_thread::sleep_for(20ms);
  ASSERT_FALSE(master.empty()) << "the sentinel named no master: " << why;
  // What the last failover waited on, for a run that did not do them all.
  std::string waiting;
  // With the module on the first master: each store's path on each master
  // before it is failed over, as the store shows it (its figures are its
  // master's connections').
  std::array<std::vector<std::string>, 2> paths_seen;
  while (done < failovers && elapsed() < budget) {
    const std::array<std::uint64_t, 2> before{decided[0].load(), decided[1].load()};
    while ((decided[0] < before[0] + 1000 || decided[1] < before[1] + 1000) && elapsed() < budget)
      std::this_thread::sleep_for(20ms);
    waiting = "1000 decisions by each store (" + std::to_string(decided[0] - before[0]) + ", " +
              std::to_string(decided[1] - before[1]) + " made)";
    for (std::size_t w = 0; module && w < 2; ++w) {
      const auto s = st[w]->redis_stats();
      paths_seen[w].push_back(s.module_paths.empty() ? "(none)" : s.module_paths[0].path);
      if (s.module_paths.empty() || !s.module_paths[0].path.starts_with("module")) continue;
      EXPECT_GT(s.module_calls, s.library_calls) << w << ": on the master with the module";
    }
    if (!master_with_replica_online(master)) {
      waiting = master + " to be a master with a replica online";
      // Under load the sentinels may fail the master over on their own (it
      // missed their PINGs for down-after-milliseconds, 1 s): the master
      // they name is followed, the old one demoted as below.
      if (const std::string named = master_named(admin); !named.empty() && named != master) {
        std::printf("sentinel failover by the sentinels themselves: %s -> %s (%.1f s into the run)\n", master.c_str(),
                    named.c_str(), std::chrono::duration<double>(elapsed()).count());
        (void)demote(master, named);  // it may not answer yet: then the sentinels do it
        master = named;
        continue;
      }
      std::this_thread::sleep_for(100ms);
      continue;
    }
    auto f = admin.call({"SENTINEL", "FAILOVER", "mymaster"});
    if (const auto* rep = std::get_if<reply>(&f); rep == nullptr || rep->is_error()) {
      waiting = "SENTINEL FAILOVER to be accepted: " + (rep == nullptr ? std::get<call_error>(f).what() : rep->str);
      std::this_thread::sleep_for(100ms);  // NOGOODSLAVE / INPROG until the sentinel sees the replica again
      continue;
    }
    const auto sent = elapsed();
    waiting = "the sentinel to name a master other than " + master;
    // Done when the sentinel names another master: a question it did not
    // answer (a timeout under load) names none, and is asked again.
    std::string named = master;
    int unanswered = 0;
    while ((named.empty() || named == master) && elapsed() < budget) {
      std::this_thread::sleep_for(20ms);
      named = master_named(admin, &why);
      if (named.empty()) ++unanswered;
    }
    if (named.empty() || named == master) break;  // not within the budget: done < failovers, asserted below
    if (unanswered > 0)
      std::printf("sentinel failover %d: the sentinel did not name a master %d times meanwhile (last: %s)\n", done + 1,
                  unanswered, why.c_str());
    const std::string old_master = master;
    master = named;
    ++done;
    const auto demoted = demote(old_master, master);
    EXPECT_TRUE(std::holds_alternative<reply>(demoted)) << std::get<call_error>(demoted).what();
    std::printf("sentinel failover %d: %s -> %s, named %.2f s after SENTINEL FAILOVER (%.1f s into the run)\n", done,
                old_master.c_str(), master.c_str(), std::chrono::duration<double>(elapsed() - sent).count(),
                std::chrono::duration<double>(elapsed()).count());
  }
  // Load on the last master until both stores decide there again.
  for (std::size_t w = 0; w < 2; ++w) {
    const std::uint64_t before = decided[w];
    while (decided[w] < before + 500 && elapsed() < budget + 10s) std::this_thread::sleep_for(20ms);
  }
  stop = true;
  a.join();
  b.join();
  ASSERT_EQ(done, failovers) << "failovers done within " << budget.count() << " s; the last waited for " << waiting
                             << "\nthe first master's log:\n"
                             << d.master.log_tail() << "\nthe first replica's log:\n"
                             << d.replica.log_tail() << "\nthe first sentinel's log:\n"
                             << d.sentinels[0]->log_tail();

  // Each key's charge on the last master (read again while the failure mode
  // answers: the WAIT store's read waits for the new replica's sync too).
  std::array<std::int64_t, 2> over{}, admitted{};
  for (std::size_t w = 0; w < 2; ++w) {
    for (std::size_t i = 0; i < n_keys; ++i) {
      const check c{q[w], keys[i]};
      auto p = st[w]->peek_at(redis_test::one_check(c, 1));
      for (int again = 0; p.from != source::store && again < 100; ++again) {
        std::this_thread::sleep_for(100ms);
        p = st[w]->peek_at(redis_test::one_check(c, 1));
      }
      ASSERT_EQ(p.from, source::store) << (w == 0 ? "wait " : "no wait ") << keys[i] << ": read for 10 s; "
                                       << shown_by(*st[w], p) << "\nthe first master's log:\n"
                                       << d.master.log_tail() << "\nthe first replica's log:\n"
                                       << d.replica.log_tail();
      const std::int64_t used = quota - (p.d.remaining + 1);
      admitted[w] += admits[w][i];
      over[w] += std::max<std::int64_t>(0, admits[w][i] - used);
    }
  }
  std::printf(
      "sentinel failover x%d in %.1f s: with wait_replicas=1: %lld admits, %llu answered by the failure mode, %lld "
      "over-admitted; without: %lld admits, %llu answered by the failure mode, %lld over-admitted\n",
      done, std::chrono::duration<double>(elapsed()).count(), static_cast<long long>(admitted[0]),
      static_cast<unsigned long long>(failed[0].load()), static_cast<long long>(over[0]),
      static_cast<long long>(admitted[1]), static_cast<unsigned long long>(failed[1].load()),
      static_cast<long long>(over[1]));
  EXPECT_GT(admitted[0], 0);
  EXPECT_EQ(over[0], 0) << "a failover over-admitted with wait_replicas=1 and fail-closed";
  if (!module) return;
  // Both paths carried decisions: each store decided by the module on the
  // first master and by the library on the replica, whichever was the
  // master. The last master is the first replica, without the module,
  // unless the sentinels failed over on their own meanwhile (above): it is
  // asked again, and the path expected is its server's.
  std::string last;
  while ((last = master_named(admin, &why)).empty() && elapsed() < budget + 20s) std::this_thread::sleep_for(20ms);
  ASSERT_FALSE(last.empty()) << "the sentinel named no master at the end: " << why;
  const bool last_has_module = last == "127.0.0.1:" + std::to_string(d.master.port());
  for (std::size_t w = 0; w < 2; ++w) {
    const auto s = st[w]->redis_stats();
    ASSERT_EQ(s.module_paths.size(), 1U) << w;
    paths_seen[w].push_back(s.module_paths[0].path);
    std::string shown;
    for (const auto& p : paths_seen[w]) shown += " | " + p;
    std::printf("sentinel failover x%d, %s: the paths before each failover and at the end:%s\n", done,
                w == 0 ? "wait" : "no wait", shown.c_str());
    EXPECT_GT(std::count_if(paths_seen[w].begin(), paths_seen[w].end(),
                            [](const std::string& p) { return p.starts_with("module"); }),
              0)
        << w << shown;
    if (last_has_module)
      EXPECT_TRUE(s.module_paths[0].path.starts_with("module")) << w << ": the last master, " << last << ", has it";
    else
      EXPECT_EQ(s.module_paths[0].path, "library (no module)") << w << ": the last master, " << last;
    EXPECT_GT(s.library_calls, 0U) << w;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, SentinelFailover, ::testing::Values(false, true),
                         [](const auto& i) { return i.param ? "module_on_the_master_only" : "library"; });

}  // namespace
}  // namespace sluice::redis::redis_sentinel_test
