// Everything in sluice's core, in one include.
#pragma once

#include "sluice/algorithm.hpp"           // IWYU pragma: export
#include "sluice/analysis.hpp"            // IWYU pragma: export
#include "sluice/any.hpp"                 // IWYU pragma: export
#include "sluice/concurrency.hpp"         // IWYU pragma: export
#include "sluice/decision.hpp"            // IWYU pragma: export
#include "sluice/fixed_window.hpp"        // IWYU pragma: export
#include "sluice/gcra.hpp"                // IWYU pragma: export
#include "sluice/leaky_queue.hpp"         // IWYU pragma: export
#include "sluice/leaky_queue_shaper.hpp"  // IWYU pragma: export
#include "sluice/lease.hpp"               // IWYU pragma: export
#include "sluice/limiter.hpp"             // IWYU pragma: export
#include "sluice/live_limiter.hpp"        // IWYU pragma: export
#include "sluice/policy_expr.hpp"         // IWYU pragma: export
#include "sluice/quota.hpp"               // IWYU pragma: export
#include "sluice/rate.hpp"                // IWYU pragma: export
#include "sluice/reconfigure.hpp"         // IWYU pragma: export
#include "sluice/refund.hpp"              // IWYU pragma: export
#include "sluice/report.hpp"              // IWYU pragma: export
#include "sluice/result.hpp"              // IWYU pragma: export
#include "sluice/schedule.hpp"            // IWYU pragma: export
#include "sluice/sliding_buckets.hpp"     // IWYU pragma: export
#include "sluice/sliding_counter.hpp"     // IWYU pragma: export
#include "sluice/sliding_log.hpp"         // IWYU pragma: export
#include "sluice/store.hpp"               // IWYU pragma: export
#include "sluice/store_limiter.hpp"       // IWYU pragma: export
#include "sluice/time.hpp"                // IWYU pragma: export
#include "sluice/token_bucket.hpp"        // IWYU pragma: export
#include "sluice/wait.hpp"                // IWYU pragma: export
#include "sluice/worst_case.hpp"          // IWYU pragma: export
