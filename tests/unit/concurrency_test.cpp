// Concurrency: at most N units held by leases at once; a lease expires D
// ticks after its admit, or is released by its nonce (semantics.md, "The
// algorithms": Concurrency, and "Leases").
// The tables are laid out by hand, one row a line:
// clang-format off
#include "sluice/core/concurrency.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <ratio>
#include <set>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/fresh.hpp"
#include "sluice/core/lease.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/reconfigure.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/report.hpp"
#include "sluice/core/worst_case.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_concurrency_test {
namespace {

using test::N;
using test::r;

constexpr tick max = std::numeric_limits<tick>::max();

TEST(Concurrency, ThreeInFlightLeasesOfTen) {
  const auto p = test::ok(concurrency::make(3, 10));
  test::play(p, {
                    r(0, 1, true, 2, 0, 10),    // lease until 10
                    r(2, 2, true, 0, 0, 10),    // lease until 12
                    r(3, 1, false, 0, 7, 9),    // room once the lease of 10 expires
                    r(3, 3, false, 0, 9, 9),    // ... and for 3, once both have
                    r(3, 4, false, 0, N, 9),    // more than N: never
                    r(9, 1, false, 0, 1, 3),    // one tick before 10: still held
                    r(10, 1, true, 0, 0, 10),   // held at 10: 2 (expiry ≤ now is not held); lease until 20
                    r(5, 1, false, 0, 7, 15),   // clock back: read at 10; room at 12, 7 ticks from 5
                    r(25, 3, true, 0, 0, 10),   // every lease expired
                    r(25, 0, false, 0, N, 10),  // a cost of 0 is no request
                    r(25, -1, false, 0, N, 10),
                    r(35, 3, true, 0, 0, 10),
                });
}

TEST(Concurrency, ZeroUnitsDeniesEverythingNever) {
  const auto p = test::ok(concurrency::make(0, 10));
  test::play(p, {r(0, 1, false, 0, N, 0), r(100, 1, false, 0, N, 0)});
}

TEST(Concurrency, LeaseSaturatesAtTheEndOfTime) {
  const auto p = test::ok(concurrency::make(2, 100));
  test::play(p, {
                    r(max - 10, 1, true, 1, 0, 10),  // expiry max: the lease never expires in representable time
                    r(max - 5, 1, true, 0, 0, 5),
                    r(max - 5, 1, false, 0, 5, 5),
                });
}

TEST(Concurrency, BuildErrorsNameTheField) {
  EXPECT_EQ(test::field_of(concurrency::make(-1, 10)), "concurrency");
  EXPECT_EQ(test::field_of(concurrency::make((std::int64_t{1} << 62) + 1, 10)), "concurrency");
  EXPECT_EQ(test::field_of(concurrency::make(1, 0)), "lease");
  EXPECT_EQ(test::field_of(concurrency::make(1, -5)), "lease");
  EXPECT_TRUE(concurrency::make(std::int64_t{1} << 62, std::int64_t{1} << 62).ok());
}

TEST(Concurrency, ALeaseMayBeAChronoDuration) {
  using thirds = std::chrono::duration<std::int64_t, std::ratio<1, 3>>;
  EXPECT_EQ(test::ok(concurrency::make(5, std::chrono::seconds{30})).lease_length(), default_lease);
  EXPECT_EQ(test::ok(concurrency::make(5, std::chrono::milliseconds{250})).lease_length(), 250'000'000);
  EXPECT_EQ(test::ok(concurrency::make(5, thirds{3})).lease_length(), 1'000'000'000);
  const auto third = concurrency::make(5, thirds{1});
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.err().what(), "lease: must be a whole number of nanoseconds within int64");
  EXPECT_EQ(test::field_of(concurrency::make(5, std::chrono::hours{std::numeric_limits<std::int64_t>::max()})),
            "lease");
  EXPECT_EQ(test::field_of(concurrency::make(5, std::chrono::seconds{0})), "lease");
}

TEST(Concurrency, AnAdmitsLeaseCarriesTheNonceGivenToTheStep) {
  const auto p = test::ok(concurrency::make(5, 10));
  concurrency::state s;
  EXPECT_TRUE(p.decide(s, 0, 2, 77).allowed);
  ASSERT_EQ(s.leases.size(), 1U);
  EXPECT_EQ(s.leases[0], (concurrency::lease{10, 77, 2}));
  EXPECT_EQ(s.units, 2);
  EXPECT_EQ(s.latest, 0);
  // Through any_policy, the nonce is the thread's lease_scope's.
  const any_policy ap = p;
  any_state as = fresh_state(ap);
  {
    lease_scope scope(991);
    EXPECT_TRUE(decide(ap, as, 4, 1).allowed);
    EXPECT_EQ(scope.issued(), 1U);
    EXPECT_FALSE(decide(ap, as, 4, 5).allowed);
    EXPECT_EQ(scope.issued(), 1U);  // a denial issues nothing
  }
  EXPECT_EQ(std::get<concurrency::state>(as).leases.at(0).nonce, 991U);
  EXPECT_EQ(detail::lease_ctx.nonce, 0U);  // the scope restored the thread's nonce
}

TEST(Concurrency, ReleaseFreesTheLeaseOnceAndNothingElse) {
  const auto p = test::ok(concurrency::make(3, 10));
  concurrency::state s;
  ASSERT_TRUE(p.decide(s, 0, 1, 11).allowed);
  ASSERT_TRUE(p.decide(s, 1, 2, 22).allowed);
  EXPECT_FALSE(p.peek(s, 2, 1).allowed);
  EXPECT_EQ(p.release(s, 2, 33), 0);  // never issued
  EXPECT_EQ(p.release(s, 2, 22), 2);
  EXPECT_EQ(p.release(s, 2, 22), 0);  // already released
  EXPECT_EQ(s.latest, 1);             // a release never moves the key's time
  const decision d = p.peek(s, 2, 2);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(p.release(s, 10, 11), 0);  // expired at 10: not held, nothing changes
  EXPECT_EQ(s.leases.size(), 1U);
}

TEST(Concurrency, ReleaseIsReadAtTheLatestAdmitWhenTheClockStepsBack) {
  const auto p = test::ok(concurrency::make(3, 10));
  concurrency::state s;
  ASSERT_TRUE(p.decide(s, 0, 1, 11).allowed);   // until 10
  ASSERT_TRUE(p.decide(s, 12, 1, 22).allowed);  // latest 12: lease 11 expired (dropped by this admit)
  EXPECT_EQ(p.release(s, 5, 11), 0);
  EXPECT_EQ(p.release(s, 5, 22), 1);
}

TEST(Concurrency, FreshWhenNoLeaseIsHeld) {
  const auto p = test::ok(concurrency::make(3, 10));
  concurrency::state s;
  EXPECT_TRUE(is_fresh(p, s, 0));
  ASSERT_TRUE(p.decide(s, 0, 1, 1).allowed);
  EXPECT_FALSE(is_fresh(p, s, 9));
  EXPECT_TRUE(is_fresh(p, s, 10));
  ASSERT_TRUE(p.decide(s, 10, 1, 2).allowed);
  EXPECT_EQ(p.release(s, 10, 2), 1);
  EXPECT_FALSE(is_fresh(p, s, 9));  // before the latest admit
  EXPECT_TRUE(is_fresh(p, s, 10));
}

TEST(Concurrency, ReconfigurationCarriesTheLeasesOver) {
  const auto from = test::ok(concurrency::make(3, 10));
  const auto to = test::ok(concurrency::make(1, 100));
  concurrency::state s;
  ASSERT_TRUE(from.decide(s, 0, 2, 5).allowed);
  concurrency::state t = reconfigure(from, s, to, 1);
  EXPECT_EQ(t, s);  // expiries stay
  const decision d = to.peek(t, 1, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, 9);  // held 2 > N = 1 until the old lease expires at 10
  EXPECT_EQ(d.remaining, 0);
  EXPECT_TRUE(to.decide(t, 10, 1, 6).allowed);
  EXPECT_EQ(t.leases.back().expiry, 110);  // the new D applies to the new lease
}

TEST(Concurrency, AReportChargesNothing) {
  const auto p = test::ok(concurrency::make(3, 10));
  concurrency::state s;
  ASSERT_TRUE(p.decide(s, 0, 2, 5).allowed);
  const concurrency::state before = s;
  const decision d = report(p, s, 1, 5);
  EXPECT_EQ(s, before);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 1);
  EXPECT_EQ(d.retry_after, 0);
  // In a composite the other parts are charged; the concurrency part holds nothing.
  const any_policy all = test::ok(parse_policy("all(quota 10, concurrency 1)"));
  any_state st = fresh_state(all);
  (void)report(all, st, 0, 4);
  const auto& parts = std::get<all_of_state>(st).parts;
  EXPECT_EQ(std::get<quota::state>(parts[0]).used, 4);
  EXPECT_TRUE(std::get<concurrency::state>(parts[1]).leases.empty());
  const any_policy any = test::ok(parse_policy("any(concurrency 1, quota 10)"));
  any_state sa = fresh_state(any);
  (void)report(any, sa, 0, 1);  // the concurrency part would admit: it pays, and charges nothing
  EXPECT_EQ(sa, fresh_state(any));
}

