// Reports (semantics.md, "Reports"): charged whatever the limit says, the
// debt cleared exactly when the contract says, a report that fits changes
// the state as an admit, and every bound saturates.
#include "sluice/core/report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sluice/sluice.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_report_test {
namespace {

/// A spec of `a` with L per W, its other fields set afterwards.
spec spec_of(algorithm a, std::int64_t l, tick w) {
  spec s;
  s.algo = a;
  s.limit = rate{l, w};
  return s;
}
spec with(spec s, std::optional<std::int64_t> spec::*field, std::int64_t v) {
  s.*field = v;
  return s;
}

std::vector<any_policy> every_policy() {
  std::vector<any_policy> out;
  const auto add = [&](result<any_policy> p) { out.push_back(test::ok(std::move(p))); };
  add(make_policy(spec_of(algorithm::fixed_window, 5, 10)));
  add(make_policy(spec_of(algorithm::sliding_log, 5, 10)));
  add(make_policy(spec_of(algorithm::sliding_counter, 5, 10)));
  add(make_policy(with(spec_of(algorithm::sliding_buckets, 5, 10), &spec::buckets, 5)));
  add(make_policy(with(spec_of(algorithm::token_bucket, 3, 7), &spec::burst, 4)));
  add(make_policy(with(spec_of(algorithm::gcra, 3, 7), &spec::burst, 4)));
  add(make_policy(with(spec_of(algorithm::leaky_queue, 2, 6), &spec::queue, 4)));
  add(make_policy(with(spec_of(algorithm::quota, 0, 1), &spec::units, 9)));
  add(any_policy{always_allow{}});
  add(any_policy{always_deny{}});
  auto all = all_of::make({out[0], out[5]});
  out.push_back(any_policy{test::ok(std::move(all))});
  auto any = any_of::make({out[1], out[4], out[6]});
  out.push_back(any_policy{test::ok(std::move(any))});
  return out;
}

/// The first instant from `now` at which a request of cost 1 is admitted on
/// `s` (read only), by asking decide() tick by tick: the definition.
tick first_admit(const any_policy& p, const any_state& s, tick now, tick horizon) {
  for (tick t = now; t <= now + horizon; ++t) {
    any_state copy = s;
    if (decide(p, copy, t, 1).allowed) return t;
  }
  return never;
}

TEST(Report, GcraDebtClearsExactlyWhenItIsPaid) {
  // 1 unit per tick (L = 10 per W = 10), burst 10. A report of 30 at 0:
  // the bucket is 20 units past empty, so a unit is admitted at t = 21.
  const auto p = test::ok(make_policy(with(spec_of(algorithm::gcra, 10, 10), &spec::burst, 10)));
  any_state s = fresh_state(p);
  const decision r = report(p, s, 0, 30);
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.remaining, 0);
  EXPECT_EQ(r.retry_after, 21);
  EXPECT_EQ(r.reset_after, 30);
  any_state early = s;
  EXPECT_FALSE(decide(p, early, 20, 1).allowed);
  EXPECT_TRUE(decide(p, s, 21, 1).allowed);
}

TEST(Report, TokenBucketAndGcraStillDecideAlike) {
  const auto tb = test::ok(make_policy(with(spec_of(algorithm::token_bucket, 3, 7), &spec::burst, 4)));
  const auto g = test::ok(make_policy(with(spec_of(algorithm::gcra, 3, 7), &spec::burst, 4)));
  any_state a = fresh_state(tb);
  any_state b = fresh_state(g);
  std::mt19937_64 rng(7);
  tick now = 0;
  for (int i = 0; i < 2000; ++i) {
    now += static_cast<tick>(rng() % 9);
    const auto cost = static_cast<std::int64_t>(rng() % 12 + 1);
    if (rng() % 3 == 0) {
      EXPECT_EQ(report(tb, a, now, cost), report(g, b, now, cost)) << i;
    } else {
      EXPECT_EQ(decide(tb, a, now, cost), decide(g, b, now, cost)) << i;
    }
  }
}

