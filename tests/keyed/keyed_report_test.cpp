// Reports in the keyed store: every state a report can leave (a debt past
// the limit, within semantics.md's bounds) is held by the store's cells,
// saved and read back by the snapshot codec unchanged, and decides on as
// the core does.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "conformance/traces.hpp"
#include "sluice/core/report.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice::keyed_report_test {
namespace {

/// Plays `t` on the core (reports and decisions, one state per (policy,
/// key)) and calls `each(policy, key, state)` after every step for the
/// state that step touched.
template <typename Each>
void play(const conformance::trace& t, Each each) {
  std::map<std::pair<std::size_t, std::string>, any_state> states;
  for (const auto& s : t.steps) {
    if (conformance::bad_request(s)) continue;
    for (const auto& c : s.checks) {
      const any_policy& p = t.policies[c.policy].policy;
      auto it = states.try_emplace({c.policy, c.key}, fresh_state(p)).first;
      if (s.report) {
        (void)report(p, it->second, s.now, conformance::cost_of(s, c));
      } else {
        (void)decide(p, it->second, s.now, conformance::cost_of(s, c));
      }
      each(c.policy, c.key, it->second);
    }
  }
}

conformance::trace_options report_heavy() {
  conformance::trace_options o;
  o.reports = 60;
  return o;
}

TEST(KeyedReport, EveryStateAReportLeavesSurvivesTheSnapshotCodec) {
  std::size_t checked = 0;
  for (algorithm a : conformance::all_algorithms) {
    for (std::uint64_t seed = 0; seed < 60; ++seed) {
      const auto t = conformance::make_trace(a, seed, report_heavy());
      play(t, [&](std::size_t pi, const std::string&, const any_state& s) {
        const any_policy& p = t.policies[pi].policy;
        if (s == fresh_state(p)) return;
        const std::string bytes = encode_state(p, s, 0);
        auto back = decode_state(p, bytes, 0);
        ASSERT_TRUE(back.ok()) << t.describe() << ": " << back.err().what();
        ASSERT_TRUE(back.value() == s) << t.describe();
        ++checked;
      });
    }
  }
  EXPECT_GT(checked, 10000U);
}

TEST(KeyedReport, ACompactStoreHoldsEveryDebtAndRestoresIt) {
  // GCRA and the token bucket live in 128-bit cells: a report's debt past
  // S·W fits, put() and restore() take it, and the key decides on as the
  // core does.
  for (algorithm a : {algorithm::gcra, algorithm::token_bucket}) {
    for (std::uint64_t seed = 0; seed < 60; ++seed) {
      const auto t = conformance::make_trace(a, seed, report_heavy());
      keyed_options ko;
      ko.auto_purge = false;
      keyed_limiter k(t.policies[0].policy, ko);
      play(t, [&](std::size_t pi, const std::string& key, const any_state& s) {
        if (pi != 0) return;
        (void)k.take(key, [](any_state&&) {});  // put() stores only on a key without a state
        (void)k.put(key, s);
        const auto held = k.state_of(key);
        if (s == fresh_state(t.policies[0].policy)) return;
        ASSERT_TRUE(held.has_value()) << t.describe();
        if (a == algorithm::gcra) {
          const auto& x = std::get<gcra::state>(*held);
          const auto& y = std::get<gcra::state>(s);
          ASSERT_TRUE(x == y) << t.describe() << " held u=" << static_cast<long long>(x.u) << " last=" << x.last
                              << " core u=" << static_cast<long long>(y.u) << " last=" << y.last;
        }
        ASSERT_TRUE(*held == s) << t.describe();
      });
    }
  }
}

TEST(KeyedReport, AReportOnAKeyIsAtomicAcrossChecksAndNeverDenied) {
  const auto g = gcra::make(rate{1, 10}, 2);
  const auto f = fixed_window::make(rate{3, 100});
  keyed_options ko;
  ko.auto_purge = false;
  keyed_limiter a(any_policy{g.value()}, ko);
  keyed_limiter b(any_policy{f.value()}, ko);
  const keyed_check both[] = {{&a, "k", 5}, {&b, "k", 0}};
  std::vector<decision> each(2);
  const decision d = keyed_limiter::report_all_at(both, 0, 7, each);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(each[0].retry_after, 40);   // 5 units at 1 per 10 ticks, burst 2: 3 past empty, then 1
  EXPECT_EQ(each[1].retry_after, 100);  // the window is spent until it ends
  EXPECT_EQ(d.retry_after, 100);
  EXPECT_EQ(d.part, 1);
  EXPECT_FALSE(a.try_acquire_at("k", 39).allowed);
  EXPECT_TRUE(a.try_acquire_at("k", 40).allowed);
  EXPECT_FALSE(b.try_acquire_at("k", 99).allowed);
  EXPECT_TRUE(b.try_acquire_at("k", 100, 3).allowed);
}

}  // namespace
}  // namespace sluice::keyed_report_test
