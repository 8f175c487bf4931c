// The decision service's JSON endpoints: POST /v1/decide, /v1/report and
// /v1/release (docs/serve.md), their bodies read and checked field by
// field, and their answers written. Routed by http_api::route
// (http_api.cpp), which has checked method and token.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "http_parts.hpp"
#include "json_body.hpp"
#include "lease_token.hpp"
#include "release.hpp"
#include "sluice/core/lease.hpp"
#include "wire.hpp"

namespace sluice::serve {

namespace {

// Whether a JSON value is a cost: a whole number from 1 to 2^63 - 1.
bool whole_cost(const nlohmann::json& v) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() >= 1 && v.get<std::uint64_t>() <= INT64_MAX;
  return v.get<std::int64_t>() >= 1;
}

}  // namespace

std::optional<http_api::json_request> http_api::parse_json_request(const active& a, const http_request& req,
                                                                   http_response& res) {
  using nlohmann::json;
  auto parsed = parse_json_object(req.body, R"({"checks":[{"policy":"api","key":"alice"}]})");
  if (!parsed) {
    bad_request(metrics_, res, 400, parsed.err().field, parsed.err().message);
    return std::nullopt;
  }
  json doc = std::move(parsed).value();
  const config& c = *a.cfg;
  json_request out;
  std::vector<planned_check>& checks = out.checks;
  std::int64_t cost = 1;
  std::string& id = out.id;
  std::optional<tick>& now = out.now;
  const auto read_check = [&](const json& j, const std::string& where) -> bool {
    if (!j.is_object()) {
      bad_request(metrics_, res, 400, where, "must be an object {\"policy\": ..., \"key\": ...}");
      return false;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() != "policy" && it.key() != "key" && it.key() != "cost") {
        bad_request(metrics_, res, 400, where + "." + it.key(), "unknown field (a check has policy, key and cost)");
        return false;
      }
    }
    std::int64_t own_cost = 0;  // 0: the request's
    if (const auto oc = j.find("cost"); oc != j.end()) {
      if (!whole_cost(*oc)) {
        bad_request(metrics_, res, 400, where + ".cost", "must be a whole number of at least 1");
        return false;
      }
      own_cost = oc->get<std::int64_t>();
    }
    const auto p = j.find("policy");
    if (p == j.end() || !p->is_string()) {
      bad_request(metrics_, res, 400, where + ".policy", "must be the name of a policy (a string)");
      return false;
    }
    const auto idx = a.policy_index(p->get_ref<const std::string&>());
    if (!idx) {
      bad_request(metrics_, res, 400, where + ".policy", "unknown policy '" + p->get<std::string>() + "'");
      return false;
    }
    const auto k = j.find("key");
    if (k == j.end() || !k->is_string()) {
      bad_request(metrics_, res, 400, where + ".key", "must be a string");
      return false;
    }
    if (k->get_ref<const std::string&>().size() > c.lim.key_bytes) {
      bad_request(metrics_, res, 400, where + ".key", "longer than " + std::to_string(c.lim.key_bytes) + " bytes");
      return false;
    }
    for (std::size_t i = 0; i < checks.size(); ++i) {
      if (checks[i].policy == *idx && checks[i].key == k->get_ref<const std::string&>()) {
        bad_request(metrics_, res, 400, where, "names the same policy and key as checks[" + std::to_string(i) + "]");
        return false;
      }
    }
    checks.push_back(planned_check{*idx, k->get<std::string>(), own_cost, false, 0});
    return true;
  };
  bool shorthand = false;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& f = it.key();
    const json& v = it.value();
    if (f == "checks") {
      if (!v.is_array() || v.empty()) {
        bad_request(metrics_, res, 400, "checks", "must be a non-empty array of {\"policy\": ..., \"key\": ...}");
        return std::nullopt;
      }
      if (v.size() > max_checks) {
        bad_request(metrics_, res, 400, "checks", "at most " + std::to_string(max_checks) + " checks");
        return std::nullopt;
      }
      for (std::size_t i = 0; i < v.size(); ++i)
        if (!read_check(v[i], "checks[" + std::to_string(i) + "]")) return std::nullopt;
    } else if (f == "policy" || f == "key") {
      shorthand = true;
    } else if (f == "cost") {
      if (!whole_cost(v)) {
        bad_request(metrics_, res, 400, "cost", "must be a whole number of at least 1");
        return std::nullopt;
      }
      cost = v.get<std::int64_t>();
    } else if (f == "id") {
      if (!v.is_string() || v.get_ref<const std::string&>().size() > 256) {
        bad_request(metrics_, res, 400, "id", "must be a string of at most 256 bytes");
        return std::nullopt;
      }
      id = v.get<std::string>();
    } else if (f == "now") {
      if (!c.client_time) {
        bad_request(metrics_, res, 400, "now", "not accepted: server.client_time is off");
        return std::nullopt;
      }
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX)) {
        bad_request(metrics_, res, 400, "now", "must be a whole number of ticks (ns)");
        return std::nullopt;
      }
      now = v.get<std::int64_t>();
    } else {
      bad_request(metrics_, res, 400, f, "unknown field (known: checks, policy, key, cost, id, now)");
      return std::nullopt;
    }
  }
  if (shorthand) {
    if (!checks.empty()) {
      bad_request(metrics_, res, 400, "checks", "give either checks or policy and key, not both");
      return std::nullopt;
    }
    json one = json::object();
    if (doc.contains("policy")) one["policy"] = doc["policy"];
    if (doc.contains("key")) one["key"] = doc["key"];
    if (!read_check(one, "checks[0]")) return std::nullopt;
  }
  if (checks.empty()) {
    bad_request(metrics_, res, 400, "checks", "must name at least one check ({\"policy\": ..., \"key\": ...})");
    return std::nullopt;
  }
  for (auto& pc : checks)
    if (pc.cost == 0) pc.cost = cost;
  return out;
}

