// The FIFO shaper against the bare leaky-queue meter on random traffic:
// with due items drained before each offer, every offer gets the meter's
// decision and the release instant it implies; items come out in the order
// they were accepted, never before their release instant and never after a
// drain that was due to hand them out; no more than Q items are ever held,
// even when the consumer falls behind.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "property/sched_gen.hpp"
#include "sluice/sluice.hpp"

namespace sluice::property_leaky_queue_shaper_test {
namespace {

using namespace sched_test;

struct tagged {
  int id;
  tick release_at;
};

testing::AssertionResult agrees_with_the_meter(std::uint64_t seed, bool lagging) {
  rng_t g = seeded(6, lagging ? 1 : 0, seed);
  const leaky_queue p = leaky_queue::make(rate{pick(g, 1, 3), pick(g, 1, 20)}, pick(g, 1, 6)).value();
  leaky_queue_shaper<tagged> q(p);
  leaky_queue::state meter;
  std::vector<tagged> accepted;
  std::vector<tagged> out;
  tick now = pick(g, -20, 20);
  int next_id = 0;
  const auto fail = [&](const std::string& what) {
    return testing::AssertionFailure() << "seed " << seed << (lagging ? " (lagging)" : "") << ": " << what;
  };
  // Items carry their id; the instant the shaper gave each is in `accepted`
  // (FIFO: the n-th item out is the n-th accepted).
  const auto drain = [&] {
    for (const tagged& t : q.drain(now)) {
      if (out.size() >= accepted.size() || accepted[out.size()].release_at > now) return false;
      out.push_back(t);
    }
    return true;
  };
  for (int step = 0; step < 120; ++step) {
    now += pick(g, 0, 4) == 0 ? pick(g, 0, 30) : pick(g, 0, 3);
    const bool drained = !lagging || pick(g, 0, 3) == 0;
    if (drained && !drain()) return fail("an item came out before its release instant, or unasked");
    if (drained && q.next_release() <= now) return fail("a due item was left behind");
    const std::int64_t cost = pick(g, 0, 8) == 0 ? pick(g, 1, 9) : pick(g, 1, 2);
    const int id = next_id++;
    const auto r = q.offer(tagged{id, 0}, now, cost);
    if (r.status == leaky_queue_shaper<tagged>::verdict::backlogged) {
      if (drained) return fail("backlogged although drained");
      if (static_cast<std::int64_t>(q.size()) < p.queue()) return fail("backlogged with room to spare");
    } else {
      const decision d = decide(p, meter, now, cost);
      if (!(r.meter == d)) return fail("the shaper's decision differs from the meter's");
      if (r.accepted() != d.allowed) return fail("accepted differs");
      if (d.allowed) {
        if (r.release_at != now + d.release_after) return fail("wrong release instant");
        accepted.push_back(tagged{id, r.release_at});
      } else if (r.retry_after != d.retry_after) {
        return fail("wrong retry_after");
      }
    }
    if (static_cast<std::int64_t>(q.size()) > p.queue()) return fail("more than Q items held");
    if (!(q.meter_state() == meter)) return fail("the meter states differ");
  }
  now += 100000;
  if (!drain()) return fail("late drain");
  if (out.size() != accepted.size()) return fail("items lost or duplicated");
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i].id != accepted[i].id) return fail("out of order at " + std::to_string(i));
  return testing::AssertionSuccess();
}

TEST(LeakyQueueShaperProperty, DecidesAsTheMeterAndReleasesInOrder) {
  for (std::uint64_t seed = 1; seed <= 500; ++seed) {
    ASSERT_TRUE(agrees_with_the_meter(seed, false));
    ASSERT_TRUE(agrees_with_the_meter(seed, true));
  }
}

}  // namespace
}  // namespace sluice::property_leaky_queue_shaper_test
