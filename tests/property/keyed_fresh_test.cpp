// is_fresh is exactly what lossless purging needs: on random traces (clock
// stepping back) of every algorithm and of composites, a state dropped
// whenever it is fresh at an instant, with every later request on its key
// read as at least that instant (the keyed store's drop bound), decides
// exactly as the state that was kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "property/models.hpp"
#include "sluice/core/fresh.hpp"

namespace sluice::property_keyed_fresh_test {
namespace {

using namespace sluice::model;

spec spec_for(const config& c) {
  spec sp;
  sp.algo = c.algo;
  sp.limit = c.r;
  sp.origin = c.origin;
  if (c.algo == algorithm::token_bucket || c.algo == algorithm::gcra) sp.burst = c.extra;
  if (c.algo == algorithm::sliding_buckets) sp.buckets = c.extra;
  if (c.algo == algorithm::leaky_queue) sp.queue = c.extra;
  if (c.algo == algorithm::quota) sp.units = c.extra;
  return sp;
}

struct counts {
  long drops = 0;
  long clamped = 0;
};

/// One seed: `parts` random algorithms (a composite when more than one).
testing::AssertionResult dropping_fresh_changes_nothing(std::uint64_t seed, int parts, bool all, counts& n) {
  rng_t g(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(parts) * 7 + (all ? 1 : 0));
  std::vector<any_policy> ps;
  config first;
  for (int i = 0; i < parts; ++i) {
    const algorithm a = static_cast<algorithm>(g() % 10);
    const config c = random_config(a, g);
    if (i == 0) first = c;
    ps.push_back(make_policy(spec_for(c)).value());
  }
  const any_policy p = parts == 1 ? ps[0]
                       : all      ? any_policy{all_of::make(ps).value()}
                                  : any_policy{any_of::make(ps).value()};
  const auto trace = random_trace(first, g, 120, /*back=*/true);
  any_state kept = fresh_state(p);
  any_state dropped = kept;
  tick floor = std::numeric_limits<tick>::min();
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const request& q = trace[i];
    if (g() % 100 < 20) {
      const tick w = std::max<tick>(1, first.r.window);
      floor = std::max(floor, saturating_add(q.now, uniform(g, -w, 2 * (w > i64_max / 4 ? i64_max / 4 : w))));
      if (is_fresh(p, dropped, floor) && !(dropped == fresh_state(p))) {
        dropped = fresh_state(p);
        ++n.drops;
      }
    }
    const tick eff = std::max(q.now, floor);
    if (eff != q.now) ++n.clamped;
    const decision a = decide(p, kept, eff, q.cost);
    const decision b = decide(p, dropped, eff, q.cost);
    if (!(a == b))
      return testing::AssertionFailure() << "seed " << seed << " parts " << parts << " (" << first.describe()
                                         << ") step " << i << " now=" << q.now << " floor=" << floor
                                         << ": kept and dropped states decide differently";
  }
  return testing::AssertionSuccess();
}

TEST(IsFreshProperty, DroppingAFreshStateChangesNoDecision) {
  counts n;
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) ASSERT_TRUE(dropping_fresh_changes_nothing(seed, 1, true, n));
  EXPECT_GT(n.drops, 3000);
  EXPECT_GT(n.clamped, 1000);
}

TEST(IsFreshProperty, CompositesToo) {
  counts n;
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    ASSERT_TRUE(dropping_fresh_changes_nothing(seed, 2, true, n));
    ASSERT_TRUE(dropping_fresh_changes_nothing(seed, 3, false, n));
  }
  EXPECT_GT(n.drops, 200);
}

}  // namespace
}  // namespace sluice::property_keyed_fresh_test
