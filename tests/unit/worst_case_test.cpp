// worst_case() for every algorithm and composite: figures worked out by hand
// (docs/worst-case.md), the edges (no window, a grid below one tick,
// saturation), hour-long windows in nanoseconds, and the bound the search
// settles for when it runs out of work.
#include "sluice/core/worst_case.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "sluice/core/policy_expr.hpp"

namespace sluice::unit_worst_case_test {
namespace {

constexpr tick s = 1'000'000'000;
constexpr std::int64_t two62 = std::int64_t{1} << 62;

any_policy expr(const std::string& text) {
  auto p = parse_policy(text);
  EXPECT_TRUE(p.ok()) << text;
  return p.ok() ? *p : any_policy{always_deny{}};
}

worst_case_bound exact(std::int64_t v) { return {v, true}; }

TEST(WorstCase, QuotaAndTheAlways) {
  const auto q = *quota::make(100);
  EXPECT_EQ(worst_case(q, 1, 1), 100);
  EXPECT_EQ(worst_case(q, 3600 * s, 1), 100);
  EXPECT_EQ(worst_case(q, 0, 1), 0);
  EXPECT_EQ(worst_case(*quota::make(0), 10, 1), 0);
  EXPECT_EQ(worst_case(always_allow{}, 1, 1), never);  // no bound: saturated
  EXPECT_EQ(worst_case(always_allow{}, 0, 1), 0);
  EXPECT_EQ(worst_case(always_deny{}, 3600 * s, 1), 0);
  EXPECT_EQ(worst_case(expr("always-allow"), 5, 1), exact(never));
}

TEST(WorstCase, LeakyQueueTakesItsQueueThenOneEveryWOverL) {
  // The chapter's queue: 2/1s, Q = 15. 20 at once get 15 in; in any second
  // 15 + the 2 that leave meanwhile (one at 0.5 s, one just before 1 s).
  const auto lq = *leaky_queue::make({2, s}, 15);
  EXPECT_EQ(worst_case(lq, 1, 1), 15);
  EXPECT_EQ(worst_case(lq, s, 1), 17);
  EXPECT_EQ(worst_case(lq, s + 1, 1), 17);  // the third leaves at 1 s, the window's last tick
  EXPECT_EQ(worst_case(lq, 60 * s, 1), 15 + 120);
  // A grid so coarse the queue runs dry between points: Q at every point.
  EXPECT_EQ(worst_case(*leaky_queue::make({1, s}, 2), 10 * s, 5 * s), 4);
  EXPECT_EQ(worst_case(*leaky_queue::make({0, s}, 3), 10 * s, 1), 0);
  EXPECT_EQ(worst_case(*leaky_queue::make({two62, 1}, two62), never, 1), never);  // saturates
}

TEST(WorstCase, SlidingCounterStartsOnTheLastTickOfAWindow) {
  // 10 at the window's last tick; then the previous window's weight fades:
  // 9 more by the second window's tick W − 2 (10·(W − 2)/W), so 19 in W.
  const auto sc = *sliding_counter::make({10, 60 * s});
  EXPECT_EQ(worst_case(sc, 60 * s, 1), exact(19));
  EXPECT_EQ(worst_case(sc, 60 * s, s), exact(19));
  EXPECT_EQ(worst_case(sc, 1, 1), exact(10));
  EXPECT_EQ(worst_case(sc, 2, 1), exact(10));  // the next window's first tick still weighs all 10
  EXPECT_EQ(worst_case(sc, 3600 * s, 1).exact, true);
  EXPECT_EQ(worst_case(*sliding_counter::make({0, s}), s, 1), exact(0));
}

TEST(WorstCase, SlidingBucketsCountsRunsNSubWindowsApart) {
  // 5/10s in 5 buckets of 2 s: 5 at the end of one bucket, 5 more once it
  // has left, 10 s − 2 s later... within 10 s: 10.
  const auto sb = *sliding_buckets::make({5, 10 * s}, 5);
  EXPECT_EQ(worst_case(sb, 10 * s, 1), exact(10));
  EXPECT_EQ(worst_case(sb, 8 * s, 1), exact(5));
  EXPECT_EQ(worst_case(sb, 8 * s + 2, 1), exact(10));
  EXPECT_EQ(worst_case(sb, 3600 * s, 1), exact(5 * (1 + 1800 / 5)));
  // A grid coarser than a bucket: searched, still exact.
  EXPECT_EQ(worst_case(*sliding_buckets::make({1, 6}, 3), 20, 5), exact(3));
}

TEST(WorstCase, CompositesFromTheIssue) {
  // 1000 in the last 99.5 s of one hour-window (the bucket's 5 and then one
  // every 0.1 s), 1000 more in the next: 2000 in one hour.
  EXPECT_EQ(worst_case(expr("all(token-bucket 10/1s burst=5, fixed-window 1000/1h)"), 3600 * s, 1), exact(2000));
  // The quota's 100 at once, and the GCRA's one per second beside it.
  EXPECT_EQ(worst_case(expr("any(quota 100, gcra 1/1s)"), 60 * s, 1), exact(160));
  EXPECT_EQ(worst_case(expr("any(quota 100, gcra 1/1s)"), 60 * s, s), exact(160));
  EXPECT_EQ(worst_case(expr("all(quota 100, gcra 1/1s)"), 60 * s, 1), exact(60));
  // all_of never exceeds its tightest part, any_of never its parts' sum.
  EXPECT_EQ(worst_case(expr("all(always-allow, sliding-log 3/1s)"), s, 1), exact(3));
  EXPECT_EQ(worst_case(expr("any(always-deny, sliding-log 3/1s)"), s, 1), exact(3));
  EXPECT_EQ(worst_case(expr("any(always-allow, quota 1)"), s, 1), exact(never));
  EXPECT_EQ(worst_case(expr("any(quota 4611686018427387904, quota 4611686018427387904)"), s, 1), exact(never));
}

TEST(WorstCase, EdgesOfTheWindowAndTheGrid) {
  const auto p = expr("all(sliding-counter 3/10ns, quota 5)");
  EXPECT_EQ(worst_case(p, 0, 1), exact(0));
  EXPECT_EQ(worst_case(p, -5, 1), exact(0));
  EXPECT_EQ(worst_case(p, 10, 0), worst_case(p, 10, 1));  // a grid below one tick is read as 1
  EXPECT_EQ(worst_case(p, 10, -7), worst_case(p, 10, 1));
  const worst_case_report r = worst_case_witness(p, 0, 1);
  EXPECT_EQ(r.value, 0);
  EXPECT_TRUE(r.witness.empty());
}

TEST(WorstCase, AnHourInNanosecondsIsQuickForEveryAlgorithm) {
  for (const char* text :
       {"fixed-window 1000/1h", "sliding-log 1000/1h", "sliding-counter 1000/1h", "sliding-buckets 1000/1h buckets=60",
        "token-bucket 1000/1h burst=10", "gcra 10/1s", "leaky-queue 1000/1h queue=50", "quota 1000",
        "sliding-counter 10000000/1s", "all(token-bucket 10/1s burst=5, fixed-window 1000/1h)",
        "any(sliding-counter 100/1m, leaky-queue 1/1s queue=3)",
        "all(sliding-counter 100/1m, sliding-buckets 60/1m buckets=6, fixed-window 200/90s)"}) {
    SCOPED_TRACE(text);
    const worst_case_report r = worst_case_witness(expr(text), 3600 * s, 1);
    EXPECT_TRUE(r.exact);
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.reached, r.value);
  }
}

TEST(WorstCase, OutOfWorkTheAnswerIsABoundAndSaysSo) {
  // One per tick-long window: its greedy trace admits every other tick, 1.8
  // trillion steps over an hour. The search gives up: the fixed window's
  // count (one per window touched) is the bound.
  // (Smaller limits than the default, to keep the test quick: the same
  // happens with the default limits, only later.)
  worst_case_limits small;
  small.max_steps = 1 << 14;
  const worst_case_report r = worst_case_witness(expr("sliding-counter 1/1ns"), 3600 * s, 1, small);
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.value, 3600 * s);
  EXPECT_FALSE(r.complete);
  EXPECT_LE(r.reached, r.value);
  // A tiny budget: a bound, with a witness that reaches what it can.
  worst_case_limits tiny;
  tiny.max_steps = 3;
  const worst_case_report t = worst_case_witness(expr("all(sliding-log 1/1s, sliding-counter 5/3s)"), 10 * s, s, tiny);
  EXPECT_FALSE(t.exact);
  EXPECT_GE(t.value, t.reached);
}

TEST(WorstCase, WitnessesAreTracesThatReachTheNumber) {
  {
    const worst_case_report r = worst_case_witness(expr("token-bucket 2/1s burst=3"), s, 1);
    EXPECT_EQ(r.value, 4);
    EXPECT_EQ(r.start, 0);
    EXPECT_EQ(r.witness, (std::vector<witness_point>{{0, 3}, {s / 2, 1}}));
  }
  {
    // A fixed window: its last tick, then the next window's first.
    const worst_case_report r = worst_case_witness(expr("fixed-window 10/1m"), 60 * s, 1);
    EXPECT_EQ(r.value, 20);
    EXPECT_EQ(r.start, -1);
    EXPECT_EQ(r.witness, (std::vector<witness_point>{{-1, 10}, {0, 10}}));
  }
  {
    const worst_case_report r = worst_case_witness(expr("sliding-counter 10/1m"), 60 * s, 1);
    EXPECT_EQ(r.value, 19);
    EXPECT_EQ(r.reached, 19);
    ASSERT_FALSE(r.witness.empty());
    EXPECT_EQ(r.witness.front(), (witness_point{r.start, 10}));
  }
}

}  // namespace
}  // namespace sluice::unit_worst_case_test
