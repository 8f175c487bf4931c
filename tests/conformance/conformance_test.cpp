// The conformance suite for the in-process stores: every trace of
// traces.hpp gives the contract's decisions, field for field and check for
// check, through the keyed store directly (single checks, and its
// multi-key form) and through the memory store (one request at a time, and
// in batches). The reference is the core `decide` on one state per
// (policy, key).
#include <gtest/gtest.h>
#include <map>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "conformance/traces.hpp"
#include "sluice/core/detail/run_members.hpp"
#include "sluice/core/report.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice {
namespace {

using conformance::answer;
using conformance::trace;

constexpr std::size_t traces_per_algorithm = 400;

/// A memory store that decides exactly as one limiter per key on any trace,
/// clock steps back included: no purge, so no state is ever dropped.
std::unique_ptr<memory_store> exact_memory_store(std::size_t policies) {
  memory_store_options o;
  o.keyed.auto_purge = false;
  o.keyed.shards = 1;
  o.keyed.hash_seed = 7;
  o.max_policies = policies;
  return std::make_unique<memory_store>(o);
}

/// The keyed stores' answers to `t`: one keyed_limiter per policy; a step
/// of one check by try_acquire_at, of several by try_acquire_all_at.
std::vector<answer> run_on_keyed(const trace& t) {
  keyed_options ko;
  ko.auto_purge = false;
  ko.shards = 2;
  std::vector<std::unique_ptr<keyed_limiter>> ks;
  for (const auto& p : t.policies) ks.push_back(std::make_unique<keyed_limiter>(p.policy, ko));
  std::vector<answer> out;
  // Receipts of the admits with an id (admit_all_at), by step; a refund
  // uses them with refund_all_at.
  std::map<std::size_t, std::vector<receipt>> tickets;
  std::vector<int> seen(t.steps.size(), 0);  // 1: decided with an id, 2: refunded
  for (std::size_t at = 0; at < t.steps.size(); ++at) {
    const auto& st = t.steps[at];
    answer a;
    if (st.refund_of) {
      const std::size_t j = *st.refund_of;
      auto it = tickets.find(j);
      if (seen[j] == 2) {
        a.refund = refund_status::already_refunded;
      } else if (seen[j] == 0) {
        a.refund = refund_status::unknown_id;
      } else if (it == tickets.end()) {
        a.refund = refund_status::not_refundable;
      } else {
        const auto& of = t.steps[j];
        std::vector<keyed_check> cs;
        for (const auto& c : of.checks) cs.push_back({ks[c.policy].get(), c.key, 0});
        a.per_check.resize(cs.size());
        a.given.resize(cs.size());
        a.d.d = keyed_limiter::refund_all_at(cs, st.now, it->second, a.per_check, a.given);
        a.refund = refund_status::refunded;
        seen[j] = 2;
        tickets.erase(it);
      }
      out.push_back(std::move(a));
      continue;
    }
    if (st.with_id && !conformance::bad_request(st)) {
      seen[at] = 1;
      std::vector<keyed_check> cs;
      for (const auto& c : st.checks) cs.push_back({ks[c.policy].get(), c.key, c.cost});
      a.per_check.resize(cs.size());
      std::vector<receipt> rs(cs.size());
      a.d.d = keyed_limiter::admit_all_at(cs, st.now, st.cost, a.per_check, rs);
      if (a.d.d.allowed) tickets.emplace(at, std::move(rs));
      out.push_back(std::move(a));
      continue;
    }
    if (conformance::bad_request(st)) {
      a.d.from = source::error;
      out.push_back(a);
      continue;
    }
    a.per_check.resize(st.checks.size());
    if (st.report) {
      std::vector<keyed_check> cs;
      for (const auto& c : st.checks) cs.push_back({ks[c.policy].get(), c.key, c.cost});
      if (st.checks.size() == 1) {
        a.per_check[0] =
            ks[st.checks[0].policy]->report_at(st.checks[0].key, st.now, conformance::cost_of(st, st.checks[0]));
        a.d.d = combine_reports(a.per_check);
      } else {
        a.d.d = keyed_limiter::report_all_at(cs, st.now, st.cost, a.per_check);
      }
    } else if (st.checks.size() == 1) {
      a.per_check[0] =
          ks[st.checks[0].policy]->try_acquire_at(st.checks[0].key, st.now, conformance::cost_of(st, st.checks[0]));
      a.d.d = a.per_check[0];
      a.d.d.part = 0;
    } else {
      std::vector<keyed_check> cs;
      for (const auto& c : st.checks) cs.push_back({ks[c.policy].get(), c.key, c.cost});
      a.d.d = keyed_limiter::try_acquire_all_at(cs, st.now, st.cost, a.per_check);
    }
    out.push_back(std::move(a));
  }
  return out;
}

class Conformance : public ::testing::TestWithParam<algorithm> {};

/// Traces with refunds (semantics.md "Refunds"): every decision with an
/// id, 20% of the steps refunds of an earlier step's id, instants within
/// ±2^61 so that no id leaves an unbounded idempotency window.
conformance::trace_options refund_options() {
  conformance::trace_options o;
  o.refunds = 20;
  o.max_time = tick{1} << 61;
  return o;
}

std::unique_ptr<memory_store> refunding_memory_store(std::size_t policies) {
  memory_store_options o;
  o.keyed.auto_purge = false;
  o.keyed.shards = 1;
  o.keyed.hash_seed = 7;
  o.max_policies = policies;
  o.idempotency_window = std::numeric_limits<tick>::max();
  return std::make_unique<memory_store>(o);
}

TEST_P(Conformance, KeyedStoreRefundsAsTheContract) {
  for (std::uint64_t seed = 0; seed < traces_per_algorithm; ++seed) {
    const trace t = conformance::make_trace(GetParam(), seed, refund_options());
    ASSERT_EQ(conformance::compare(t, run_on_keyed(t), conformance::expected_answers(t)), "");
  }
}

TEST_P(Conformance, MemoryStoreRefundsAsTheContract) {
  auto s = refunding_memory_store(4 * traces_per_algorithm);
  for (std::uint64_t seed = 0; seed < traces_per_algorithm; ++seed) {
    const trace t = conformance::make_trace(GetParam(), seed, refund_options());
    ASSERT_EQ(conformance::run_conformance(*s, t, "t" + std::to_string(seed) + ":"), "");
  }
}

TEST_P(Conformance, KeyedStoreDecidesAsTheContract) {
  for (std::uint64_t seed = 0; seed < traces_per_algorithm; ++seed) {
    const trace t = conformance::make_trace(GetParam(), seed);
    const auto diff = conformance::compare(t, run_on_keyed(t), conformance::expected_answers(t));
    ASSERT_EQ(diff, "");
  }
}

TEST_P(Conformance, MemoryStoreDecidesAsTheContract) {
  auto s = exact_memory_store(4 * traces_per_algorithm);
  for (std::uint64_t seed = 0; seed < traces_per_algorithm; ++seed) {
    const trace t = conformance::make_trace(GetParam(), seed);
    ASSERT_EQ(conformance::run_conformance(*s, t, "t" + std::to_string(seed) + ":"), "");
  }
}

TEST_P(Conformance, MemoryStoreInBatches) {
  std::vector<trace> ts;
  for (std::uint64_t seed = 0; seed < traces_per_algorithm; ++seed)
    ts.push_back(conformance::make_trace(GetParam(), 100000 + seed));
  auto s = exact_memory_store(4 * traces_per_algorithm);
  EXPECT_EQ(conformance::run_conformance_batched(*s, ts, [](std::size_t j) { return "b" + std::to_string(j) + ":"; }),
            "");
}

TEST_P(Conformance, MemoryStoreWholeTraceInOneBatch) {
  // Single-check traces of one policy: decide_many_at sends runs of them to
  // the keyed store's own batch (try_acquire_many_at).
  conformance::trace_options o;
  o.extra_policies = 0;
  auto s = exact_memory_store(4 * traces_per_algorithm);
  for (std::uint64_t seed = 0; seed < traces_per_algorithm; ++seed) {
    const trace t = conformance::make_trace(GetParam(), 400000 + seed, o);
    ASSERT_EQ(conformance::run_conformance_one_batch(*s, t, "w" + std::to_string(seed) + ":"), "");
  }
  // And mixed traces (runs broken by multi-check and bad requests).
  for (std::uint64_t seed = 0; seed < traces_per_algorithm; ++seed) {
    const trace t = conformance::make_trace(GetParam(), 500000 + seed);
    ASSERT_EQ(conformance::run_conformance_one_batch(*s, t, "x" + std::to_string(seed) + ":"), "");
  }
}

TEST_P(Conformance, QuantitiesWithinARedisStoresExactRange) {
  conformance::trace_options o;
  o.max_quantity = std::int64_t{1} << 52;
  auto s = exact_memory_store(4 * traces_per_algorithm);
  for (std::uint64_t seed = 0; seed < traces_per_algorithm; ++seed) {
    const trace t = conformance::make_trace(GetParam(), 200000 + seed, o);
    ASSERT_EQ(conformance::run_conformance(*s, t, "r" + std::to_string(seed) + ":"), "");
  }
}

TEST_P(Conformance, SingleCheckTracesWithoutClockSteps) {
  conformance::trace_options o;
  o.extra_policies = 0;
  o.keys = 1;
  o.clock_back = false;
  auto s = exact_memory_store(4 * traces_per_algorithm);
  for (std::uint64_t seed = 0; seed < traces_per_algorithm; ++seed) {
    const trace t = conformance::make_trace(GetParam(), 300000 + seed, o);
    ASSERT_EQ(conformance::run_conformance(*s, t, "s" + std::to_string(seed) + ":"), "");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, Conformance, ::testing::ValuesIn(conformance::all_algorithms),
                         [](const auto& p) {
                           std::string n(name_of(p.param));
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

/// A store over a memory store that decides each request its own (wrong)
/// way; everything else is the memory store's.
class wrong_store : public store, public store_refunds {
 public:
  explicit wrong_store(memory_store& inner) : inner_(inner) {}
  result<policy_id> define(std::string_view name, const any_policy& p) override { return inner_.define(name, p); }
  /// The wrong decision.
  virtual store_decision decide_at(const store_request& r, std::span<decision> per_check,
                                   std::span<std::optional<tick>> grows) = 0;
  store_decision run_at(store_op op, const store_request& r, std::span<decision> per_check,
                        std::span<std::optional<tick>> grows) override {
    return detail::run_members(*this, op, r, per_check, grows);
  }
  [[nodiscard]] store_capabilities capabilities() const noexcept override {
    return {.refunds = const_cast<wrong_store*>(this)};
  }
  void decide_many_at(std::span<const store_request> rs, std::span<store_decision> out) override {
    for (std::size_t i = 0; i < rs.size(); ++i) out[i] = decide_at(rs[i], {}, {});
  }
  store_decision peek_at(const store_request& r, std::span<decision> per_check) { return inner_.peek_at(r, per_check); }
  store_decision report_at(const store_request& r, std::span<decision> per_check) {
    return inner_.report_at(r, per_check);
  }
  refund_answer refund_at(std::string_view id, tick now, std::span<decision> per_check,
                          std::span<std::int64_t> given) override {
    return inner_.refund_at(id, now, per_check, given);
  }
  [[nodiscard]] tick now() const noexcept override { return inner_.now(); }
  [[nodiscard]] store_stats stats() const override { return inner_.stats(); }

 protected:
  memory_store& inner_;
};

/// Wrong the usual way: it decides a request's checks one after another,
/// each charged as it admits, so a denied request still charges the checks
/// before the one that denied.
class one_by_one_store final : public wrong_store {
 public:
  using wrong_store::wrong_store;
  store_decision decide_at(const store_request& r, std::span<decision> per_check,
                           std::span<std::optional<tick>> grows) override {
    if (r.checks.size() == 1) return inner_.decide_at(r, per_check, grows);
    store_decision out;
    out.d.allowed = true;
    for (std::size_t i = 0; i < r.checks.size(); ++i) {
      store_request one = r;
      one.checks = r.checks.subspan(i, 1);
      const store_decision d = inner_.decide_at(one);
      if (!d.d.allowed) out = d;
    }
    return out;
  }
};

/// Wrong by ignoring the checks' own costs: every check is decided at the
/// request's cost.
class one_cost_store final : public wrong_store {
 public:
  using wrong_store::wrong_store;
  store_decision decide_at(const store_request& r, std::span<decision> per_check,
                           std::span<std::optional<tick>> grows) override {
    std::vector<check> same(r.checks.begin(), r.checks.end());
    for (check& c : same) c.cost = 0;
    store_request one = r;
    one.checks = same;
    return inner_.decide_at(one, per_check, grows);
  }
};

/// Wrong in `grows_after` only: it reads each check's on its state before
/// the decision (a peek of cost remaining + 1 first), not after.
class early_grows_store final : public wrong_store {
 public:
  using wrong_store::wrong_store;
  store_decision decide_at(const store_request& r, std::span<decision> per_check,
                           std::span<std::optional<tick>> grows) override {
    std::vector<std::optional<tick>> early(r.checks.size());
    std::vector<decision> before(r.checks.size());
    (void)inner_.peek_at(r, before);
    for (std::size_t i = 0; i < r.checks.size() && !grows.empty(); ++i) {
      const check one{r.checks[i].policy, r.checks[i].key};
      early[i] = before[i].remaining == std::numeric_limits<std::int64_t>::max()
                     ? never
                     : inner_.peek_at({.checks = {&one, 1}, .now = r.now, .cost = before[i].remaining + 1, .id = {}})
                           .d.retry_after;
    }
    const store_decision d = inner_.decide_at(r, per_check);
    for (std::size_t i = 0; i < grows.size() && i < early.size(); ++i) grows[i] = early[i];
    return d;
  }
};

/// Of 100 traces of `a`, how many the suite finds `wrong` out on.
std::size_t caught(store& wrong, algorithm a) {
  std::size_t n = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed)
    if (!conformance::run_conformance(wrong, conformance::make_trace(a, seed), "t" + std::to_string(seed) + ":")
             .empty())
      ++n;
  return n;
}

TEST(ConformanceJudge, CatchesAStoreThatChargesDeniedRequests) {
  auto inner = exact_memory_store(4 * traces_per_algorithm);
  one_by_one_store wrong(*inner);
  EXPECT_GT(caught(wrong, algorithm::fixed_window), 50U);
}

TEST(ConformanceJudge, CatchesAStoreThatIgnoresTheChecksOwnCosts) {
  auto inner = exact_memory_store(4 * traces_per_algorithm);
  one_cost_store wrong(*inner);
  EXPECT_GT(caught(wrong, algorithm::gcra), 50U);
}

TEST(ConformanceJudge, CatchesAStoreThatReadsGrowsAfterBeforeTheDecision) {
  for (const algorithm a : {algorithm::fixed_window, algorithm::leaky_queue}) {
    auto inner = exact_memory_store(4 * traces_per_algorithm);
    early_grows_store wrong(*inner);
    EXPECT_GT(caught(wrong, a), 50U) << name_of(a);
  }
}

/// Wrong by giving nothing back: it answers a refund as the store does but
/// says every check got 0 units back.
class refunds_nothing_store final : public wrong_store {
 public:
  using wrong_store::wrong_store;
  store_decision decide_at(const store_request& r, std::span<decision> per_check,
                           std::span<std::optional<tick>> grows) override {
    return inner_.decide_at(r, per_check, grows);
  }
  refund_answer refund_at(std::string_view id, tick now, std::span<decision> per_check,
                          std::span<std::int64_t> given) override {
    refund_answer a = inner_.refund_at(id, now, per_check, given);
    for (auto& g : given) g = 0;
    return a;
  }
};

TEST(ConformanceJudge, CatchesAStoreThatSaysARefundGaveNothingBack) {
  auto inner = refunding_memory_store(4 * traces_per_algorithm);
  refunds_nothing_store wrong(*inner);
  bool caught = false;
  for (std::uint64_t seed = 0; seed < 50 && !caught; ++seed)
    caught = !conformance::run_conformance(wrong, conformance::make_trace(algorithm::gcra, seed, refund_options()),
                                           "w" + std::to_string(seed) + ":")
                  .empty();
  EXPECT_TRUE(caught);
}

TEST(ConformanceTraces, RefundTracesHoldEveryRefundOutcome) {
  // Over a few traces the refunds meet each answer the contract has, so
  // the suites above test them all.
  std::map<refund_status, int> seen;
  for (std::uint64_t seed = 0; seed < 100; ++seed)
    for (const auto& a :
         conformance::expected_answers(conformance::make_trace(algorithm::all_of, seed, refund_options())))
      if (a.refund) ++seen[*a.refund];
  EXPECT_GT(seen[refund_status::refunded], 20);
  EXPECT_GT(seen[refund_status::already_refunded], 5);
  EXPECT_GT(seen[refund_status::not_refundable], 5);
  EXPECT_GT(seen[refund_status::unknown_id], 5);
}

TEST(ConformanceTraces, CoverEveryKindOfStep) {
  // The generator draws what the suite claims to test: requests of one and
  // of several checks, bad requests, clock steps back, requests whose
  // checks have different costs (among them denials where a check that
  // would admit at its cost sits beside one that denies at another), and at
  // the 2^52 bound, quantities right at it.
  std::size_t single = 0;
  std::size_t multi = 0;
  std::size_t bad = 0;
  std::size_t back = 0;
  std::size_t single_own = 0;
  std::size_t mixed = 0;
  std::size_t mixed_split = 0;
  std::size_t reports = 0;
  for (algorithm a : conformance::all_algorithms) {
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
      const trace t = conformance::make_trace(a, seed);
      const auto want = conformance::expected_answers(t);
      for (std::size_t i = 0; i < t.steps.size(); ++i) {
        const auto& st = t.steps[i];
        if (conformance::bad_request(st)) {
          ++bad;
        } else if (st.report) {
          ++reports;
        } else if (st.checks.size() == 1) {
          ++single;
          if (st.checks[0].cost != 0) ++single_own;
        } else {
          ++multi;
          bool differ = false;
          for (const auto& c : st.checks)
            differ = differ || conformance::cost_of(st, c) != conformance::cost_of(st, st.checks[0]);
          if (!differ) continue;
          ++mixed;
          bool admits = false;
          bool denies = false;
          for (const auto& pc : want[i].per_check) {
            admits = admits || (!pc.allowed && pc.retry_after == 0);
            denies = denies || (!pc.allowed && pc.retry_after != 0);
          }
          if (admits && denies) ++mixed_split;
        }
        if (i > 0 && st.now < t.steps[i - 1].now) ++back;
      }
    }
  }
  EXPECT_GT(single, 1000U);
  EXPECT_GT(multi, 1000U);
  EXPECT_GT(bad, 100U);
  EXPECT_GT(back, 100U);
  EXPECT_GT(single_own, 300U);
  EXPECT_GT(mixed, 500U);
  EXPECT_GT(mixed_split, 50U);
  EXPECT_GT(reports, 1000U);
  std::printf(
      "drawn: %zu single (%zu at a cost of their own), %zu multi (%zu of mixed costs, %zu of them denied "
      "beside a check that would admit), %zu bad, %zu clock steps back\n",
      single, single_own, multi, mixed, mixed_split, bad, back);
  conformance::trace_options o;
  o.max_quantity = std::int64_t{1} << 52;
  std::size_t at_bound = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const trace t = conformance::make_trace(algorithm::gcra, seed, o);
    if (t.policies[0].describe.find("L=" + std::to_string((std::int64_t{1} << 52) - 0)) != std::string::npos ||
        t.policies[0].describe.find("L=" + std::to_string((std::int64_t{1} << 52) - 1)) != std::string::npos)
      ++at_bound;
  }
  EXPECT_GT(at_bound, 0U);
}

TEST(ConformanceTraces, TenThousandTracesPerAlgorithmAreQuickToDraw) {
  std::size_t steps = 0;
  for (std::uint64_t seed = 0; seed < 10000; ++seed)
    steps += conformance::make_trace(algorithm::gcra, seed).steps.size();
  EXPECT_EQ(steps, 10000U * 40U);
}

}  // namespace
}  // namespace sluice
