// What the decision service's request handling shares between its files
// (private to src/serve): service.cpp routes, authorizes and administers;
// json_api.cpp answers the JSON endpoints (/v1/decide, /v1/report,
// /v1/release). The configuration in force, the gate an answer is handed
// over through, and the helpers that write answers.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "decide.hpp"
#include "metrics.hpp"
#include "rules.hpp"
#include "service.hpp"

namespace sluice::serve {

/// A configuration in force: its rules, the store's ids of its policies,
/// and what its answers advertise.
struct service::active {
  std::shared_ptr<const config> cfg;
  rule_set rules;
  policy_view view;                         // the store's ids and the counters, per cfg->policies index
  std::vector<std::string> policy_members;  // RateLimit-Policy member per policy ("" if none)
  std::vector<std::string> encoded;         // encode_policy bytes per policy, to tell changes

  explicit active(std::shared_ptr<const config> c) : cfg(c), rules(*c) {}

  [[nodiscard]] std::optional<std::size_t> policy_index(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < cfg->policies.size(); ++i)
      if (cfg->policies[i].name == name) return i;
    return std::nullopt;
  }
};

// How one request's answer is handed over (service::handle): whoever
// finishes second — the route that made the calls, or the last call's
// completion — decides whether the caller is told later (`done`).
struct service::answer_gate {
  explicit answer_gate(answered d) : done(std::move(d)) {}
  answered done;
  std::atomic<int> state{0};  // 0: being routed, 1: routed (answer pending), 2: answered
  /// The route has returned: true when the answer is already complete.
  bool routed() { return state.exchange(1, std::memory_order_acq_rel) == 2; }
  /// The answer is complete: counted, and the caller told if it is waiting.
  void complete(metrics& m, const http_response& res) {
    m.count_status(res.status);
    if (state.exchange(2, std::memory_order_acq_rel) == 1) {
      answered d = std::move(done);  // what it holds is let go here, not when the gate goes
      d();
    }
  }
};

/// {"error":{"field":...,"message":...}} and a newline.
std::string error_body(std::string_view field, std::string_view message);

/// A request refused for its content (or for lacking the token): its answer,
/// counted in sluice_bad_requests_total. A denial is not one.
void bad_request(metrics& m, http_response& res, unsigned status, std::string_view field, std::string_view message);

/// An instant in a JSON answer: its number, or "never".
std::string ns_or_never(tick t);

/// RateLimit-Policy, RateLimit (when the checks' figures are known),
/// Retry-After and Cache-Control for an outcome. A check whose key has an
/// override (semantics.md, "Overrides") advertises the override: asked of
/// `st` without a call (store::override_seen).
void write_rate_fields(const service::active& a, std::span<const planned_check> checks, const checks_outcome& o,
                       http_response& res, store& st);

}  // namespace sluice::serve
