// The worst case of every algorithm and composite against exhaustive search
// over all traces on small parameters, and every witness replayed through
// the real limiter. Then the search against a naive model (greedy at every
// grid start, one grid point at a time) on larger seeded parameters, and the
// composite for which greedy is not optimal, kept as the reason its answer
// is only a bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "property/exhaustive_any.hpp"
#include "sluice/core/analysis.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/worst_case.hpp"

namespace sluice::property_worst_case_all_test {
namespace {

constexpr int max_window2 = 8;  // W′ from 1 to 8 ticks

/// Grid points in the longest W′, plus one period of the windows against
/// the grid before it (every alignment), plus one.
int horizon(tick g, tick period) { return static_cast<int>((max_window2 - 1) / g + 1 + std::lcm(period, g) / g + 1); }

/// Replays the witness through the real limiter from a fresh state: every
/// request is admitted, all lie in [start, start + W′), and they number
/// `reached`; when the answer is exact, that is the answer.
void check_witness(const any_policy& p, const worst_case_report& r, tick window2) {
  any_state st = fresh_state(p);
  std::int64_t admitted = 0;
  tick last = r.start;
  for (const auto& pt : r.witness) {
    ASSERT_GE(pt.at, last);
    ASSERT_LT(pt.at - r.start, window2);  // start ≤ 0 here, so no overflow
    ASSERT_GE(pt.count, 1);
    last = pt.at;
    if (pt.count > 1000) {  // saturated (always-allow): one request of that cost stands for them
      ASSERT_TRUE(decide(p, st, pt.at, pt.count).allowed);
      admitted += pt.count;
      continue;
    }
    for (std::int64_t k = 0; k < pt.count; ++k) ASSERT_TRUE(decide(p, st, pt.at, 1).allowed) << "at " << pt.at;
    admitted += pt.count;
  }
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(admitted, r.reached);
  if (r.exact) {
    EXPECT_EQ(r.reached, r.value);
  }
}

/// The answer for every W′ against the search: exact answers equal it; a
/// bound is at least it, and its witness at most it.
/// Returns false (checking nothing) if the search needs more than
/// `max_nodes` nodes.
bool check_against_search(const any_policy& p, tick g, tick period, const std::string& what,
                          std::int64_t max_nodes = INT64_MAX) {
  test::exhaustive_any<max_window2> ex(p, g, horizon(g, period), max_nodes);
  const auto best = ex.run();
  if (ex.gave_up()) return false;
  for (tick v = 1; v <= max_window2; ++v) {
    SCOPED_TRACE(what + " g=" + std::to_string(g) + " W'=" + std::to_string(v));
    const worst_case_bound w = worst_case(p, v, g);
    const worst_case_report r = worst_case_witness(p, v, g);
    EXPECT_EQ(w.value, r.value);
    EXPECT_EQ(w.exact, r.exact);
    if (w.exact) {
      EXPECT_EQ(w.value, best[static_cast<std::size_t>(v)]);
    } else {
      EXPECT_GE(w.value, best[static_cast<std::size_t>(v)]);
      EXPECT_LE(r.reached, best[static_cast<std::size_t>(v)]);
    }
    check_witness(p, r, v);
  }
  return true;
}

std::string rate_text(std::int64_t l, tick w) { return std::to_string(l) + "/" + std::to_string(w); }

TEST(WorstCaseAllExhaustive, SlidingCounterMatchesSearch) {
  for (std::int64_t l = 0; l <= 3; ++l)
    for (tick w = 1; w <= 6; ++w)
      for (tick g = 1; g <= 3; ++g)
        check_against_search(any_policy{*sliding_counter::make({l, w})}, g, w, "counter " + rate_text(l, w));
}

TEST(WorstCaseAllExhaustive, SlidingBucketsMatchesSearch) {
  for (std::int64_t l = 0; l <= 3; ++l)
    for (tick w = 1; w <= 6; ++w)
      for (std::int64_t n = 1; n <= w; ++n) {
        if (w % n != 0) continue;
        for (tick g = 1; g <= 4; ++g)  // g = 4 > w / n for most: the searched case
          check_against_search(any_policy{*sliding_buckets::make({l, w}, n)}, g, w / n,
                               "buckets " + rate_text(l, w) + " N=" + std::to_string(n));
      }
}

TEST(WorstCaseAllExhaustive, LeakyQueueMatchesSearch) {
  for (std::int64_t l = 0; l <= 3; ++l)
    for (tick w = 1; w <= 6; ++w)
      for (std::int64_t q = 1; q <= 3; ++q)
        for (tick g = 1; g <= 3; ++g)
          check_against_search(any_policy{*leaky_queue::make({l, w}, q)}, g, 1,
                               "leaky " + rate_text(l, w) + " Q=" + std::to_string(q));
}

TEST(WorstCaseAllExhaustive, QuotaAndTheAlwaysMatchSearch) {
  for (std::int64_t n = 0; n <= 4; ++n)
    for (tick g = 1; g <= 3; ++g) check_against_search(any_policy{*quota::make(n)}, g, 1, "quota " + std::to_string(n));
  for (tick g = 1; g <= 3; ++g) check_against_search(any_policy{always_deny{}}, g, 1, "always-deny");
  for (tick v : {1, 2, 1000}) {
    const worst_case_report r = worst_case_witness(any_policy{always_allow{}}, v, 1);
    EXPECT_EQ(r.value, never);  // saturated: no bound
    EXPECT_TRUE(r.exact);
    check_witness(any_policy{always_allow{}}, r, v);
  }
}

TEST(WorstCaseAllExhaustive, TheClosedFormsThroughAnyPolicyHaveWitnesses) {
  for (std::int64_t l = 0; l <= 3; ++l)
    for (tick w = 1; w <= 5; ++w)
      for (tick g = 1; g <= 3; ++g) {
        check_against_search(any_policy{*fixed_window::make({l, w}, w / 2)}, g, w, "fixed " + rate_text(l, w));
        check_against_search(any_policy{*sliding_log::make({l, w})}, g, 1, "log " + rate_text(l, w));
        check_against_search(any_policy{*token_bucket::make({l, w}, 2)}, g, 1, "bucket " + rate_text(l, w));
        check_against_search(any_policy{*gcra::make({l, w}, 1)}, g, 1, "gcra " + rate_text(l, w));
      }
}

// ---- composites ----

/// Small random policies, and the period of their windows.
class policy_maker {
 public:
  explicit policy_maker(std::uint64_t seed) : rng_(seed) {}