bool http_api::decide_json(std::shared_ptr<const active> ap, const http_request& req, http_response& res,
                           const std::shared_ptr<answer_gate>& gate) {
  auto parsed = parse_json_request(*ap, req, res);
  if (!parsed) return false;
  std::vector<planned_check> checks = std::move(parsed->checks);
  const std::string id = std::move(parsed->id);
  const std::optional<tick> now = parsed->now;
  const tick t0 = steady_clock::now();
  svc_.decide(ap, std::move(checks), now ? *now : svc_.now(), id,
              [this, ap, &res, gate, t0, id](const std::vector<planned_check>& cs, const checks_outcome& o) {
                metrics_.observe_latency(steady_clock::now() - t0);
                // Written on whichever thread answered: a writer that throws
                // (memory running out) costs this request a 500, not that thread.
                try {
                  write_decision(*ap, cs, id, o, res);
                } catch (const std::exception&) {
                  internal_error(res);
                }
                gate->complete(metrics_, res);
              });
  return true;
}

void http_api::write_decision(const active& a, const std::vector<planned_check>& checks, const std::string& id,
                              const checks_outcome& o, http_response& res) {
  const config& c = *a.cfg;
  if (o.from == source::id_conflict) {
    // The id was first used for another request (other policies, keys,
    // costs or order): refused, nothing decided or charged (semantics.md,
    // "Request ids"), the same on every store.
    bad_request(metrics_, res, 409, "id",
                "already used for a request with other checks (policies, keys, costs or their order); a request id "
                "names one request");
    return;
  }
  // A store error is the service's failure, not a limit: 500, the body
  // saying so ("source":"error"), never an admit.
  res.status = o.d.allowed ? 200 : (o.from == source::error ? 500 : 429);
  res.content_type = "application/json";
  std::string& b = res.body;
  b = "{\"allowed\":";
  b += o.d.allowed ? "true" : "false";
  append_figures(b, o.d);
  if (o.d.release_after != 0) b += ",\"release_after_ns\":" + ns_or_never(o.d.release_after);
  b += ",\"source\":\"";
  b += name_of(o.from);
  b += '"';
  if (!id.empty()) {
    b += ",\"id\":";
    append_json_string(b, id);
    // A Redis Cluster's refund id names the slot of the id's record.
    if (!o.refund_id.empty() && o.refund_id != id) {
      b += ",\"refund_id\":";
      append_json_string(b, o.refund_id);
    }
  }
  if (const std::string lease = lease_of(a, checks, o); !lease.empty()) {
    b += ",\"lease\":";
    append_json_string(b, lease);
  }
  b += ",\"checks\":[";
  for (std::size_t k = 0; k < o.per.size(); ++k) {
    const decision& d = o.per[k];
    const planned_check& pc = checks[o.enforced[k]];
    if (k > 0) b += ',';
    b += "{\"policy\":";
    append_json_string(b, c.policies[pc.policy].name);
    b += ",\"key\":";
    append_json_string(b, pc.key);
    b += ",\"allowed\":";
    b += d.allowed ? "true" : "false";
    b += ",\"remaining\":" + std::to_string(d.remaining);
    b += ",\"retry_after_ns\":" + ns_or_never(d.retry_after);
    b += ",\"reset_after_ns\":" + ns_or_never(d.reset_after);
    b += '}';
  }
  b += "]}\n";
  write_rate_fields(a, checks, o, res, svc_);
}

