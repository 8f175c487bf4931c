// The memory store's refund by request id (store.hpp refund_at;
// semantics.md, "Refunds"): what the id's admit took comes back once, by
// each check's policy's rule; the id stays remembered; denials, peeks,
// unknown and expired ids refund nothing; a redefined check gets nothing;
// racing refunds of one id refund it exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "sluice/core/policy_expr.hpp"
#include "sluice/keyed/memory.hpp"

#include "keyed/memory_store_support.hpp"

namespace sluice::keyed_memory_store_refund_test {
namespace {

using memory_store_support::policy;

store_decision with_id(memory_store& s, std::span<const check> cs, std::string_view id, tick now,
                       std::int64_t cost = 1) {
  return s.decide_at({.checks = cs, .now = now, .cost = cost, .id = id});
}

TEST(MemoryStoreRefund, GivesBackWhatTheAdmitTookOnEveryCheckOnce) {
  memory_store s;
  const policy_id q = s.define("q", policy("quota 10")).value();
  const policy_id fw = s.define("fw", policy("fixed-window 5/100ns")).value();
  const check cs[] = {{q, "u", 4}, {fw, "u", 2}};
  ASSERT_TRUE(with_id(s, cs, "r1", 0).d.allowed);
  decision pc[max_checks];
  std::int64_t given[max_checks] = {};
  const refund_answer a = s.refund_at("r1", 5, pc, given);
  ASSERT_EQ(a.status, refund_status::refunded);
  ASSERT_EQ(a.checks, 2U);
  EXPECT_EQ(given[0], 4);
  EXPECT_EQ(given[1], 2);
  // The figures after the refund, a report's (allowed, cost 1 at now): the
  // quota and the window are whole again.
  EXPECT_TRUE(pc[0].allowed);
  EXPECT_EQ(pc[0].remaining, 10);
  EXPECT_EQ(pc[1].remaining, 5);
  EXPECT_EQ(a.d.remaining, 5);
  EXPECT_TRUE(a.d.allowed);
  // Once: a second refund gives nothing.
  EXPECT_EQ(s.refund_at("r1", 6).status, refund_status::already_refunded);
  const check just_q{q, "u"};
  // (a peek's remaining is what is left after it: 10 − 1)
  EXPECT_EQ(s.peek_at({.checks = {&just_q, 1}, .now = 7, .cost = 1, .id = {}}).d.remaining, 9);
}

TEST(MemoryStoreRefund, TheIdStaysRememberedARepeatReplaysAndChargesNothing) {
  memory_store s;
  const policy_id q = s.define("q", policy("quota 3")).value();
  const check c{q, "k"};
  const store_decision first = with_id(s, {&c, 1}, "r", 0);
  ASSERT_TRUE(first.d.allowed);
  ASSERT_EQ(s.refund_at("r", 1).status, refund_status::refunded);
  const store_decision again = with_id(s, {&c, 1}, "r", 2);
  EXPECT_EQ(again.from, source::replayed);
  EXPECT_EQ(again.d, first.d);
  EXPECT_EQ(s.peek_at({.checks = {&c, 1}, .now = 3, .cost = 1, .id = {}}).d.remaining,
            2);  // 3 − the peek's 1: not charged again
  const check other{q, "other"};
  EXPECT_EQ(with_id(s, {&other, 1}, "r", 4).from, source::id_conflict);
}

TEST(MemoryStoreRefund, DenialsPeeksUnknownAndExpiredIdsRefundNothing) {
  memory_store_options o;
  o.idempotency_window = 100;
  memory_store s(o);
  const policy_id q = s.define("q", policy("quota 1")).value();
  const check c{q, "k"};
  ASSERT_TRUE(with_id(s, {&c, 1}, "a", 0).d.allowed);
  ASSERT_FALSE(with_id(s, {&c, 1}, "denied", 1).d.allowed);
  EXPECT_EQ(s.refund_at("denied", 2).status, refund_status::not_refundable);
  (void)s.peek_at({.checks = {&c, 1}, .now = 3, .cost = 1, .id = "peeked"});
  EXPECT_EQ(s.refund_at("peeked", 4).status, refund_status::unknown_id);
  EXPECT_EQ(s.refund_at("never", 4).status, refund_status::unknown_id);
  EXPECT_EQ(s.refund_at("a", 100).status, refund_status::unknown_id);  // past its window
  EXPECT_FALSE(with_id(s, {&c, 1}, "b", 101).d.allowed);               // and nothing came back
  const refund_answer none = s.refund_at("never", 4);
  EXPECT_FALSE(none.d.allowed);
  EXPECT_EQ(none.d.retry_after, never);
  EXPECT_EQ(none.checks, 0U);
}

TEST(MemoryStoreRefund, ABoundsModeAnswerTookNothingToRefund) {
  memory_store_options o;
  o.max_keys = 1;
  o.on_full = failure_mode::fail_open;
  memory_store s(o);
  const policy_id q = s.define("q", policy("quota 5")).value();
  const check a{q, "a"};
  const check b{q, "b"};
  ASSERT_EQ(with_id(s, {&a, 1}, "in", 0).from, source::store);
  ASSERT_EQ(with_id(s, {&b, 1}, "full", 1).from, source::fail_open);
  EXPECT_EQ(s.refund_at("full", 2).status, refund_status::not_refundable);
}

TEST(MemoryStoreRefund, ACheckWhosePolicyWasRedefinedGetsNothingTheOthersAreRefunded) {
  memory_store s;
  const policy_id q = s.define("q", policy("quota 10")).value();
  const policy_id f = s.define("f", policy("fixed-window 4/1000ns")).value();
  const check cs[] = {{q, "u", 3}, {f, "u", 2}};
  ASSERT_TRUE(with_id(s, cs, "r", 0).d.allowed);
  ASSERT_TRUE(s.define_at("q", policy("quota 20"), 1).ok());
  std::int64_t given[max_checks] = {-1, -1};
  const refund_answer a = s.refund_at("r", 2, {}, given);
  ASSERT_EQ(a.status, refund_status::refunded);
  EXPECT_EQ(given[0], 0);  // the receipt carries quota 10's parameters
  EXPECT_EQ(given[1], 2);
  const check just_q{q, "u"};
  EXPECT_EQ(s.peek_at({.checks = {&just_q, 1}, .now = 3, .cost = 1, .id = {}}).d.remaining,
            16);  // 20 − 3 − the peek's 1
  // Defining the same policy again changes nothing: a refund still works.
  const check c{f, "v"};
  ASSERT_TRUE(with_id(s, {&c, 1}, "r2", 3).d.allowed);
  ASSERT_TRUE(s.define_at("f", policy("fixed-window 4/1000ns"), 4).ok());
  std::int64_t g2[max_checks] = {};
  EXPECT_EQ(s.refund_at("r2", 5, {}, g2).status, refund_status::refunded);
  EXPECT_EQ(g2[0], 1);
}

TEST(MemoryStoreRefund, AGcraRefundedToAFullBucketDecidesAsTheCore) {
  // A compact (lock-free) GCRA cell refunded to before the admit of a full
  // bucket: the next burst is whole again.
  memory_store s;
  const policy_id g = s.define("g", policy("gcra 1/10ns burst=3")).value();
  const check c{g, "k"};
  ASSERT_TRUE(with_id(s, {&c, 1}, "r", 100, 3).d.allowed);
  std::int64_t given[1] = {};
  ASSERT_EQ(s.refund_at("r", 100, {}, given).status, refund_status::refunded);
  EXPECT_EQ(given[0], 3);
  EXPECT_TRUE(s.decide_at({.checks = {&c, 1}, .now = 100, .cost = 3, .id = {}}).d.allowed);
  EXPECT_FALSE(s.decide_at({.checks = {&c, 1}, .now = 100, .cost = 1, .id = {}}).d.allowed);
}

TEST(MemoryStoreRefund, RacingRefundsOfOneIdRefundItExactlyOnce) {
  memory_store s;
  const policy_id q = s.define("q", policy("quota 1000")).value();
  const check c{q, "k"};
  for (int round = 0; round < 50; ++round) {
    const std::string id = "r" + std::to_string(round);
    ASSERT_TRUE(with_id(s, {&c, 1}, id, round, 7).d.allowed);
    std::atomic<int> refunded{0};
    std::atomic<int> already{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
      ts.emplace_back([&] {
        const refund_status st = s.refund_at(id, round).status;
        (st == refund_status::refunded ? refunded : already).fetch_add(1);
        // A retry of the decision racing the refund replays it, never charges.
        EXPECT_EQ(with_id(s, {&c, 1}, id, round, 7).from, source::replayed);
      });
    for (auto& t : ts) t.join();
    EXPECT_EQ(refunded.load(), 1);
    EXPECT_EQ(already.load(), 3);
  }
  EXPECT_EQ(s.peek_at({.checks = {&c, 1}, .now = 60, .cost = 1, .id = {}}).d.remaining,
            999);  // whole again, less the peek's 1
}

}  // namespace
}  // namespace sluice::keyed_memory_store_refund_test
