// The Redis store's refund by request id (store.hpp refund_at; semantics.md
// "Refunds"; docs/redis.md "Refunds"): the conformance traces with refunds
// decide field for field as the core with receipts; a refund happens once
// across a fleet (two stores on one server racing); the deny cache forgets
// a refunded key; a store that cannot reach its server refunds nothing and
// says error, and the retry after a lost reply answers already refunded.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "conformance/traces.hpp"
#include "redis/alternating_store.hpp"
#include "redis/conformance_draw.hpp"
#include "redis/store_support.hpp"
#include "sluice/core/policy_expr.hpp"
#include "support/redis_server.hpp"

namespace sluice::redis_test::redis_store_refund_test {
namespace {

any_policy policy(std::string_view text) { return parse_policy(text).value(); }

/// The Redis store's judge for traces with refunds: every refund's status
/// and units given back, and every decision's `allowed` and `remaining`,
/// as the core's (docs/redis.md, "Refunds": a state whose latest admit was
/// refunded is written as the library's values can hold it, which may move
/// a later `reset_after` or `retry_after`, never an admit). "" when alike.
std::string judge_refund_trace(store& s, const conformance::trace& t, const std::string& prefix,
                               std::size_t& exact_given) {
  auto [ids, err] = conformance::define_all(s, t, prefix);
  if (!err.empty()) return err;
  const auto got = conformance::run_on_store(s, t, ids, prefix);
  const auto want = conformance::expected_answers(t);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::string where =
        t.describe() + "\n  step " + std::to_string(i) + " (" + conformance::show(t.steps[i]) + "): ";
    if (want[i].refund) {
      if (got[i].refund != want[i].refund)
        return where + "refund " + std::string(got[i].refund ? name_of(*got[i].refund) : "none") + ", want " +
               std::string(name_of(*want[i].refund));
      // Never more than the core; less only where nothing changes (a log's
      // units already out of its window, which the library no longer holds).
      if (*want[i].refund == refund_status::refunded) {
        if (got[i].given.size() != want[i].given.size()) return where + "given back for another number of checks";
        for (std::size_t k = 0; k < want[i].given.size(); ++k)
          if (got[i].given[k] > want[i].given[k] || got[i].given[k] < 0)
            return where + "check " + std::to_string(k) + " given back " + std::to_string(got[i].given[k]) +
                   ", the core " + std::to_string(want[i].given[k]);
        ++exact_given;
        if (got[i].given != want[i].given) --exact_given;
      }
      continue;
    }
    if (want[i].d.from == source::error) {
      if (got[i].d.from != source::error) return where + "a bad request answered";
      continue;
    }
    if (got[i].d.d.allowed != want[i].d.d.allowed || got[i].d.d.remaining != want[i].d.d.remaining)
      return where + "got " + conformance::show(got[i].d.d) + ", want " + conformance::show(want[i].d.d);
  }
  return "";
}

/// Runs refund traces of `algo` through `s` (at least `most` - `most` / 6
/// of them, `most` at most) and checks each as the core.
void run_refund_traces(store& s, algorithm algo, std::size_t most) {
  conformance::trace_options to = redis_trace_options();
  to.refunds = 20;
  to.length = 24;
  // A refund can leave a state the library's values cannot hold as such
  // (its latest admit taken back); the store writes one that decides alike
  // for every request at or after the latest admit's instant (docs/redis.md,
  // "Refunds"), so these traces keep their clocks from stepping back:
  // RedisRefund.AClockBehindARefundedStateIsNeverAdmittedMore holds the rest.
  to.clock_back = false;
  std::size_t run = 0;
  std::size_t refunded = 0;
  std::size_t exact = 0;  // refunds whose units given back are the core's, check for check
  for (std::uint64_t seed = 1; run < most && seed < 5 * most; ++seed) {
    const auto t = conformance::make_trace(algo, seed, to);
    if (!in_range(t, false)) continue;
    ++run;
    ASSERT_EQ(judge_refund_trace(s, t, "f" + std::to_string(seed) + ":", exact), "");
    for (const auto& a : conformance::expected_answers(t))
      if (a.refund == refund_status::refunded) ++refunded;
  }
  EXPECT_GE(run, most - most / 6);
  EXPECT_GT(refunded, most * 5 / 12);
  EXPECT_GT(exact * 10, refunded * 9);  // the rare difference: a log's units past its window
}

/// The store met no failure and no mismatch.
void expect_no_failure(const redis_store& st) {
  EXPECT_EQ(st.redis_stats().mismatches, 0U);
  EXPECT_EQ(st.stats().store_failures, 0U);
}

class RedisRefundConformance : public ::testing::TestWithParam<std::tuple<algorithm, store_path>> {};

TEST_P(RedisRefundConformance, TracesWithRefundsDecideAsTheCore) {
  const auto [algo, path] = GetParam();
  store_options o;
  o.command_timeout = std::chrono::seconds(10);
  auto st = open_store(o, url_of(path));
  ASSERT_TRUE(st);
  auto raw = raw_client(server_of(path));
  const std::uint64_t refunds0 = calls_of(raw, "sluice.refund"), reads0 = calls_of(raw, "sluice.refund_read");
  // The module's path runs a third of the library's traces: what differs
  // between the paths is the calls' command, not the arithmetic.
  run_refund_traces(*st, algo, path == store_path::library ? 120 : 40);
  expect_no_failure(*st);
  if (path == store_path::module) {
    EXPECT_GT(calls_of(raw, "sluice.refund"), refunds0 + 15);
    EXPECT_GT(calls_of(raw, "sluice.refund_read"), reads0 + 15);
  } else {
    EXPECT_EQ(st->redis_stats().module_calls, 0U);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, RedisRefundConformance,
                         ::testing::Combine(::testing::ValuesIn(conformance::all_algorithms),
                                            ::testing::Values(store_path::library, store_path::module)),
                         algorithm_path_test_name);

/// Two stores of a fleet on one server, one on the module's path and one on
/// the library's, taking the calls of each trace in turn (decisions and
/// refunds of one key alternate between the paths): as the core.
class RedisRefundAlternatingPaths : public ::testing::TestWithParam<algorithm> {};

TEST_P(RedisRefundAlternatingPaths, TracesWithRefundsDecideAsTheCore) {
  alternating_store st;
  ASSERT_TRUE(st.ok());
  auto raw = raw_client(module_server());
  const std::uint64_t refunds0 = calls_of(raw, "sluice.refund");
  run_refund_traces(st, GetParam(), 24);
  expect_no_failure(st.on_module());
  expect_no_failure(st.on_library());
  st.expect_paths(100);
  EXPECT_GT(calls_of(raw, "sluice.refund"), refunds0 + 3);  // the module's store's refunds, by the module
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, RedisRefundAlternatingPaths, ::testing::ValuesIn(conformance::all_algorithms),
                         algorithm_test_name);

/// The refund's other cases, on each path (`_module`: every refund, its
/// reads and its compare-and-sets through the module's commands).
class RedisRefund : public ::testing::TestWithParam<store_path> {};

TEST_P(RedisRefund, TwoStoresOfAFleetRacingRefundOneIdOnce) {
  store_options o;
  o.key_prefix = fresh_prefix("fleet");
  auto a = open_store(o, url_of(GetParam()));
  auto b = open_store(o, url_of(GetParam()));
  ASSERT_TRUE(a && b);
  const policy_id qa = a->define("q", policy("quota 1000")).value();
  const policy_id qb = b->define("q", policy("quota 1000")).value();
  for (int round = 0; round < 20; ++round) {
    const std::string id = "r" + std::to_string(round);
    const check c{qa, "k", 5};
    ASSERT_TRUE(a->decide_at({.checks = {&c, 1}, .now = round, .cost = 1, .id = id}).d.allowed);
    std::atomic<int> refunded{0};
    std::atomic<int> already{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
      ts.emplace_back([&, t] {
        const refund_status s = (t % 2 == 0 ? *a : *b).refund_at(id, round).status;
        if (s == refund_status::refunded) refunded.fetch_add(1);
        if (s == refund_status::already_refunded) already.fetch_add(1);
      });
    for (auto& t : ts) t.join();
    EXPECT_EQ(refunded.load(), 1) << round;
    EXPECT_EQ(already.load(), 3) << round;
    // The id stays remembered: its retry replays, charging nothing.
    const check cb{qb, "k", 5};
    EXPECT_EQ(b->decide_at({.checks = {&cb, 1}, .now = round, .cost = 1, .id = id}).from, source::replayed);
  }
  const check c{qa, "k"};
  EXPECT_EQ(a->peek_at({.checks = {&c, 1}, .now = 30, .cost = 1, .id = {}}).d.remaining, 999);
}

TEST_P(RedisRefund, AnswersAsTheMemoryStoreForEachOutcome) {
  auto st = open_store({}, url_of(GetParam()));
  ASSERT_TRUE(st);
  const policy_id q = st->define("q", policy("quota 2")).value();
  const policy_id f = st->define("f", policy("all(fixed-window 3/1000ns, gcra 1/10ns burst=4)")).value();
  const check cs[] = {{q, "u", 2}, {f, "u", 3}};
  ASSERT_TRUE(st->decide_at({.checks = cs, .now = 0, .cost = 1, .id = "ok"}).d.allowed);
  ASSERT_FALSE(st->decide_at({.checks = cs, .now = 1, .cost = 1, .id = "no"}).d.allowed);
  EXPECT_EQ(st->refund_at("no", 2).status, refund_status::not_refundable);
  EXPECT_EQ(st->refund_at("never", 2).status, refund_status::unknown_id);
  decision pc[max_checks];
  std::int64_t given[max_checks] = {};
  const refund_answer r = st->refund_at("ok", 2, pc, given);
  ASSERT_EQ(r.status, refund_status::refunded);
  EXPECT_EQ(r.checks, 2U);
  EXPECT_EQ(given[0], 2);
  EXPECT_EQ(given[1], 3);
  EXPECT_EQ(pc[0].remaining, 2);  // the quota whole again (a report's figures, as the memory store's)
  EXPECT_EQ(st->refund_at("ok", 3).status, refund_status::already_refunded);
  // Refunded, the quota admits the denied request now.
  EXPECT_TRUE(st->decide_at({.checks = cs, .now = 4, .cost = 1, .id = {}}).d.allowed);
}

TEST_P(RedisRefund, ARefundClearsTheDenyCacheEntriesOfItsKeys) {
  store_options o;
  o.deny_cache = true;
  auto st = open_store(o, url_of(GetParam()));
  ASSERT_TRUE(st);
  const policy_id q = st->define("q", policy("fixed-window 1/1000000000ns")).value();
  const check c{q, "k"};
  ASSERT_TRUE(st->decide_at({.checks = {&c, 1}, .now = 10, .cost = 1, .id = "first"}).d.allowed);
  ASSERT_FALSE(st->decide_at({.checks = {&c, 1}, .now = 11, .cost = 1, .id = {}}).d.allowed);  // cached
  ASSERT_TRUE(cache_answers_denial(*st, {.checks = {&c, 1}, .now = 12, .cost = 1, .id = {}}));
  ASSERT_EQ(st->refund_at("first", 13).status, refund_status::refunded);
  const store_decision after = st->decide_at({.checks = {&c, 1}, .now = 14, .cost = 1, .id = {}});
  EXPECT_TRUE(after.d.allowed);
  EXPECT_EQ(after.from, source::store);
}

TEST_P(RedisRefund, AStoreThatCannotReachItsServerRefundsNothingARetryAfterALostReplyIsAlreadyRefunded) {
  testing::redis_server own(server_options_of(GetParam()));
  store_options o;
  o.key_prefix = fresh_prefix("lost");
  auto st = open_store(o, own.url() + query_of(GetParam()));
  ASSERT_TRUE(st);
  const policy_id q = st->define("q", policy("quota 3")).value();
  const check c{q, "k"};
  ASSERT_TRUE(st->decide_at({.checks = {&c, 1}, .now = 0, .cost = 1, .id = "x"}).d.allowed);
  // Another process of the fleet refunds it; this one's reply was "lost":
  // its retry must not give back twice.
  auto other = open_store(o, own.url() + query_of(GetParam()));
  ASSERT_TRUE(other);
  (void)other->define("q", policy("quota 3"));
  ASSERT_EQ(other->refund_at("x", 1).status, refund_status::refunded);
  EXPECT_EQ(st->refund_at("x", 2).status, refund_status::already_refunded);
  ASSERT_TRUE(st->decide_at({.checks = {&c, 1}, .now = 3, .cost = 1, .id = "y"}).d.allowed);
  own.kill9();
  const std::uint64_t failures = st->stats().store_failures;
  EXPECT_EQ(st->refund_at("y", 4).status, refund_status::error);
  EXPECT_GT(st->stats().store_failures, failures);
}

INSTANTIATE_TEST_SUITE_P(EachPath, RedisRefund, ::testing::Values(store_path::library, store_path::module),
                         path_test_name);

}  // namespace
}  // namespace sluice::redis_test::redis_store_refund_test