std::string http_api::lease_of(const active& a, const std::vector<planned_check>& checks,
                               const checks_outcome& o) const {
  if (o.lease == 0 || !o.d.allowed) return {};
  lease_token t;
  t.nonce = o.lease;
  for (std::size_t k = 0; k < o.enforced.size(); ++k) {
    const planned_check& pc = checks[o.enforced[k]];
    if (holds_concurrency(a.cfg->policies[pc.policy].policy))
      t.checks.emplace_back(a.cfg->policies[pc.policy].name, pc.key);
  }
  return t.checks.empty() ? std::string() : format_lease(t);
}

void http_api::release_json(const active& a, const http_request& req, http_response& res) {
  const release_answer r = release_lease(
      svc_, metrics_, req.body,
      [&a](std::string_view name) -> std::optional<policy_id> {
        const auto i = a.policy_index(name);
        return i ? std::optional<policy_id>(a.view.ids[*i]) : std::nullopt;
      },
      svc_.now());
  res.status = r.status;
  res.content_type = "application/json";
  res.body = r.body;
}

bool http_api::report_json(std::shared_ptr<const active> ap, const http_request& req, http_response& res,
                           const std::shared_ptr<answer_gate>& gate) {
  auto parsed = parse_json_request(*ap, req, res);
  if (!parsed) return false;
  if (!parsed->id.empty()) {
    bad_request(metrics_, res, 400, "id",
                "a report holds no request id: it is never a retry of a decision (semantics.md, \"Reports\")");
    return false;
  }
  // The checks stay here for the answer; the service holds what the store reads.
  auto checks = std::make_shared<const std::vector<planned_check>>(std::move(parsed->checks));
  const tick now = parsed->now ? *parsed->now : svc_.now();
  const tick t0 = steady_clock::now();
  svc_.report(ap, *checks, now,
              [this, ap, checks, &res, gate, t0](const store_decision& sd, std::span<const decision> per) {
                metrics_.observe_latency(steady_clock::now() - t0);
                try {
                  write_report(*ap, *checks, sd, per, res);
                } catch (const std::exception&) {
                  internal_error(res);
                }
                gate->complete(metrics_, res);
              });
  return true;
}

void http_api::write_report(const active& a, const std::vector<planned_check>& checks, const store_decision& sd,
                            std::span<const decision> per, http_response& res) {
  const config& c = *a.cfg;
  if (sd.from != source::store) {
    // Not charged (the store could not take it, or a bad state at a key) —
    // unless its call timed out after it was sent (semantics.md, "Reports").
    res.status = 503;
    res.content_type = "application/json";
    res.body = error_body("store",
                          "the report was not charged: the store failed or holds a bad state at a key (a call that "
                          "timed out after it was sent may still have been applied)");
    return;
  }
  // Never denied: 200 with the figures after the charge (semantics.md).
  res.status = 200;
  res.content_type = "application/json";
  std::string& b = res.body;
  b = "{\"charged\":true";
  append_figures(b, sd.d);
  b += ",\"source\":\"";
  b += name_of(sd.from);
  b += "\",\"checks\":[";
  for (std::size_t k = 0; k < checks.size(); ++k) {
    const decision& d = per[k];
    if (k > 0) b += ',';
    b += "{\"policy\":";
    append_json_string(b, c.policies[checks[k].policy].name);
    b += ",\"key\":";
    append_json_string(b, checks[k].key);
    b += ",\"cost\":" + std::to_string(checks[k].cost);
    b += ",\"remaining\":" + std::to_string(d.remaining);
    b += ",\"retry_after_ns\":" + ns_or_never(d.retry_after);
    b += ",\"reset_after_ns\":" + ns_or_never(d.reset_after);
    b += '}';
  }
  b += "]}\n";
}

}  // namespace sluice::serve
