// The public headers' paths (docs/architecture.md, "Headers"): each
// target's headers in its folder, include/sluice/<target>/, and at every old
// flat path a forwarding header, kept for one release, that declares what
// the new path does. Every header is included here by both paths, so this
// file compiles only while both exist; the test then reads a name of each
// target's headers.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

// Each target's folder.
#include "sluice/core/algorithm.hpp"
#include "sluice/core/analysis.hpp"
#include "sluice/core/any.hpp"
#include "sluice/core/concurrency.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/detail/all_of_fold.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/detail/bytes.hpp"
#include "sluice/core/detail/debt_bound.hpp"
#include "sluice/core/detail/hash.hpp"
#include "sluice/core/detail/log_rebuild.hpp"
#include "sluice/core/detail/receipt_fields.hpp"
#include "sluice/core/detail/request_identity.hpp"
#include "sluice/core/detail/run_members.hpp"
#include "sluice/core/fixed_window.hpp"
#include "sluice/core/fresh.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/leaky_queue.hpp"
#include "sluice/core/leaky_queue_shaper.hpp"
#include "sluice/core/lease.hpp"
#include "sluice/core/limiter.hpp"
#include "sluice/core/live_limiter.hpp"
#include "sluice/core/override.hpp"
#include "sluice/core/policy_codec.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/quota.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/reconfigure.hpp"
#include "sluice/core/redact.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/report.hpp"
#include "sluice/core/report_bound.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/schedule.hpp"
#include "sluice/core/sliding_buckets.hpp"
#include "sluice/core/sliding_counter.hpp"
#include "sluice/core/sliding_log.hpp"
#include "sluice/core/store.hpp"
#include "sluice/core/store_limiter.hpp"
#include "sluice/core/store_refund.hpp"
#include "sluice/core/time.hpp"
#include "sluice/core/token_bucket.hpp"
#include "sluice/core/wait.hpp"
#include "sluice/core/worst_case.hpp"
#include "sluice/keyed/atomic_file.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"
#include "sluice/keyed/registry.hpp"
#include "sluice/keyed/snapshot.hpp"
#include "sluice/redis/store.hpp"

// The old paths, forwarding.
#include "sluice/algorithm.hpp"
#include "sluice/analysis.hpp"
#include "sluice/any.hpp"
#include "sluice/atomic_file.hpp"
#include "sluice/concurrency.hpp"
#include "sluice/decision.hpp"
#include "sluice/detail/all_of_fold.hpp"
#include "sluice/detail/arith.hpp"
#include "sluice/detail/debt_bound.hpp"
#include "sluice/detail/hash.hpp"
#include "sluice/detail/log_rebuild.hpp"
#include "sluice/detail/receipt_fields.hpp"
#include "sluice/detail/request_identity.hpp"
#include "sluice/detail/run_members.hpp"
#include "sluice/fixed_window.hpp"
#include "sluice/fresh.hpp"
#include "sluice/gcra.hpp"
#include "sluice/keyed.hpp"
#include "sluice/leaky_queue.hpp"
#include "sluice/leaky_queue_shaper.hpp"
#include "sluice/lease.hpp"
#include "sluice/limiter.hpp"
#include "sluice/live_limiter.hpp"
#include "sluice/override.hpp"
#include "sluice/policy_expr.hpp"
#include "sluice/portable.hpp"
#include "sluice/quota.hpp"
#include "sluice/rate.hpp"
#include "sluice/reconfigure.hpp"
#include "sluice/redact.hpp"
#include "sluice/redis.hpp"
#include "sluice/refund.hpp"
#include "sluice/report.hpp"
#include "sluice/report_bound.hpp"
#include "sluice/result.hpp"
#include "sluice/schedule.hpp"
#include "sluice/sliding_buckets.hpp"
#include "sluice/sliding_counter.hpp"
#include "sluice/sliding_log.hpp"
#include "sluice/snapshot.hpp"
#include "sluice/store.hpp"
#include "sluice/store/memory.hpp"
#include "sluice/store/registry.hpp"
#include "sluice/store_limiter.hpp"
#include "sluice/store_refund.hpp"
#include "sluice/time.hpp"
#include "sluice/token_bucket.hpp"
#include "sluice/wait.hpp"
#include "sluice/worst_case.hpp"

namespace sluice::unit_header_paths_test {
namespace {

TEST(HeaderPaths, TheOldPathsForwardToEachTargetsFolder) {
  // The core's: policy_expr.hpp, gcra.hpp, any.hpp.
  const auto p = parse_policy("gcra 2/1s burst=10");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(algorithm_of(p.value()), algorithm::gcra);
  // keyed's registry.hpp: its scheme table is constexpr.
  ASSERT_NE(scheme_of("redis://127.0.0.1:6379"), nullptr);
  EXPECT_EQ(scheme_of("redis://127.0.0.1:6379")->target, "sluice::redis");
  // redis's store.hpp: its figures' defaults (header only: this program
  // links the core alone).
  EXPECT_EQ(redis_store_stats{}.corrupt, 0U);
  // The core's detail/arith.hpp (not API).
  EXPECT_EQ(detail::ceil_div(7, 2), 4);
  EXPECT_EQ(detail::i64_max, std::numeric_limits<std::int64_t>::max());
}

}  // namespace
}  // namespace sluice::unit_header_paths_test
