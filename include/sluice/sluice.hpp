// Everything in sluice's core, in one include.
#pragma once

#include "sluice/core/algorithm.hpp"           // IWYU pragma: export
#include "sluice/core/analysis.hpp"            // IWYU pragma: export
#include "sluice/core/any.hpp"                 // IWYU pragma: export
#include "sluice/core/concurrency.hpp"         // IWYU pragma: export
#include "sluice/core/decision.hpp"            // IWYU pragma: export
#include "sluice/core/fixed_window.hpp"        // IWYU pragma: export
#include "sluice/core/gcra.hpp"                // IWYU pragma: export
#include "sluice/core/leaky_queue.hpp"         // IWYU pragma: export
#include "sluice/core/leaky_queue_shaper.hpp"  // IWYU pragma: export
#include "sluice/core/lease.hpp"               // IWYU pragma: export
#include "sluice/core/limiter.hpp"             // IWYU pragma: export
#include "sluice/core/live_limiter.hpp"        // IWYU pragma: export
#include "sluice/core/policy_expr.hpp"         // IWYU pragma: export
#include "sluice/core/quota.hpp"               // IWYU pragma: export
#include "sluice/core/rate.hpp"                // IWYU pragma: export
#include "sluice/core/reconfigure.hpp"         // IWYU pragma: export
#include "sluice/core/refund.hpp"              // IWYU pragma: export
#include "sluice/core/report.hpp"              // IWYU pragma: export
#include "sluice/core/result.hpp"              // IWYU pragma: export
#include "sluice/core/schedule.hpp"            // IWYU pragma: export
#include "sluice/core/sliding_buckets.hpp"     // IWYU pragma: export
#include "sluice/core/sliding_counter.hpp"     // IWYU pragma: export
#include "sluice/core/sliding_log.hpp"         // IWYU pragma: export
#include "sluice/core/store.hpp"               // IWYU pragma: export
#include "sluice/core/store_limiter.hpp"       // IWYU pragma: export
#include "sluice/core/time.hpp"                // IWYU pragma: export
#include "sluice/core/token_bucket.hpp"        // IWYU pragma: export
#include "sluice/core/wait.hpp"                // IWYU pragma: export
#include "sluice/core/worst_case.hpp"          // IWYU pragma: export