TEST(Concurrency, RefundOfAnAdmitIsTheReleaseOfItsLease) {
  const any_policy p = test::ok(parse_policy("all(concurrency 2, quota 10)"));
  any_state s = fresh_state(p);
  admission a = [&] {
    lease_scope scope(1234);
    return admit(p, s, 0, 2);
  }();
  ASSERT_TRUE(a.result.allowed);
  EXPECT_FALSE(peek(p, s, 1, 1).allowed);
  EXPECT_EQ(refund(p, s, std::move(a.ticket), 1), 2);
  EXPECT_TRUE(peek(p, s, 1, 2).allowed);
  const auto& parts = std::get<all_of_state>(s).parts;
  EXPECT_TRUE(std::get<concurrency::state>(parts[0]).leases.empty());
  EXPECT_EQ(std::get<quota::state>(parts[1]).used, 0);
}

TEST(Concurrency, ReleaseThroughAComposite) {
  const any_policy p = test::ok(parse_policy("all(gcra 100/1m, concurrency 5, any(concurrency 1, quota 3))"));
  EXPECT_TRUE(holds_concurrency(p));
  EXPECT_FALSE(holds_concurrency(test::ok(parse_policy("all(gcra 100/1m, quota 5)"))));
  any_state s = fresh_state(p);
  {
    lease_scope scope(42);
    ASSERT_TRUE(decide(p, s, 0, 1).allowed);
    EXPECT_EQ(scope.issued(), 2U);  // both concurrency parts admitted, with one nonce
  }
  EXPECT_TRUE(holds_lease(p, s, 0, 42));
  EXPECT_FALSE(holds_lease(p, s, 0, 43));
  EXPECT_EQ(release(p, s, 1, 43), 0);
  EXPECT_EQ(release(p, s, 1, 42), 2);  // one unit in each
  EXPECT_EQ(release(p, s, 1, 42), 0);
  EXPECT_FALSE(holds_lease(p, s, 1, 42));
}

