// The HTTP front end's request handling (http_api.hpp): routing, the nginx
// subrequest, readiness, metrics and the admin endpoints; the JSON
// endpoints are json_api.cpp's.
#include "http_api.hpp"

#include <boost/asio/post.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "bearer.hpp"
#include "decide.hpp"
#include "http_parts.hpp"
#include "target.hpp"
#include "wire.hpp"

namespace sluice::serve {

std::string error_body(std::string_view field, std::string_view message) {
  std::string out = "{\"error\":{\"field\":";
  append_json_string(out, field);
  out += ",\"message\":";
  append_json_string(out, message);
  out += "}}\n";
  return out;
}

void bad_request(metrics& m, http_response& res, unsigned status, std::string_view field, std::string_view message) {
  m.bad_requests.fetch_add(1, std::memory_order_relaxed);
  res.status = status;
  res.content_type = "application/json";
  res.body = error_body(field, message);
}

std::string ns_or_never(tick t) { return t == never ? std::string("\"never\"") : std::to_string(t); }

void append_figures(std::string& out, const decision& d) {
  out += ",\"remaining\":" + std::to_string(d.remaining);
  out += ",\"retry_after\":";
  out += d.retry_after == never ? std::string("null") : std::to_string(ceil_seconds(d.retry_after));
  out += ",\"retry_after_ns\":" + ns_or_never(d.retry_after);
  out += ",\"reset_after_ns\":" + ns_or_never(d.reset_after);
}

void write_rate_fields(const service::active& a, std::span<const planned_check> checks, const checks_outcome& o,
                       http_response& res, const service& svc) {
  if (o.enforced.empty()) return;
  const bool known = figures_known(o.from);
  std::string policy_field;
  std::string rl_field;
  for (std::size_t k = 0; k < o.enforced.size(); ++k) {
    const planned_check& pc = checks[o.enforced[k]];
    const std::string* own = &a.policy_members[pc.policy];
    std::string overridden;
    if (auto ov = svc.override_seen(a.view.ids[pc.policy], pc.key)) [[unlikely]] {
      overridden = policy_member(a.cfg->policies[pc.policy].name, *ov);
      own = &overridden;
    }
    const std::string& member = *own;
    if (member.empty()) continue;
    if (!policy_field.empty()) {
      policy_field += ", ";
      rl_field += ", ";
    }
    policy_field += member;
    if (known) rl_field += ratelimit_member(a.cfg->policies[pc.policy].name, o.per[k].remaining, o.t[k]);
  }
  if (!policy_field.empty()) {
    res.fields.push_back({"RateLimit-Policy", std::move(policy_field)});
    if (known) res.fields.push_back({"RateLimit", std::move(rl_field)});
  }
  if (!o.d.allowed) {
    if (o.d.retry_after != never) res.fields.push_back({"Retry-After", std::to_string(ceil_seconds(o.d.retry_after))});
    res.fields.push_back({"Cache-Control", "no-store"});
  }
}

namespace {

bool token_ok(const config& c, const http_request& req) {
  if (c.token.empty()) return true;
  std::string_view got;
  for (const auto& h : req.headers)
    if (iequals(h.name, "Authorization")) got = h.value;
  return bearer_ok(c.token, got);
}

}  // namespace

http_api::http_api(service& svc) : svc_(svc), metrics_(svc.stats()) {}

http_api::~http_api() {
  svc_.quiesce();  // offloaded work completes its answers through this
}

void http_api::handle(const http_request& req, http_response& res, listener_role role) {
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  const bool now = handle(req, res, role, [&] {
    const std::lock_guard lock(mu);
    ready = true;
    cv.notify_one();
  });
  if (now) return;
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return ready; });
}

bool http_api::handle(const http_request& req, http_response& res, listener_role role, answered done) {
  auto gate = std::make_shared<answer_gate>(std::move(done));
  try {
    if (!route(req, res, role, gate)) gate->complete(metrics_, res);
  } catch (const std::exception&) {
    // Before any call was made (a route that made one completes it itself).
    internal_error(res);
    gate->complete(metrics_, res);
  }
  return gate->routed();
}