  any_policy make(int depth, std::string& text, tick& period) {
    if (depth == 0 || pick(0, 2) == 0) return plain(text, period);
    const bool all = pick(0, 1) == 1;
    std::vector<any_policy> parts;
    std::string inner;
    for (int i = 0; i < 2; ++i) {
      if (i) inner += ", ";
      parts.push_back(make(depth - 1, inner, period));
    }
    text += (all ? "all(" : "any(") + inner + ")";
    if (all) return *all_of::make(std::move(parts));
    return *any_of::make(std::move(parts));
  }

  std::int64_t pick(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }

 private:
  any_policy plain(std::string& text, tick& period) {
    const std::int64_t l = pick(1, 2);
    const tick w = pick(1, 4);
    const std::string r = rate_text(l, w) + "ns";
    switch (pick(0, 7)) {
      case 0: {
        const tick o = pick(0, w - 1);
        text += "fixed-window " + r + " origin=" + std::to_string(o) + "ns";
        period = std::lcm(period, w);
        return *fixed_window::make({l, w}, o);
      }
      case 1:
        text += "sliding-log " + r;
        return *sliding_log::make({l, w});
      case 2:
        text += "sliding-counter " + r;
        period = std::lcm(period, w);
        return *sliding_counter::make({l, w});
      case 3: {
        const std::int64_t n = w % 2 == 0 ? 2 : 1;
        text += "sliding-buckets " + r + " buckets=" + std::to_string(n);
        period = std::lcm(period, w / n);
        return *sliding_buckets::make({l, w}, n);
      }
      case 4: {
        const std::int64_t s = pick(1, 2);
        text += "token-bucket " + r + " burst=" + std::to_string(s);
        return *token_bucket::make({l, w}, s);
      }
      case 5: {
        const std::int64_t q = pick(1, 2);
        text += "leaky-queue " + r + " queue=" + std::to_string(q);
        return *leaky_queue::make({l, w}, q);
      }
      case 6: {
        const std::int64_t n = pick(0, 3);
        text += "quota " + std::to_string(n);
        return *quota::make(n);
      }
      default: {
        const std::int64_t s = pick(1, 2);
        text += "gcra " + r + " burst=" + std::to_string(s);
        return *gcra::make({l, w}, s);
      }
    }
  }