TEST(Concurrency, AllOfAdmitsOnlyIfBothAdmitAndHoldsNothingOtherwise) {
  const any_policy p = test::ok(parse_policy("all(gcra 2/1m, concurrency 5)"));
  any_state s = fresh_state(p);
  lease_scope scope(7);
  EXPECT_TRUE(decide(p, s, 0, 1).allowed);
  EXPECT_TRUE(decide(p, s, 0, 1).allowed);
  EXPECT_FALSE(decide(p, s, 0, 1).allowed);  // the rate denies: no lease taken
  EXPECT_EQ(std::get<concurrency::state>(std::get<all_of_state>(s).parts[1]).leases.size(), 2U);
}

TEST(Concurrency, WorstCaseIsNAtOncePerLease) {
  const auto p = test::ok(concurrency::make(5, 10));
  EXPECT_EQ(worst_case(p, 0, 1), 0);
  EXPECT_EQ(worst_case(p, 1, 1), 5);
  EXPECT_EQ(worst_case(p, 10, 1), 5);   // admits at 0; again at 10, outside [0, 10)
  EXPECT_EQ(worst_case(p, 11, 1), 10);
  EXPECT_EQ(worst_case(p, 11, 4), 5);   // on a grid of 4 the leases of 0 are gone at 12
  EXPECT_EQ(worst_case(p, 13, 4), 10);
  EXPECT_EQ(worst_case(test::ok(concurrency::make(std::int64_t{1} << 62, 1)), max, 1), max);
  const worst_case_bound b = worst_case(any_policy{p}, 25, 1);
  EXPECT_EQ(b.value, 15);
  EXPECT_TRUE(b.exact);
}

TEST(Concurrency, PolicyExpressions) {
  const any_policy p = test::ok(parse_policy("concurrency 5"));
  ASSERT_TRUE(std::holds_alternative<concurrency>(p));
  EXPECT_EQ(std::get<concurrency>(p).units(), 5);
  EXPECT_EQ(std::get<concurrency>(p).lease_length(), default_lease);
  EXPECT_EQ(format_policy(p), "concurrency 5");
  const any_policy q = test::ok(parse_policy("all(gcra 100/1m, concurrency 5 lease=2m)"));
  EXPECT_EQ(format_policy(q), "all(gcra 100/1m, concurrency 5 lease=2m)");
  EXPECT_EQ(format_policy(test::ok(parse_policy(format_policy(q)))), format_policy(q));
  for (const char* bad : {"concurrency", "concurrency x", "concurrency 5 lease=0s", "concurrency 5 lease=abc",
                          "concurrency 5 burst=3", "concurrency 5 lease", "concurrency -1"}) {
    auto e = parse_policy(bad);
    EXPECT_FALSE(e.ok()) << bad;
  }
  auto e = parse_policy("concurrency 5 lease=0s");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.err().what().find("lease"), std::string::npos) << e.err().what();
}

TEST(Concurrency, NoncesAreNeverZeroAndDoNotRepeat) {
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t n = draw_lease_nonce();
    EXPECT_NE(n, 0U);
    EXPECT_TRUE(seen.insert(n).second);
  }
}

}  // namespace
}  // namespace sluice::unit_concurrency_test