// The JSON endpoints (POST with a body, on the decision listener): a
// request with another method is answered 405 naming `usage`, one without
// the bearer token 401; both counted as bad requests.
bool http_api::post_allowed(const config& c, const http_request& req, http_response& res, std::string_view usage) {
  if (req.method != "POST") {
    bad_request(metrics_, res, 405, "method", usage);
    res.fields.push_back({"Allow", "POST"});
    return false;
  }
  if (!token_ok(c, req)) {
    bad_request(metrics_, res, 401, "authorization", "a valid bearer token is required");
    res.fields.push_back({"WWW-Authenticate", "Bearer realm=\"sluice\""});
    return false;
  }
  return true;
}

void http_api::internal_error(http_response& res) {
  res.clear();
  res.status = 500;
  res.content_type = "application/json";
  res.body = error_body("request", "internal error");
}

bool http_api::route(const http_request& req, http_response& res, listener_role role,
                     const std::shared_ptr<answer_gate>& gate) {
  res.clear();
  // Routed by the normalised path, as the rules read paths: an absolute-form
  // target by its path, "//v1/decide" as "/v1/decide".
  const auto parts = split_target(req.target);
  std::string normal;
  const std::string_view path = routed_path(req.target, normal).value_or(std::string_view());
  auto a = svc_.snapshot();
  if (role == listener_role::admin && parts && is_overrides_path(parts->path)) {
    // Before normalising: a key may hold an encoded '/' (docs/serve.md, "Overrides").
    return offload(req, res, gate,
                   [this, a](const http_request& q, http_response& r) { overrides_api(*a->cfg, a->view.ids, q, r); });
  }
  if (path.empty()) {
    bad_request(metrics_, res, 400, "path", "the request target cannot be read safely (see semantics.md, On the wire)");
  } else if (path == "/v1/authorize" && role == listener_role::decision) {
    if (!token_ok(*a->cfg, req)) {
      // No body: nginx passes a 401 of the subrequest on to its client.
      metrics_.bad_requests.fetch_add(1, std::memory_order_relaxed);
      res.status = 401;
      res.fields.push_back({"WWW-Authenticate", "Bearer realm=\"sluice\""});
      res.fields.push_back({"X-Sluice-Decision", "unauthorized"});
      res.fields.push_back({"Cache-Control", "no-store"});
    } else {
      return authorize(std::move(a), req, res, gate);
    }
  } else if (path == "/v1/decide" && role == listener_role::decision) {
    if (post_allowed(*a->cfg, req, res, "POST /v1/decide with a JSON body"))
      return decide_json(std::move(a), req, res, gate);
  } else if (path == "/v1/report" && role == listener_role::decision) {
    if (post_allowed(*a->cfg, req, res, "POST /v1/report with a JSON body"))
      return report_json(std::move(a), req, res, gate);
  } else if (path == "/v1/release" && role == listener_role::decision) {
    if (post_allowed(*a->cfg, req, res, "POST /v1/release with a JSON body {\"lease\": ...}"))
      return offload(req, res, gate, [this, a](const http_request& q, http_response& r) { release_json(*a, q, r); });
  } else if (path == "/v1/refund" && role == listener_role::decision) {
    if (post_allowed(*a->cfg, req, res, "POST /v1/refund with a JSON body {\"id\": ...}")) {
      const bool client_time = a->cfg->client_time;
      const std::size_t key_bytes = a->cfg->lim.key_bytes;
      return offload(req, res, gate, [this, client_time, key_bytes](const http_request& q, http_response& r) {
        refund_json(client_time, key_bytes, q, r);
      });
    }
  } else if (path == "/metrics") {
    // The store's key count may take a call (DBSIZE): asked without waiting.
    svc_.render_metrics([this, &res, gate](std::string body) {
      res.content_type = "text/plain; version=0.0.4; charset=utf-8";
      res.body = std::move(body);
      gate->complete(metrics_, res);
    });
    return true;
  } else if (path == "/healthz") {
    // Liveness: never touches the store.
    res.content_type = "text/plain";
    res.body = "ok\n";
  } else if (path == "/readyz") {
    return readyz(res, gate);
  } else if (role == listener_role::admin && path.substr(0, 7) == "/admin/") {
    admin(path, req, res);
  } else {
    bad_request(metrics_, res, 404, "path",
                "no such endpoint (POST /v1/decide, /v1/report, /v1/refund, /v1/release, /v1/authorize, /metrics, "
                "/healthz, /readyz)");
  }
  return false;
}

