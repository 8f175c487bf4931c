// What the HTTP front end's request handling shares between its files
// (private to src/serve/http): http_api.cpp routes, authorizes and
// administers; json_api.cpp answers the JSON endpoints (/v1/decide,
// /v1/report, /v1/release). The gate an answer is handed over through, and
// the helpers that write answers.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "decide.hpp"
#include "http_api.hpp"
#include "metrics.hpp"
#include "rules.hpp"
#include "service.hpp"

namespace sluice::serve {

// How one request's answer is handed over (http_api::handle): whoever
// finishes second — the route that made the calls, or the last call's
// completion — decides whether the caller is told later (`done`).
struct http_api::answer_gate {
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

/// A decision's figures in a JSON answer, each after a comma:
/// "remaining", "retry_after" (whole seconds, null for never),
/// "retry_after_ns" and "reset_after_ns" (ns_or_never).
void append_figures(std::string& out, const decision& d);

/// RateLimit-Policy, RateLimit (when the checks' figures are known),
/// Retry-After and Cache-Control for an outcome. A check whose key has an
/// override (semantics.md, "Overrides") advertises the override: asked of
/// the service without a call (service::override_seen).
void write_rate_fields(const service::active& a, std::span<const planned_check> checks, const checks_outcome& o,
                       http_response& res, const service& svc);

}  // namespace sluice::serve