TEST(Report, RetryAfterIsTheFirstAdmitOfCostOneForEveryAlgorithm) {
  std::mt19937_64 rng(19);
  for (const any_policy& p : every_policy()) {
    any_state s = fresh_state(p);
    tick now = 0;
    for (int i = 0; i < 400; ++i) {
      now += static_cast<tick>(rng() % 6);
      const auto cost = static_cast<std::int64_t>(rng() % 14 + 1);
      if (rng() % 2 == 0) {
        const decision r = report(p, s, now, cost);
        ASSERT_TRUE(r.allowed);
        const auto admits = [&](tick t) {
          any_state copy = s;
          return decide(p, copy, t, 1).allowed;
        };
        if (r.retry_after == never) {
          EXPECT_FALSE(admits(now + 100000)) << name_of(algorithm_of(p)) << " step " << i;
        } else {
          EXPECT_TRUE(admits(now + r.retry_after)) << name_of(algorithm_of(p)) << " step " << i;
          const tick scan = std::min<tick>(r.retry_after, 64);
          EXPECT_EQ(first_admit(p, s, now, scan), scan == r.retry_after ? now + r.retry_after : never)
              << name_of(algorithm_of(p)) << " step " << i;
          if (r.retry_after > 0) {
            EXPECT_FALSE(admits(now + r.retry_after - 1)) << name_of(algorithm_of(p));
          }
        }
        // remaining is the largest cost admitted now.
        any_state copy = s;
        if (r.remaining > 0 && r.remaining < detail::i64_max) {
          EXPECT_TRUE(decide(p, copy, now, r.remaining).allowed) << name_of(algorithm_of(p)) << " step " << i;
        }
        copy = s;
        if (r.remaining < detail::i64_max && algorithm_of(p) != algorithm::always_deny) {
          const decision over = decide(p, copy, now, r.remaining + 1);
          EXPECT_FALSE(over.allowed) << name_of(algorithm_of(p)) << " step " << i;
        }
      } else {
        (void)decide(p, s, now, cost);
      }
    }
  }
}

TEST(Report, TheAnswerIsTheFiguresOfTheChargedState) {
  // The answer's figures are read on the state after the charge
  // (semantics.md, "Reports"): whichever path computes them — a decision
  // with room left, a state charged to its last unit, a debt — they equal
  // report_figures on the charged state, `part` included, for every
  // algorithm and for composites of composites.
  std::vector<any_policy> policies = every_policy();
  const std::size_t n = policies.size();
  policies.push_back(any_policy{test::ok(all_of::make({policies[0], policies[2], policies[5]}))});
  policies.push_back(any_policy{test::ok(all_of::make({policies[n - 1], policies[4]}))});
  policies.push_back(any_policy{test::ok(all_of::make({policies[n - 2], policies[1], policies[8]}))});
  std::mt19937_64 rng(29);
  for (const any_policy& p : policies) {
    any_state s = fresh_state(p);
    tick now = 0;
    int full = 0;
    for (int i = 0; i < 2000; ++i) {
      now += static_cast<tick>(rng() % 4);
      const auto cost = static_cast<std::int64_t>(rng() % 5 + 1);
      if (rng() % 3 == 0) {
        const decision r = report(p, s, now, cost);
        EXPECT_EQ(r, report_figures(p, s, now)) << name_of(algorithm_of(p)) << " step " << i;
        full += r.remaining == 0 ? 1 : 0;
      } else {
        (void)decide(p, s, now, cost);
      }
    }
    if (algorithm_of(p) != algorithm::always_allow) {
      EXPECT_GT(full, 0) << name_of(algorithm_of(p));
    }
  }
}

TEST(Report, AReportThatFitsChangesTheStateAsAnAdmit) {
  std::mt19937_64 rng(23);
  for (const any_policy& p : every_policy()) {
    any_state a = fresh_state(p);
    any_state b = fresh_state(p);
    tick now = 0;
    for (int i = 0; i < 400; ++i) {
      now += static_cast<tick>(rng() % 4);
      const auto cost = static_cast<std::int64_t>(rng() % 6 + 1);
      any_state probe = a;
      if (decide(p, probe, now, cost).allowed) {
        (void)report(p, a, now, cost);
        (void)decide(p, b, now, cost);
      } else {
        (void)decide(p, a, now, cost);
        (void)decide(p, b, now, cost);
      }
      ASSERT_TRUE(a == b) << name_of(algorithm_of(p)) << " step " << i;
    }
  }
}

TEST(Report, NeverDeniesAndChargesPastTheLimit) {
  const auto p = test::ok(make_policy(spec_of(algorithm::fixed_window, 5, 10)));
  any_state s = fresh_state(p);
  const decision r = report(p, s, 3, 50);  // above the capacity: a debt
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.remaining, 0);
  EXPECT_EQ(r.retry_after, 7);  // the next window
  EXPECT_EQ(r.reset_after, 7);
  EXPECT_FALSE(decide(p, s, 9, 1).allowed);
  EXPECT_TRUE(decide(p, s, 10, 5).allowed);
}

TEST(Report, ACostBelowOneChargesNothing) {
  for (const any_policy& p : every_policy()) {
    any_state s = fresh_state(p);
    (void)decide(p, s, 0, 1);
    const any_state before = s;
    const decision r = report(p, s, 1, 0);
    EXPECT_FALSE(r.allowed);
    EXPECT_TRUE(s == before) << name_of(algorithm_of(p));
    (void)report(p, s, 1, -5);
    EXPECT_TRUE(s == before) << name_of(algorithm_of(p));
  }
}

