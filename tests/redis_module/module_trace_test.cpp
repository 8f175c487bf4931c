// The module decides as the Lua library, on the same keys: the conformance
// suite's traces of every algorithm (tests/conformance/traces.hpp), with
// requests of several checks, with their calls alternating between FCALL
// and the module's command, decide as the model; and the same requests sent to both on twin keys give the same
// replies, the same stored values and the same TTLs (requests of one check
// and trees of several, request ids, override keys, reports, peeks).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "conformance/traces.hpp"
#include "redis_module/module_support.hpp"
#include "sluice/core/concurrency.hpp"
#include "sluice/core/policy_expr.hpp"

namespace sluice::redis_module_test::module_trace_test {
namespace {

using module_support::fcall;
using module_support::module_call;
using module_support::one_header;
using module_support::run;
using module_support::tree_header;

/// The first element of a reply printed by `show` ("[1 nil s41:…]" → 1).
int status_of(const std::string& shown) {
  if (shown.size() < 2 || shown[0] != '[') return -1;
  return std::atoi(shown.c_str() + 1);
}

conformance::trace_options trace_options() {
  conformance::trace_options o;
  o.max_quantity = std::int64_t{1} << 52;  // what the Redis store holds exactly
  o.length = 24;
  return o;
}

/// Runs trace `t` on `c`, step i through the module when i is odd, else
/// through FCALL; "" when every decision is the model's, else the first
/// difference.
std::string alternate(redis::test_client& c, const conformance::trace& t, const std::string& prefix,
                      std::size_t& decided) {
  const auto want = conformance::expected_answers(t);
  std::vector<redis::plan> plans;
  for (const auto& p : t.policies) plans.push_back(redis::plan::make(p.policy).value());
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const auto& s = t.steps[i];
    if (conformance::bad_request(s)) continue;  // refused by the client, never sent
    std::vector<std::string> keys;
    std::string blob = tree_header(s.now, 0, 0);  // tns 0, base 0: no expiry (the trace's ticks are not time)
    blob.push_back('A');
    redis::put_number(blob, static_cast<std::int64_t>(s.checks.size()));
    for (const auto& ch : s.checks) {
      const redis::plan& pl = plans[ch.policy];
      for (const auto& leaf : pl.leaves())
        keys.push_back(prefix + ch.key + ":" + std::to_string(ch.policy) + leaf.suffix);
      pl.append_tree(s.now, conformance::cost_of(s, ch), blob, s.report);
    }
    const std::string suffix = s.report ? "report" : "decide";
    const std::string got = i % 2 == 1 ? module_call(c, suffix, keys, {blob}) : fcall(c, suffix, keys, {blob});
    const int status = status_of(got);
    if (status != 0 && status != 1)
      return "step " + std::to_string(i) + " (" + (i % 2 ? "module" : "lua") + "): " + got;
    if (s.report) continue;  // charged, never denied: the later decisions show its charge
    ++decided;
    if ((status == 1) != want[i].d.d.allowed)
      return "step " + std::to_string(i) + " (" + (i % 2 ? "module" : "lua") + "): " + conformance::show(s) +
             " admitted " + std::to_string(status) + ", the model " + (want[i].d.d.allowed ? "admits" : "denies");
  }
  return "";
}

TEST(RedisModule, TracesAlternatingWithTheLuaLibraryDecideAsTheModel) {
  auto c = module_support::client_of(module_support::shared_server());
  std::size_t traces = 0, decided = 0;
  for (const algorithm a : conformance::all_algorithms) {
    std::size_t mine = 0, admitted_somewhere = 0;
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
      const auto t = conformance::make_trace(a, seed, trace_options());
      bool planned = true;
      for (const auto& p : t.policies) planned = planned && redis::plan::make(p.policy).ok();
      if (!planned) continue;
      const std::string prefix = "alt:" + std::string(name_of(a)) + ":" + std::to_string(seed) + ":";
      const std::string diff = alternate(c, t, prefix, decided);
      ASSERT_EQ(diff, "") << t.describe();
      ++mine;
      for (const auto& w : conformance::expected_answers(t))
        if (w.d.d.allowed) {
          ++admitted_somewhere;
          break;
        }
    }
    // Every algorithm's traces ran, and admit, not only deny.
    EXPECT_GE(mine, 20u) << name_of(a);
    EXPECT_GE(admitted_somewhere, 10u) << name_of(a);
    traces += mine;
  }
  EXPECT_GE(traces, 300u);
  EXPECT_GE(decided, 3000u);
}

