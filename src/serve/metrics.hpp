// The service's counters and their Prometheus text exposition (format
// 0.0.4). Recording is relaxed atomics only (no lock on the decision path);
// a policy's counters are created once, by name, and live as long as the
// registry, so a reload that keeps a policy keeps its counts.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/core/store.hpp"
#include "sluice/core/time.hpp"

namespace sluice::serve {

/// Counts of one policy's checks.
struct policy_counters {
  std::string name;
  std::atomic<std::uint64_t> allowed{0};         ///< checks of admitted requests
  std::atomic<std::uint64_t> denied{0};          ///< checks of denied requests
  std::atomic<std::uint64_t> shadow_allowed{0};  ///< shadow checks that admitted
  std::atomic<std::uint64_t> shadow_denied{0};   ///< shadow checks that would have denied
  std::atomic<std::uint64_t> shadow_invalid{0};  ///< shadow checks whose rule could not read the request
};

/// A store's own figures, read at each scrape through `store::figures`
/// (sluice/store.hpp).
using store_figures = sluice::store_figures;

/// The breaker states a `store_figures` may name, in the exposition's order.
inline constexpr std::array<std::string_view, 3> breaker_states{"closed", "open", "half-open"};

/// The memory store's own figures for /metrics.
struct memory_figures {
  std::uint64_t bytes = 0;     ///< bytes its states take (keyed_stats::bytes)
  std::uint64_t purged = 0;    ///< fresh states dropped so far
  std::uint64_t refused = 0;   ///< new keys refused at max_keys
  std::uint64_t max_keys = 0;  ///< the bound (0: none)
};

/// Every metric of one service. Thread-safe.
class metrics {
 public:
  /// The bounds of the latency histogram, in nanoseconds.
  static constexpr std::array<tick, 14> latency_bounds{1'000,     2'500,      5'000,       10'000,       25'000,
                                                       50'000,    100'000,    250'000,     500'000,      1'000'000,
                                                       2'500'000, 10'000'000, 100'000'000, 1'000'000'000};

  /// The counters of the policy named `name`, created at the first call.
  /// The reference stays valid for the registry's lifetime.
  policy_counters& for_policy(std::string_view name);

  /// Records one decision's server-side time.
  void observe_latency(tick ns) noexcept;

  /// Counts one response by status code (2xx, 4xx, ... are kept per code).
  void count_status(unsigned status) noexcept;

  /// Counts one store request the service made (a request's enforced
  /// checks, or one shadow check) by where its answer came from.
  void count_source(source s) noexcept;

  /// Counts one POST /v1/refund answered by the store, by its outcome
  /// (sluice_refunds_total).
  void count_refund(refund_status s) noexcept;

  std::atomic<std::int64_t> connections{0};           ///< open now
  std::atomic<std::uint64_t> connections_refused{0};  ///< closed at accept (max_connections)
  std::atomic<std::uint64_t> timeouts{0};             ///< connections closed by the idle or request timeout
  std::atomic<std::uint64_t> reloads_ok{0};           ///< configurations applied
  std::atomic<std::uint64_t> reloads_failed{0};       ///< configurations refused
  /// Requests refused for their content (or a missing token, on HTTP or
  /// gRPC): never a denial, never a refused reload.
  std::atomic<std::uint64_t> bad_requests{0};
  /// POST /v1/release: leases released, ids that held none (404), and
  /// releases the store could not make (503).
  std::atomic<std::uint64_t> leases_released{0};
  std::atomic<std::uint64_t> leases_not_held{0};
  std::atomic<std::uint64_t> release_failures{0};
  /// Overrides changed through the admin API (semantics.md, "Overrides"),
  /// by operation: created, replaced, deleted.
  std::atomic<std::uint64_t> overrides_created{0};
  std::atomic<std::uint64_t> overrides_replaced{0};
  std::atomic<std::uint64_t> overrides_deleted{0};

  /// The exposition: every family with HELP and TYPE, `store` giving the
  /// store's own counts (errors, fallbacks, deny-cache hits, clock skew) and
  /// `keys` the keys it holds (left out when it cannot tell).
  /// `figures`, when given, adds the remote store's call latency, failures
  /// by reason and breaker states; `memory` the memory store's bytes, purges
  /// and bound (left out for others). `overrides`: the overrides the store
  /// holds (`sluice_overrides`, left out when it cannot tell).
  [[nodiscard]] std::string render(const store_stats& store, std::optional<std::uint64_t> keys,
                                   const store_figures* figures = nullptr,
                                   std::optional<memory_figures> memory = std::nullopt,
                                   std::optional<std::uint64_t> overrides = std::nullopt) const;

 private:
  mutable std::mutex mutex_;
  std::deque<policy_counters> policies_;  // deque: references stay valid as it grows
  std::array<std::atomic<std::uint64_t>, latency_bounds.size() + 1> buckets_{};
  std::atomic<std::uint64_t> latency_count_{0};
  std::atomic<std::uint64_t> latency_sum_ns_{0};
  std::array<std::atomic<std::uint64_t>, 600> status_{};                   // index: status code 0..599
  std::array<std::atomic<std::uint64_t>, source_count> sources_{};         // index: sluice::source
  std::array<std::atomic<std::uint64_t>, refund_status_count> refunds_{};  // index: sluice::refund_status
};

/// `ns` as seconds with up to nine decimals ("0.000012", "3", "1.5").
std::string seconds_text(std::uint64_t ns);

/// A Prometheus label value with \\, \" and \n escaped.
std::string label_value(std::string_view v);

}  // namespace sluice::serve
