// The one decision path of the service's front ends (HTTP's /v1/decide and
// /v1/authorize, Envoy's gRPC ShouldRateLimit): a request's planned checks
// in, their outcome out, without waiting on the store. The enforced checks
// go to the store as one atomic all_of request; every shadow check alone,
// on its own state (semantics.md, "Shadow rules"). All of a request's
// store calls are made at once (pipelined by the store's client); the
// outcome is handed over when the last one has answered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "metrics.hpp"
#include "rules.hpp"
#include "sluice/core/store.hpp"

namespace sluice::serve {

/// The policies of one configuration as the decision path reads them: the
/// store's id and the counters of each (`ids[i]` and `counters[i]` are
/// those of the configuration's `policies[i]`).
struct policy_view {
  std::vector<policy_id> ids;
  std::vector<policy_counters*> counters;
};

/// What a request's checks decided.
struct checks_outcome {
  decision d{};  ///< the request's decision (all_of over the enforced checks)
  source from = source::store;
  bool any_enforced = false;
  std::vector<std::size_t> enforced;   ///< indexes into the planned checks, one per store check
  std::vector<std::int64_t> cost;      ///< per enforced check, as decided
  std::vector<decision> per;           ///< per enforced check
  std::vector<std::optional<tick>> t;  ///< RateLimit t per enforced check (ns)
  std::vector<decision> shadow;        ///< per planned check (meaningful for decided shadow ones)
  std::vector<source> shadow_from;     ///< per planned check, as `shadow`
  std::uint64_t lease = 0;             ///< the enforced admit's lease nonce (0: none; semantics.md, "Leases")
  std::string refund_id;               ///< the id a refund takes (store::refund_id), when the request has one
};

/// The check limit, counted here for every front end: whether the store
/// checks `checks` make stay within max_checks — one per distinct
/// (policy, key) of the enforced checks (decide_checks joins two naming one
/// into one, at the larger cost); a shadow check counts none (it is decided
/// alone). A front end refuses a request past it with its own words, before
/// deciding anything.
[[nodiscard]] bool within_check_limit(std::span<const planned_check> checks) noexcept;

/// Receives a request's outcome, with its checks, once.
using checks_decided = std::function<void(const std::vector<planned_check>& checks, const checks_outcome& o)>;

/// Decides `checks` (within_check_limit) at `now` (`id`: the request id,
/// empty for none): the
/// enforced ones as one atomic all_of store request, each at its own cost
/// (two checks naming one (policy, key) are one, at the larger cost); each
/// shadow check alone under the `%shadow:` key space. Counts sources and
/// per-policy decisions in `m`. `then` runs once, when every call has
/// answered: before this returns (then it returns true) or later on a
/// thread of the store's (false). `view` (and what `owner` keeps alive)
/// must outlive that; `owner` is held until then.
bool decide_checks(store& st, metrics& m, const policy_view& view, std::shared_ptr<const void> owner,
                   std::vector<planned_check> checks, tick now, std::string id, checks_decided then);

}  // namespace sluice::serve
