// Prometheus text exposition of the service's counters (metrics.hpp).
#include "metrics.hpp"

#include "sluice/core/redact.hpp"

namespace sluice::serve {

std::string seconds_text(std::uint64_t ns) {
  std::string out = std::to_string(ns / 1'000'000'000u);
  std::uint64_t frac = ns % 1'000'000'000u;
  if (frac == 0) return out;
  std::string digits = std::to_string(frac);
  digits.insert(0, 9 - digits.size(), '0');
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return out + "." + digits;
}

std::string label_value(std::string_view v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

policy_counters& metrics::for_policy(std::string_view name) {
  const std::lock_guard lock(mutex_);
  for (auto& p : policies_)
    if (p.name == name) return p;
  auto& p = policies_.emplace_back();
  p.name = std::string(name);
  return p;
}

void metrics::observe_latency(tick ns) noexcept {
  if (ns < 0) ns = 0;
  std::size_t i = 0;
  while (i < latency_bounds.size() && ns > latency_bounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  latency_count_.fetch_add(1, std::memory_order_relaxed);
  latency_sum_ns_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
}

void metrics::count_status(unsigned status) noexcept {
  if (status < status_.size()) status_[status].fetch_add(1, std::memory_order_relaxed);
}

void metrics::count_refund(refund_status s) noexcept {
  const auto i = static_cast<std::size_t>(s);
  if (i < refunds_.size()) refunds_[i].fetch_add(1, std::memory_order_relaxed);
}

void metrics::count_source(source s) noexcept {
  const auto i = static_cast<std::size_t>(s);
  if (i < sources_.size()) sources_[i].fetch_add(1, std::memory_order_relaxed);
}

namespace {

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void sample(std::string& out, std::string_view name, std::uint64_t v) {
  out += name;
  out += ' ';
  out += std::to_string(v);
  out += '\n';
}

/// A family of one sample: its HELP and TYPE lines, then its value.
void metric(std::string& out, std::string_view name, std::string_view type, std::string_view help, std::uint64_t v) {
  family(out, name, type, help);
  sample(out, name, v);
}

}  // namespace

namespace {

void render_figures(std::string& out, const store_figures& f) {
  family(out, "sluice_store_call_duration_seconds", "histogram",
         "Round trips to the remote store the service waited for (one call, or one pipeline), by duration.");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < f.latency_bounds.size() && i < f.latency_buckets.size(); ++i) {
    cumulative += f.latency_buckets[i];
    out += "sluice_store_call_duration_seconds_bucket{le=\"" +
           seconds_text(static_cast<std::uint64_t>(f.latency_bounds[i])) + "\"} " + std::to_string(cumulative) + "\n";
  }
  for (std::size_t i = f.latency_bounds.size(); i < f.latency_buckets.size(); ++i) cumulative += f.latency_buckets[i];
  out += "sluice_store_call_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += "sluice_store_call_duration_seconds_sum " + seconds_text(f.latency_sum_ns) + "\n";
  out += "sluice_store_call_duration_seconds_count " + std::to_string(cumulative) + "\n";
  family(out, "sluice_store_call_failures_total", "counter",
         "Calls to the remote store that failed, by reason: timeout, refused, io (the connection broke), auth, oom, "
         "noperm, cluster-down, busy, server (another error reply), protocol; over TLS untrusted, name-mismatch, "
         "expired, no-client-certificate, plaintext-peer, handshake.");
  for (const auto& [reason, n] : f.failures)
    out += "sluice_store_call_failures_total{reason=\"" + label_value(reason) + "\"} " + std::to_string(n) + "\n";
  if (f.evicted_keys) {
    family(out, "sluice_store_evicted_keys_total", "counter",
           "Keys the store's servers evicted since the service started (INFO stats evicted_keys): each one may "
           "have been a live state, handed out fresh again.");
    out += "sluice_store_evicted_keys_total " + std::to_string(*f.evicted_keys) + "\n";
  }
  family(out, "sluice_store_breaker_state", "gauge",
         "Each circuit breaker of the remote store (one per node of a cluster): 1 for its state now, 0 for the "
         "others.");
  for (const auto& [node, state] : f.breakers)
    for (const auto st : breaker_states)
      out += "sluice_store_breaker_state{node=\"" + label_value(redact_url(node)) + "\",state=\"" + std::string(st) +
             "\"} " + (st == state ? "1" : "0") + "\n";
  if (const auto& c = f.deny_cache) {
    family(out, "sluice_deny_cache_subscribed", "gauge",
           "1 while the deny cache hears every process's changes and may answer (never over TLS); 0 while it is "
           "emptied and bypassed.");
    out += "sluice_deny_cache_subscribed " + std::string(c->subscribed ? "1" : "0") + "\n";
    metric(out, "sluice_deny_cache_invalidations_total", "counter",
           "Invalidations heard: changes (an override, a refund) made through any process.", c->invalidations);
    metric(out, "sluice_deny_cache_subscriptions_total", "counter",
           "Subscriptions to the invalidation channel confirmed (the first, and each after one was lost).",
           c->subscriptions);
    metric(out, "sluice_deny_cache_bypassed_total", "counter",
           "Requests that went to the store because the deny cache could not answer: not subscribed, a message "
           "unread or being read, or a TLS subscription.",
           c->bypassed);
  }
}

}  // namespace

std::string metrics::render(const store_stats& store, std::optional<std::uint64_t> keys, const store_figures* figures,
                            std::optional<memory_figures> memory, std::optional<std::uint64_t> overrides) const {
  std::string out;
  out.reserve(4096);
  const auto r = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  {
    const std::lock_guard lock(mutex_);
    family(out, "sluice_decisions_total", "counter", "Checks decided, by policy and the request's result.");
    for (const auto& p : policies_) {
      const std::string l = label_value(p.name);
      out += "sluice_decisions_total{policy=\"" + l + "\",result=\"allowed\"} " + std::to_string(r(p.allowed)) + "\n";
      out += "sluice_decisions_total{policy=\"" + l + "\",result=\"denied\"} " + std::to_string(r(p.denied)) + "\n";
    }
    family(out, "sluice_shadow_decisions_total", "counter",
           "Checks of shadow rules (decided and counted, never denied), by policy and what they would have done "
           "(invalid: the rule could not read the request, so it was not decided).");
    for (const auto& p : policies_) {
      const std::string l = label_value(p.name);
      out += "sluice_shadow_decisions_total{policy=\"" + l + "\",result=\"allowed\"} " +
             std::to_string(r(p.shadow_allowed)) + "\n";
      out += "sluice_shadow_decisions_total{policy=\"" + l + "\",result=\"denied\"} " +
             std::to_string(r(p.shadow_denied)) + "\n";
      out += "sluice_shadow_decisions_total{policy=\"" + l + "\",result=\"invalid\"} " +
             std::to_string(r(p.shadow_invalid)) + "\n";
    }
    family(out, "sluice_shadow_denials_total", "counter", "Shadow checks that would have denied, by policy.");
    for (const auto& p : policies_)
      out += "sluice_shadow_denials_total{policy=\"" + label_value(p.name) + "\"} " +
             std::to_string(r(p.shadow_denied)) + "\n";
  }
  family(out, "sluice_decision_duration_seconds", "histogram", "Time to decide a request, server side.");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < latency_bounds.size(); ++i) {
    cumulative += r(buckets_[i]);
    out += "sluice_decision_duration_seconds_bucket{le=\"" +
           seconds_text(static_cast<std::uint64_t>(latency_bounds[i])) + "\"} " + std::to_string(cumulative) + "\n";
  }
  cumulative += r(buckets_.back());
  // _count is read after the buckets; +Inf must equal _count, so both print the buckets' sum.
  out += "sluice_decision_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += "sluice_decision_duration_seconds_sum " + seconds_text(r(latency_sum_ns_)) + "\n";
  out += "sluice_decision_duration_seconds_count " + std::to_string(cumulative) + "\n";

  family(out, "sluice_keys", "gauge",
         "Keys the store holds (the memory store: states; Redis: its database's keys); absent when it cannot tell.");
  if (keys) sample(out, "sluice_keys", *keys);
  if (memory) {
    metric(out, "sluice_store_bytes", "gauge",
           "Bytes the memory store's states take: slot tables and record arenas (keys included).", memory->bytes);
    metric(out, "sluice_store_bytes_per_key", "gauge",
           "sluice_store_bytes over sluice_keys (0 with no key), rounded down.",
           keys && *keys != 0 ? memory->bytes / *keys : 0);
    metric(out, "sluice_store_max_keys", "gauge", "The memory store's bound on states (store.max_keys; 0: none).",
           memory->max_keys);
    metric(out, "sluice_store_purged_total", "counter", "Fresh states the memory store dropped (lossless).",
           memory->purged);
    metric(out, "sluice_store_refused_total", "counter",
           "New keys refused at store.max_keys, answered by store.on_failure (also in sluice_store_fallbacks_total).",
           memory->refused);
  }
  family(out, "sluice_store_decisions_total", "counter",
         "Store requests this service made, by where the answer came from (the store, its deny cache, a replayed "
         "id, the failure mode: fallback, fail-open, fail-closed; or an error).");
  for (std::size_t i = 0; i < sources_.size(); ++i)
    out += "sluice_store_decisions_total{source=\"" + std::string(name_of(static_cast<source>(i))) + "\"} " +
           std::to_string(r(sources_[i])) + "\n";
  family(out, "sluice_store_errors_total", "counter",
         "Store errors, by kind: call (a call that failed: timeout, refused, a server error) or state (a request "
         "answered as an error: a value the store did not write, a bad request).");
  out += "sluice_store_errors_total{kind=\"call\"} " + std::to_string(store.store_failures) + "\n";
  out += "sluice_store_errors_total{kind=\"state\"} " + std::to_string(store.errors) + "\n";
  if (figures != nullptr) render_figures(out, *figures);
  metric(out, "sluice_store_fallbacks_total", "counter", "Requests decided by the failure mode instead of the store.",
         store.fallbacks);
  metric(out, "sluice_deny_cache_hits_total", "counter", "Denials answered by the exact local deny cache.",
         store.deny_cache_hits);
  metric(out, "sluice_clock_skew_total", "counter",
         "Requests behind a key's latest admit by more than the tolerance, or stamped ahead of the store's clock "
         "by more than it (clocks that disagree).",
         store.clock_skew);
  if (figures != nullptr && figures->clock_offset_ns) {
    // Signed: positive when this process's clock is behind the store's.
    const std::int64_t o = *figures->clock_offset_ns;
    family(out, "sluice_clock_offset_seconds", "gauge",
           "The remote store's clock minus this process's, as last measured (positive: this process is behind).");
    out += "sluice_clock_offset_seconds " + std::string(o < 0 ? "-" : "") +
           seconds_text(o < 0 ? 0 - static_cast<std::uint64_t>(o) : static_cast<std::uint64_t>(o)) + "\n";
  }

  family(out, "sluice_http_responses_total", "counter", "HTTP responses, by status code.");
  for (std::size_t code = 100; code < status_.size(); ++code) {
    const std::uint64_t v = r(status_[code]);
    if (v != 0) out += "sluice_http_responses_total{code=\"" + std::to_string(code) + "\"} " + std::to_string(v) + "\n";
  }
  family(out, "sluice_connections", "gauge", "Client connections open now.");
  out += "sluice_connections " + std::to_string(connections.load(std::memory_order_relaxed)) + "\n";
  metric(out, "sluice_connections_refused_total", "counter", "Connections closed at accept: max_connections reached.",
         r(connections_refused));
  metric(out, "sluice_connection_timeouts_total", "counter", "Connections closed by the idle or request timeout.",
         r(timeouts));
  metric(out, "sluice_bad_requests_total", "counter",
         "Requests refused for their content or a missing token (400, 401, 404, 405, 413, 431, an invalid "
         "auth_request's 403, a gRPC call's UNAUTHENTICATED); never a denial.",
         r(bad_requests));
  family(out, "sluice_refunds_total", "counter", "POST /v1/refund answers, by outcome (semantics.md, \"Refunds\").");
  for (std::size_t i = 0; i < refund_status_count; ++i)
    out += "sluice_refunds_total{outcome=\"" + std::string(name_of(static_cast<refund_status>(i))) + "\"} " +
           std::to_string(refunds_[i].load(std::memory_order_relaxed)) + "\n";
  family(out, "sluice_config_reloads_total", "counter", "Configuration reloads, by result.");
  out += "sluice_config_reloads_total{result=\"applied\"} " + std::to_string(r(reloads_ok)) + "\n";
  out += "sluice_config_reloads_total{result=\"refused\"} " + std::to_string(r(reloads_failed)) + "\n";
  family(out, "sluice_lease_releases_total", "counter",
         "POST /v1/release, by result: released, not held (404: never issued, released or expired), failed (503).");
  out += "sluice_lease_releases_total{result=\"released\"} " + std::to_string(r(leases_released)) + "\n";
  out += "sluice_lease_releases_total{result=\"not_held\"} " + std::to_string(r(leases_not_held)) + "\n";
  out += "sluice_lease_releases_total{result=\"failed\"} " + std::to_string(r(release_failures)) + "\n";
  if (overrides) {
    metric(out, "sluice_overrides", "gauge", "Keys with a limit of their own (semantics.md, \"Overrides\").",
           *overrides);
  }
  family(out, "sluice_override_changes_total", "counter", "Overrides changed through the admin API, by operation.");
  out += "sluice_override_changes_total{op=\"create\"} " + std::to_string(r(overrides_created)) + "\n";
  out += "sluice_override_changes_total{op=\"replace\"} " + std::to_string(r(overrides_replaced)) + "\n";
  out += "sluice_override_changes_total{op=\"delete\"} " + std::to_string(r(overrides_deleted)) + "\n";
  return out;
}

}  // namespace sluice::serve
