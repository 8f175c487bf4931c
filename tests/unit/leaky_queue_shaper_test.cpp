// The FIFO leaky queue shaper: the chapter's examples (a burst of 20 into a
// queue of 15; offer 10, drain 3, offer 8, drain the rest), with explicit
// times in milliseconds and one unit leaving per second.
#include "sluice/core/leaky_queue_shaper.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/sluice.hpp"
#include "unit/rows.hpp"

namespace sluice::unit_leaky_queue_shaper_test {
namespace {

using test::N;
using shaper = leaky_queue_shaper<std::string>;

std::string req(int i) { return "req-" + std::to_string(i); }

/// Units the meter counts at `now` (release at or after now).
std::int64_t in_queue(const shaper& s, tick now) {
  return static_cast<std::int64_t>(s.policy().in_queue(s.meter_state(), now));
}

TEST(LeakyQueueShaper, TwentyAtOnceIntoFifteen) {
  shaper q(test::ok(leaky_queue::make(rate{1, 1000}, 15)));
  for (int i = 0; i < 20; ++i) {
    const shaper::offer_result r = q.offer(req(i), 0);
    if (i < 15) {
      EXPECT_TRUE(r.accepted()) << i;
      EXPECT_EQ(r.release_at, i * 1000) << i;
    } else {
      EXPECT_EQ(r.status, shaper::verdict::rejected) << i;
      EXPECT_EQ(r.retry_after, 1) << i;  // the unit leaving at 0 frees a place just after
      EXPECT_EQ(r.release_at, N);
    }
    EXPECT_LE(q.size(), 15u);
  }
  // Released one per second, in submission order.
  std::vector<std::string> out;
  for (tick now = 0; now <= 20000; now += 1000) {
    const std::vector<std::string> got = q.drain(now);
    EXPECT_LE(got.size(), 1u) << "at " << now;
    out.insert(out.end(), got.begin(), got.end());
  }
  ASSERT_EQ(out.size(), 15u);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(out[static_cast<std::size_t>(i)], req(i));
  EXPECT_TRUE(q.empty());
}

TEST(LeakyQueueShaper, NothingBeforeItsTime) {
  shaper q(test::ok(leaky_queue::make(rate{1, 1000}, 15)));
  ASSERT_TRUE(q.offer(req(0), 0).accepted());
  ASSERT_TRUE(q.offer(req(1), 0).accepted());
  EXPECT_EQ(q.drain(0), std::vector<std::string>{req(0)});
  EXPECT_TRUE(q.drain(999).empty());
  EXPECT_EQ(q.next_release(), 1000);
  EXPECT_EQ(q.drain(1000), std::vector<std::string>{req(1)});
  EXPECT_EQ(q.next_release(), N);
}

/// Offer 10, drain 3, offer 8, drain the rest: FIFO across both batches, and
/// never more than Q waiting.
void offer_drain_offer(std::int64_t capacity, std::size_t accepted_second) {
  SCOPED_TRACE("Q = " + std::to_string(capacity));
  shaper q(test::ok(leaky_queue::make(rate{1, 1000}, capacity)));
  std::vector<std::string> accepted;
  const auto check_capacity = [&](tick now) {
    EXPECT_LE(static_cast<std::int64_t>(q.size()), capacity);
    EXPECT_LE(in_queue(q, now), capacity);
  };
  for (int i = 0; i < 10; ++i) {
    const shaper::offer_result r = q.offer("a" + std::to_string(i), 0);
    ASSERT_TRUE(r.accepted());
    accepted.push_back("a" + std::to_string(i));
    check_capacity(0);
  }
  // "Leak out 3": at 2.5 s the units of 0, 1 and 2 s have left.
  std::vector<std::string> out = q.drain(2500);
  ASSERT_EQ(out.size(), 3u);
  check_capacity(2500);
  std::size_t second = 0;
  for (int i = 0; i < 8; ++i) {
    const shaper::offer_result r = q.offer("b" + std::to_string(i), 2500);
    if (r.accepted()) {
      ++second;
      accepted.push_back("b" + std::to_string(i));
    } else {
      EXPECT_EQ(r.status, shaper::verdict::rejected);
      EXPECT_GT(r.retry_after, 0);
    }
    check_capacity(2500);
  }
  EXPECT_EQ(second, accepted_second);
  for (tick now = 3000; now <= 30000; now += 500) {
    const std::vector<std::string> got = q.drain(now);
    out.insert(out.end(), got.begin(), got.end());
    check_capacity(now);
  }
  EXPECT_EQ(out, accepted);  // FIFO across both batches
  EXPECT_TRUE(q.empty());
}

TEST(LeakyQueueShaper, OfferTenDrainThreeOfferEight) {
  offer_drain_offer(10, 3);  // 7 still waiting: room for 3
  offer_drain_offer(15, 8);  // room for all 8
}

TEST(LeakyQueueShaper, ABackloggedConsumerCannotGrowTheQueue) {
  shaper q(test::ok(leaky_queue::make(rate{1, 1000}, 2)));
  ASSERT_TRUE(q.offer(req(0), 0).accepted());
  ASSERT_TRUE(q.offer(req(1), 0).accepted());
  // By 5 s both have left the meter, but nobody drained them.
  const shaper::offer_result r = q.offer(req(2), 5000);
  EXPECT_EQ(r.status, shaper::verdict::backlogged);
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.drain(5000).size(), 2u);
  EXPECT_TRUE(q.offer(req(2), 5000).accepted());
}

TEST(LeakyQueueShaper, CostsAndNever) {
  shaper q(test::ok(leaky_queue::make(rate{1, 1000}, 3)));
  const shaper::offer_result big = q.offer(req(0), 0, 4);
  EXPECT_EQ(big.status, shaper::verdict::rejected);
  EXPECT_EQ(big.retry_after, N);
  const shaper::offer_result three = q.offer(req(1), 0, 3);
  ASSERT_TRUE(three.accepted());
  EXPECT_EQ(three.release_at, 2000);  // its last unit leaves at 2 s
  EXPECT_EQ(q.next_offer_at(0), 1);
  EXPECT_TRUE(q.drain(1999).empty());
  EXPECT_EQ(q.drain(2000).size(), 1u);
}

TEST(LeakyQueueShaper, ARejectedItemStaysWithTheCaller) {
  leaky_queue_shaper<std::unique_ptr<int>> q(test::ok(leaky_queue::make(rate{1, 1000}, 1)));
  auto first = std::make_unique<int>(1);
  auto second = std::make_unique<int>(2);
  ASSERT_TRUE(q.offer(std::move(first), 0).accepted());
  EXPECT_FALSE(q.offer(std::move(second), 0).accepted());
  ASSERT_NE(second, nullptr);  // NOLINT(bugprone-use-after-move): not moved on rejection
  EXPECT_EQ(*second, 2);
  const auto out = q.drain(0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(*out[0], 1);
}

TEST(LeakyQueueShaper, ZeroRateRejectsEverything) {
  shaper q(test::ok(leaky_queue::make(rate{0, 1000}, 3)));
  const shaper::offer_result r = q.offer(req(0), 0);
  EXPECT_EQ(r.status, shaper::verdict::rejected);
  EXPECT_EQ(r.retry_after, N);
}

}  // namespace
}  // namespace sluice::unit_leaky_queue_shaper_test