TEST(RedisModule, RepliesValuesAndTtlsEqualTheLuaLibrarys) {
  auto c = module_support::client_of(module_support::shared_server());
  module_support::twin tw(c);
  const char* exprs[] = {
      "gcra 10/1s burst=5",
      "token-bucket 3/1m burst=7",
      "gcra 1/1h burst=1",
      "gcra 4503599627370496/1ms burst=3",
      "token-bucket 7/13ms burst=1000000",
      "all(gcra 10/1s burst=5, token-bucket 100/1m burst=50)",
      "any(gcra 2/1s burst=2, all(gcra 5/1s burst=1, token-bucket 1/1s burst=3))",
      // Every other algorithm's leaf (their values, TTL formulas and
      // report saturations differ): alone and in trees.
      "fixed-window 10/1s",
      "fixed-window 4/700ms origin=123ms",
      "sliding-counter 6/1s",
      "sliding-log 5/1s",
      "sliding-buckets 8/1s buckets=4",
      "leaky-queue 10/1s queue=4",
      "leaky-queue 3/7ms queue=1000",
      "quota 40",
      "concurrency 3 lease=700ms",
      "all(fixed-window 10/1s, sliding-log 20/1m, quota 100)",
      "any(sliding-counter 2/1s, all(leaky-queue 5/1s queue=3, sliding-buckets 10/2s buckets=5))",
      "all(concurrency 4 lease=2s, gcra 10/1s burst=5)",
  };
  std::mt19937_64 g(42);
  for (std::size_t pi = 0; pi < std::size(exprs); ++pi) {
    const any_policy p = parse_policy(exprs[pi]).value();
    const redis::plan pl = redis::plan::make(p).value();
    std::vector<std::string> keys;
    for (const auto& leaf : pl.leaves()) keys.push_back("p" + std::to_string(pi) + leaf.suffix);
    tick now = 1'700'000'000'000'000'000;
    for (int step = 0; step < 60; ++step) {
      now += static_cast<tick>(g() % 400'000'000);                       // up to 0.4 s on
      if (g() % 10 == 0) now -= static_cast<tick>(g() % 1'000'000'000);  // the clock steps back
      const std::int64_t cost =
          g() % 8 == 0 ? static_cast<std::int64_t>(g() % 100) : 1 + static_cast<std::int64_t>(g() % 3);
      // The TTL's formula with ticks of 1 ns, 1 µs, 1 ms; a base (grace + 2
      // ms) of seconds, so no key expires while the two are compared.
      const std::int64_t tns = g() % 3 == 0 ? 1 : (g() % 2 == 0 ? 1000 : 1000000);
      const std::int64_t base = 5000 + static_cast<std::int64_t>(g() % 5);
      const int kind = static_cast<int>(g() % 6);
      const lease_scope lease(g());  // a concurrency leaf's lease takes this nonce
      std::string diff;
      if (pl.single() && kind < 2) {
        std::string blob = one_header(now, tns, base);
        pl.append_leaf(0, now, cost, blob);
        diff = tw.send("one", keys, {blob});
      } else if (kind == 2 || kind == 3) {
        const bool peek = kind == 3;
        std::string blob = tree_header(now, tns, base);
        pl.append_tree(now, cost, blob);
        diff = tw.send(peek ? "peek" : "decide", keys, {blob});
      } else if (kind == 4) {
        std::string blob = tree_header(now, tns, base);
        pl.append_tree(now, cost, blob, true);
        diff = tw.send("report", keys, {blob});
      } else {
        // With a request id (its record at the first key), and every
        // fourth one repeated or reused for another request.
        const std::string id = "id" + std::to_string(pi) + ":" + std::to_string(step - static_cast<int>(g() % 2));
        std::string blob = tree_header(now, tns, base, true, 60000);
        pl.append_tree(now, cost, blob);
        std::vector<std::string> ks{id};
        ks.insert(ks.end(), keys.begin(), keys.end());
        diff = tw.send("decide", ks, {blob, "identity-" + std::to_string(cost)});
      }
      ASSERT_EQ(diff, "") << exprs[pi] << " step " << step;
    }
  }
  // Override keys: a 'V' before the check (its key must hold the bytes
  // sent, else {6, ...}), and _one's second key.
  {
    const redis::plan pl = redis::plan::make(parse_policy("gcra 10/1s burst=2").value()).value();
    const tick now = 5'000'000'000;
    ASSERT_EQ(run(c, {"SET", "lua:ov", "x1"}), "+OK");
    ASSERT_EQ(run(c, {"SET", "mod:ov", "x1"}), "+OK");
    for (const std::string want : {"=x1", "=x2", "-"}) {
      std::string blob = one_header(now, 1, 3);
      pl.append_leaf(0, now, 1, blob);
      ASSERT_EQ(tw.send("one", {"ovs", "ov"}, {blob, want}), "");
    }
    for (const std::string bytes : {"x1", "x2"}) {
      std::string blob = tree_header(now, 1, 3);
      blob.push_back('V');
      redis::put_number(blob, static_cast<std::int64_t>(bytes.size()));
      blob += bytes;
      pl.append_tree(now, 1, blob);
      ASSERT_EQ(tw.send("decide", {"ov", "ovt"}, {blob}), "");
    }
  }
  // A value of another configuration ({3, value}), and a pipeline's batch
  // that stopped there ({4}).
  {
    const redis::plan a = redis::plan::make(parse_policy("gcra 10/1s burst=2").value()).value();
    const redis::plan b = redis::plan::make(parse_policy("gcra 10/1s burst=3").value()).value();
    std::string first = one_header(7'000'000'000, 1, 3);
    a.append_leaf(0, 7'000'000'000, 1, first);
    ASSERT_EQ(tw.send("one", {"cfg"}, {first}), "");
    std::string other = one_header(7'000'000'001, 1, 3, 77);
    b.append_leaf(0, 7'000'000'001, 1, other);
    ASSERT_EQ(tw.send("one", {"cfg"}, {other}), "");
    ASSERT_EQ(tw.send("one", {"cfg"}, {other}), "");  // batch 77 stopped: {4}
  }
  EXPECT_GE(tw.calls, 1000u);
  EXPECT_EQ(tw.errors, 0u);      // every call decided, none refused by both alike
  EXPECT_GE(tw.with_ttl, 300u);  // TTLs were compared, not only their absence
}

/// The wall clock in µs.
tick wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// The header of `_one` at the store's clock, in ticks of 1 µs (tns 1000),
/// `estimate` the client's estimate of it: th sent with 2^32 added.
std::string at_the_stores_clock(tick estimate) {
  std::string blob;
  std::int64_t h = 0, l = 0;
  redis::split_limbs(estimate, h, l);
  redis::put_number(blob, h + (std::int64_t{1} << 32));
  redis::put_number(blob, l);
  redis::put_number(blob, 1000);
  redis::put_number(blob, 3);
  redis::put_number(blob, 0);
  return blob;
}

// The store's clock: th sent with 2^32 added makes both read the server's
// time and end their reply with the instant used.
TEST(RedisModule, TheStoresClockIsTheServers) {
  auto c = module_support::client_of(module_support::shared_server());
  const redis::plan pl = redis::plan::make(parse_policy("gcra 1000/1s burst=1000").value()).value();
  const tick wall = wall_us();
  std::string blob = at_the_stores_clock(wall);  // the estimate is the wall clock in µs
  pl.append_leaf(0, wall, 1, blob);
  const std::string got = module_call(c, "one", {"clock:k"}, {blob});
  ASSERT_EQ(status_of(got), 1) << got;
  // [1 nil value h l]: the instant used is within a minute of this one.
  const auto last_space = got.rfind(' ');
  const auto before = got.rfind(' ', last_space - 1);
  const std::int64_t gh = std::atoll(got.c_str() + before + 1);
  const std::int64_t gl = std::atoll(got.c_str() + last_space + 1);
  const std::int64_t used = gh * (std::int64_t{1} << 32) + gl;
  EXPECT_LT(std::llabs(used - wall), 60'000'000) << got;
}

// The windowed leaves at the store's clock: the client splits its estimate
// into a window and an offset, the library moves the split by the
// estimate's error, and the module decides at the server's instant alike,
// whether the estimate is early or late (by less than a window, or by
// several); the written window is the server's.
TEST(RedisModule, WindowedLeavesAtTheStoresClockAreDecidedAtTheServersInstant) {
  auto c = module_support::client_of(module_support::shared_server());
  int n = 0;
  for (const char* expr :
       {"fixed-window 5/10s origin=3s", "sliding-counter 5/10s", "sliding-buckets 5/10s buckets=5"}) {
    const redis::plan pl = redis::plan::make(parse_policy(expr).value()).value();
    for (const std::int64_t off : {std::int64_t{-25'000'000}, std::int64_t{-700'000}, std::int64_t{0},
                                   std::int64_t{900'000}, std::int64_t{31'000'000}}) {
      const tick estimate = wall_us() + off;
      std::string blob = at_the_stores_clock(estimate);
      pl.append_leaf(0, estimate, 1, blob);
      const std::string key = "wclock:" + std::to_string(n++);
      for (const bool module : {false, true}) {
        const std::string got =
            module ? module_call(c, "one", {"m" + key}, {blob}) : fcall(c, "one", {"l" + key}, {blob});
        ASSERT_EQ(status_of(got), 1) << expr << " off " << off << (module ? " module: " : " library: ") << got;
      }
      // Both wrote the same window (the server's): the value's numbers
      // after the tag up to the offset (its limbs), unless a window
      // boundary fell between the two calls.
      const redis::reply lv = module_support::answer(c.call(std::vector<std::string_view>{"GET", "l" + key}));
      const redis::reply mv = module_support::answer(c.call(std::vector<std::string_view>{"GET", "m" + key}));
      ASSERT_GE(mv.str.size(), 9u + 16u);
      std::int64_t lk = 0, mk = 0, ll = 0, ml = 0;
      ASSERT_TRUE(redis::get_number(lv.str.data() + 9, lk) && redis::get_number(mv.str.data() + 9, mk));
      ASSERT_TRUE(redis::get_number(lv.str.data() + 17, ll) && redis::get_number(mv.str.data() + 17, ml));
      EXPECT_LE(std::llabs((mk * (std::int64_t{1} << 32) + ml) - (lk * (std::int64_t{1} << 32) + ll)), 1)
          << expr << " off " << off;
    }
  }
}

}  // namespace
}  // namespace sluice::redis_module_test::module_trace_test