  std::mt19937_64 rng_;
};

TEST(WorstCaseAllExhaustive, RandomCompositesMatchSearch) {
  policy_maker maker(4242);
  int checked = 0;
  int inexact = 0;
  for (int n = 0; n < 1000 && checked < 150; ++n) {
    std::string text;
    tick period = 1;
    const any_policy p = maker.make(2, text, period);
    const tick g = maker.pick(1, 2);
    if (horizon(g, period) > 11) continue;  // keep the search small
    if (!check_against_search(p, g, period, text, 40000)) continue;
    ++checked;
    for (tick v = 1; v <= max_window2; ++v) inexact += worst_case(p, v, g).exact ? 0 : 1;
  }
  EXPECT_EQ(checked, 150);
  EXPECT_GT(inexact, 0);  // the bounds get checked too
}

TEST(WorstCaseAllExhaustive, CompositesThatAreExactByConstruction) {
  // all_of over plain limiters and any_of over those: greedy is optimal, so
  // these must come out exact (and the search agrees).
  const std::vector<std::pair<std::string, tick>> texts = {
      // with the period of their windows
      {"all(token-bucket 2/3ns burst=2, fixed-window 2/4ns)", 4},
      {"all(sliding-counter 2/3ns, fixed-window 3/2ns origin=1ns)", 6},
      {"all(sliding-buckets 2/4ns buckets=2, leaky-queue 1/2ns queue=2)", 2},
      {"any(quota 2, gcra 1/3ns burst=2)", 1},
      {"any(fixed-window 1/3ns, all(sliding-log 1/2ns, quota 2))", 3},
      {"any(any(sliding-counter 1/2ns, fixed-window 1/3ns), token-bucket 1/4ns)", 6},
      {"all(always-allow, sliding-counter 2/3ns)", 3},
      {"any(always-deny, sliding-log 2/3ns)", 1},
  };
  for (const auto& [t, period] : texts) {
    const auto p = parse_policy(t);
    ASSERT_TRUE(p.ok()) << t;
    for (tick g = 1; g <= 2; ++g) {
      for (tick v = 1; v <= max_window2; ++v) EXPECT_TRUE(worst_case(*p, v, g).exact) << t << " g=" << g << " W'=" << v;
      check_against_search(*p, g, period, t);
    }
  }
}

TEST(WorstCaseAllExhaustive, GreedyIsNotOptimalForAnAllOfOverAnAnyOf) {
  // Found by the random search above: every greedy trace gets 3 into 3
  // ticks, but the search finds 4 — an all_of over an any_of is outside the
  // greedy argument, so its answer can only be a bound (here a tight one).
  const auto p = parse_policy(
      "all(fixed-window 2/3ns origin=2ns, any(sliding-buckets 2/4ns buckets=2, "
      "leaky-queue 2/3ns queue=1))");
  ASSERT_TRUE(p.ok());
  test::exhaustive_any<max_window2> ex(*p, 2, horizon(2, 6));
  EXPECT_EQ(ex.run()[3], 4);
  const worst_case_report r = worst_case_witness(*p, 3, 2);
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.value, 4);
  EXPECT_EQ(r.reached, 3);
  check_witness(*p, r, 3);
}

// ---- larger parameters: the search against a naive model ----

/// Greedy from a fresh state at every grid start of one period, one grid
/// point at a time (no jumps): the most it gets into W′ ticks. For the
/// plain windowed limiters and the composites the greedy argument covers,
/// that is the worst case.
std::int64_t naive_best_greedy(const any_policy& p, tick window2, tick g, tick period) {
  std::int64_t best = 0;
  const tick span = std::lcm(period, g);
  for (tick s = -span; s < 0; s += g) {
    any_state st = fresh_state(p);
    std::int64_t got = 0;
    for (tick t = s; t < s + window2; t += g)
      while (decide(p, st, t, 1).allowed) ++got;
    best = std::max(best, got);
  }
  return best;
}

TEST(WorstCaseAllRandom, SearchMatchesNaiveGreedyOnLargerParameters) {
  std::mt19937_64 rng(960);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int n = 0; n < 300; ++n) {
    const std::int64_t l = pick(0, 12);
    const tick w = pick(1, 40);
    const tick v = pick(1, 150);
    const tick g = pick(1, 9);
    std::int64_t buckets = pick(1, 8);
    while (w % buckets != 0) --buckets;
    const std::vector<any_policy> ps = {
        *sliding_counter::make({l, w}),
        *sliding_buckets::make({l, w}, buckets),
        *all_of::make({*token_bucket::make({l + 1, w}, pick(1, 4)), *fixed_window::make({l, w / 2 + 1}, pick(0, 5))}),
        *any_of::make({*sliding_counter::make({l, w}), *leaky_queue::make({1, pick(1, 9)}, pick(1, 3))}),
    };
    const std::vector<tick> periods = {w, w / buckets, w / 2 + 1, w};
    for (std::size_t i = 0; i < ps.size(); ++i) {
      SCOPED_TRACE(format_policy(ps[i]) + " g=" + std::to_string(g) + " W'=" + std::to_string(v));
      const worst_case_bound got = worst_case(ps[i], v, g);
      ASSERT_TRUE(got.exact);
      ASSERT_EQ(got.value, naive_best_greedy(ps[i], v, g, periods[i]));
    }
  }
}

}  // namespace
}  // namespace sluice::property_worst_case_all_test