bool http_api::readyz(http_response& res, const std::shared_ptr<answer_gate>& gate) {
  svc_.ready([this, &res, gate](bool ok) {
    res.status = ok ? 200 : 503;
    res.content_type = "text/plain";
    res.body = ok ? "ready\n" : "not ready\n";
    gate->complete(metrics_, res);
  });
  return true;
}

bool http_api::offload(const http_request& req, http_response& res, const std::shared_ptr<answer_gate>& gate,
                       std::function<void(const http_request&, http_response&)> work) {
  if (svc_.answers_at_once()) {
    work(req, res);  // in process: answered at once
    return false;
  }
  std::call_once(blocking_once_, [this] { blocking_ = std::make_unique<boost::asio::thread_pool>(4); });
  svc_.enter();
  boost::asio::post(*blocking_, [this, q = req, &res, gate, work = std::move(work)] {
    try {
      work(q, res);
    } catch (const std::exception&) {
      internal_error(res);
    }
    gate->complete(metrics_, res);
    svc_.leave();
  });
  return true;
}

bool http_api::authorize(std::shared_ptr<const active> ap, const http_request& req, http_response& res,
                         const std::shared_ptr<answer_gate>& gate) {
  const active& a = *ap;
  // Behind nginx the original request comes in headers; called directly,
  // the request itself is the one to decide. Each header at most once.
  request_view v{req.method, req.target, req.headers, req.peer};
  std::size_t uris = 0, methods = 0;
  for (const auto& h : req.headers) {
    if (iequals(h.name, "X-Original-URI")) {
      v.target = h.value;
      ++uris;
    }
    if (iequals(h.name, "X-Original-Method")) {
      v.method = h.value;
      ++methods;
    }
  }
  std::vector<planned_check> checks;
  if (uris > 1 || methods > 1 || a.rules.plan(v, checks)) {
    // nginx turns anything but 2xx/401/403 into a 500: a bad request is a 403.
    metrics_.bad_requests.fetch_add(1, std::memory_order_relaxed);
    res.status = 403;
    res.fields.push_back({"X-Sluice-Decision", "invalid"});
    res.fields.push_back({"Cache-Control", "no-store"});
    return false;
  }
  const tick t0 = steady_clock::now();
  const tick now = svc_.now();
  svc_.decide(ap, std::move(checks), now, {},
              [this, ap, &res, gate, t0](const std::vector<planned_check>& cs, const checks_outcome& o) {
                metrics_.observe_latency(steady_clock::now() - t0);
                // Written on whichever thread answered: a writer that throws
                // (memory running out) costs this request a 500, not that thread.
                try {
                  res.status = o.d.allowed ? 204 : 403;
                  // A store error (a value the store did not write at a key) is no rate
                  // limit: "error", which nginx's configuration answers as a 503.
                  res.fields.push_back(
                      {"X-Sluice-Decision", o.d.allowed ? "allowed" : (o.from == source::error ? "error" : "limited")});
                  write_rate_fields(*ap, cs, o, res, svc_);
                  // The lease id, for nginx to pass on (docs/serve.md, "Leases").
                  if (const std::string lease = lease_of(*ap, cs, o); !lease.empty())
                    res.fields.push_back({"Sluice-Lease", lease});
                } catch (const std::exception&) {
                  internal_error(res);
                }
                gate->complete(metrics_, res);
              });
  return true;
}

void http_api::admin(std::string_view path, const http_request& req, http_response& res) {
  if (path == "/admin/reload") {
    if (req.method != "POST") {
      bad_request(metrics_, res, 405, "method", "POST /admin/reload");
      res.fields.push_back({"Allow", "POST"});
      return;
    }
    auto r = svc_.reload();
    res.content_type = "application/json";
    if (!r) {
      res.status = 400;
      res.body = error_body(r.err().field, r.err().message);
      return;
    }
    const auto list = [](const std::vector<std::string>& v) {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0) out += ',';
        append_json_string(out, v[i]);
      }
      return out + "]";
    };
    res.body = "{\"reloaded\":true,\"added\":" + list(r->added) + ",\"changed\":" + list(r->changed) +
               ",\"kept\":" + list(r->kept) + ",\"notes\":" + list(r->notes) + "}\n";
    return;
  }
  bad_request(metrics_, res, 404, "path", "no such admin endpoint (POST /admin/reload, /admin/v1/overrides)");
}

}  // namespace sluice::serve