TEST(Report, TheLargestCostsSaturateWithoutOverflow) {
  for (const any_policy& p : every_policy()) {
    any_state s = fresh_state(p);
    for (int i = 0; i < 3; ++i) {
      const decision r = report(p, s, detail::i64_max - 5 + i, detail::i64_max);
      EXPECT_TRUE(r.allowed);
      EXPECT_GE(r.remaining, 0);
      EXPECT_GE(r.retry_after, 0);
      EXPECT_GE(r.reset_after, 0);
    }
  }
  // GCRA's debt saturates at 2^52 ticks.
  const auto g = test::ok(make_policy(with(spec_of(algorithm::gcra, 1, 1), &spec::burst, 1)));
  any_state s = fresh_state(g);
  const decision r = report(g, s, 0, detail::i64_max);
  EXPECT_EQ(r.retry_after, (tick{1} << 52) - 1);  // u − e·L ≤ 2^52·L − 1
  any_state copy = s;
  EXPECT_FALSE(decide(g, copy, (tick{1} << 52) - 2, 1).allowed);
  EXPECT_TRUE(decide(g, s, (tick{1} << 52) - 1, 1).allowed);
}

TEST(Report, ALogOrARingAtTheLargestLimitNeverSumsPast2LMinus1) {
  // L = 2^62: a log or ring holding 2L − 1 that takes L more would sum to
  // 3L − 1 > 2^63 before dropping what the newest units make irrelevant.
  const std::int64_t big = std::int64_t{1} << 62;
  for (const any_policy& p :
       {test::ok(make_policy(spec_of(algorithm::sliding_log, big, 100))),
        test::ok(make_policy(with(spec_of(algorithm::sliding_buckets, big, 100), &spec::buckets, 10)))}) {
    any_state s = fresh_state(p);
    (void)report(p, s, 0, big);                            // the oldest: L
    (void)report(p, s, 20, big - 1);                       // after it: L − 1
    const decision r = report(p, s, 40, detail::i64_max);  // L more: the first two are irrelevant
    EXPECT_TRUE(r.allowed);
    EXPECT_EQ(r.remaining, 0);
    EXPECT_EQ(r.retry_after, 100) << name_of(algorithm_of(p));  // the last units leave at 140
    any_state copy = s;
    EXPECT_FALSE(decide(p, copy, 139, 1).allowed);
    EXPECT_TRUE(decide(p, s, 140, 1).allowed);
  }
}

TEST(Report, ASlidingLogKeepsAtMostLEntries) {
  const auto p = test::ok(make_policy(spec_of(algorithm::sliding_log, 5, 100)));
  any_state s = fresh_state(p);
  for (tick t = 0; t < 60; ++t) (void)report(p, s, t, 1 + t % 3);
  const auto& log = std::get<sliding_log::state>(s);
  EXPECT_LE(log.size(), 5U);
  EXPECT_LE(log.units(), 9);
  // The debt clears when the entries have left: every entry is after t = 0.
  const decision r = report_figures(p, s, 59);
  EXPECT_EQ(first_admit(p, s, 59, 200), 59 + r.retry_after);
}

TEST(Report, AnyOfChargesTheFirstPartWhenNoneAdmits) {
  const auto a = test::ok(make_policy(spec_of(algorithm::fixed_window, 2, 10)));
  const auto b = test::ok(make_policy(spec_of(algorithm::fixed_window, 3, 10)));
  const auto p = any_policy{test::ok(any_of::make({a, b}))};
  any_state s = fresh_state(p);
  (void)report(p, s, 0, 3);  // a denies, b admits: b pays, as decide would
  const auto& parts = std::get<any_of_state>(s).parts;
  EXPECT_EQ(std::get<fixed_window::state>(parts[0]).count, 0);
  EXPECT_EQ(std::get<fixed_window::state>(parts[1]).count, 3);
  (void)report(p, s, 1, 9);  // neither admits: the first part pays
  EXPECT_EQ(std::get<fixed_window::state>(parts[0]).count, 2);
  EXPECT_EQ(std::get<fixed_window::state>(parts[1]).count, 3);
}

TEST(Report, ALimiterReportsBesideTryAcquire) {
  const auto p = test::ok(gcra::make(rate{10, 10}, 10));
  manual_clock clock;
  limiter<gcra, manual_clock> l(p, clock);
  const decision r = l.report(30);
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.retry_after, 21);
  clock.advance(20);
  EXPECT_FALSE(l.try_acquire().allowed);
  clock.advance(1);
  EXPECT_TRUE(l.try_acquire().allowed);
}

TEST(Report, ALiveLimiterChargesAReportBehindItsReservations) {
  const auto p = test::ok(gcra::make(rate{1, 1}, 1));
  live_limiter<gcra> l(p);
  EXPECT_TRUE(l.try_acquire_at(0).allowed);
  reservation r = l.reserve_at(0, 1);  // the slot at 1
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.at(), 1);
  const decision d = l.report_at(0, 3);  // charged at 1, behind the reservation
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.retry_after, 5);  // units at 1 (reserved), 2, 3, 4 (reported): free at 5
  EXPECT_EQ(l.next_allowed_at(0), 5);
  EXPECT_FALSE(l.try_acquire_at(4).allowed);
  EXPECT_TRUE(l.try_acquire_at(5).allowed);
}

}  // namespace
}  // namespace sluice::unit_report_test
