// next_allowed_at against brute force: for random small policies of every
// algorithm and composite, in random states, the instant returned must be
// admitted and every instant from `now` up to one tick before it denied; a
// `never` must stay denied far into the future. Asking must take nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "property/sched_gen.hpp"
#include "sluice/sluice.hpp"

namespace sluice::property_schedule_test {
namespace {

using namespace sched_test;

/// How far brute force scans before trusting the answer (waits with these
/// parameters stay well below it).
constexpr tick scan = 400;

testing::AssertionResult exact_at(std::uint64_t seed, int kind) {
  rng_t g = seeded(1, kind, seed);
  const any_policy p = random_policy(kind, g);
  any_state s = fresh_state(p);
  tick now = pick(g, -50, 50);
  for (int step = 0; step < 25; ++step) {
    now += pick(g, 0, 6);
    (void)decide(p, s, now, pick(g, 1, 3));
    for (int q = 0; q < 4; ++q) {
      // Mostly forward, sometimes a clock that stepped back.
      const tick at = now + (pick(g, 0, 6) == 0 ? -pick(g, 1, 20) : pick(g, 0, 8));
      const std::int64_t cost = pick(g, 0, 5) == 0 ? pick(g, -1, 8) : pick(g, 1, 4);
      const any_state before = s;
      const tick t = next_allowed_at(p, s, at, cost);
      const auto where = [&] {
        return "seed " + std::to_string(seed) + " " + kind_name(kind) + " step " + std::to_string(step) + " at " +
               std::to_string(at) + " cost " + std::to_string(cost) + " → " +
               (t == never ? std::string("never") : std::to_string(t));
      };
      if (!(s == before)) return testing::AssertionFailure() << where() << ": asking changed the state";
      if (t != never) {
        if (t < at) return testing::AssertionFailure() << where() << ": earlier than now";
        any_state copy = s;
        if (!decide(p, copy, t, cost).allowed) return testing::AssertionFailure() << where() << ": denied then";
        for (tick u = at; u < t && u < at + scan; ++u) {
          any_state c2 = s;
          if (decide(p, c2, u, cost).allowed)
            return testing::AssertionFailure() << where() << ": already admitted at " << u;
        }
      } else {
        for (const tick u : {at, at + 1, at + 97, at + 1000, at + 100000}) {
          any_state copy = s;
          if (decide(p, copy, u, cost).allowed) return testing::AssertionFailure() << where() << ": admitted at " << u;
        }
      }
    }
  }
  return testing::AssertionSuccess();
}

TEST(NextAllowedAtProperty, ExactForEveryAlgorithmAndComposite) {
  for (int kind = 0; kind < kinds; ++kind)
    for (std::uint64_t seed = 1; seed <= 120; ++seed) ASSERT_TRUE(exact_at(seed, kind));
}

}  // namespace
}  // namespace sluice::property_schedule_test
