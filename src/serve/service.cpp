// The decision service's request handling (service.hpp): routing, the
// nginx subrequest, readiness, the admin endpoints and reloads; the JSON
// endpoints are json_api.cpp's.
#include "service.hpp"

#include <boost/asio/post.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "bearer.hpp"
#include "decide.hpp"
#include "lease_token.hpp"
#include "service_parts.hpp"
#include "sluice/snapshot.hpp"
#include "sluice/store/memory.hpp"
#include "stores.hpp"
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

void write_rate_fields(const service::active& a, std::span<const planned_check> checks, const checks_outcome& o,
                       http_response& res, store& st) {
  if (o.enforced.empty()) return;
  const bool known = figures_known(o.from);
  std::string policy_field;
  std::string rl_field;
  for (std::size_t k = 0; k < o.enforced.size(); ++k) {
    const planned_check& pc = checks[o.enforced[k]];
    const std::string* own = &a.policy_members[pc.policy];
    std::string overridden;
    if (auto ov = st.override_seen(a.view.ids[pc.policy], pc.key)) [[unlikely]] {
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

service::service(std::unique_ptr<store> st) : store_(std::move(st)) {}

service::~service() {
  quiesce();  // their completions count into metrics_ and read the store
  {
    std::lock_guard lock(purge_mu_);
    stopping_ = true;
  }
  purge_cv_.notify_all();
  if (purger_.joinable()) purger_.join();
}

result<std::unique_ptr<service>> service::create(config c, std::unique_ptr<store> st) {
  std::unique_ptr<service> s(new service(std::move(st)));
  const store_config sc = c.store;
  reload_report report;
  auto a = s->build(std::move(c), nullptr, report);
  if (!a) return a.err();
  s->release_body_bytes_.store(longest_release_body((*a)->cfg->lim.key_bytes), std::memory_order_relaxed);
  s->active_.store(*a);
  s->max_keys_ = sc.max_keys;
  // The purge schedule: the memory store, deciding by the service's own
  // clock (with client_time no instant is promised, so none is purged).
  if (auto* m = dynamic_cast<memory_store*>(s->store_.get());
      m != nullptr && sc.in_time_order && sc.purge_interval > 0) {
    const tick every = sc.purge_interval;
    s->purger_ = std::thread([svc = s.get(), m, every] {
      std::unique_lock lock(svc->purge_mu_);
      while (!svc->stopping_) {
        if (svc->purge_cv_.wait_for(lock, std::chrono::nanoseconds(every), [svc] { return svc->stopping_; })) break;
        lock.unlock();
        (void)m->purge(m->now());
        lock.lock();
      }
    });
  }
  return s;
}

std::shared_ptr<const config> service::current() const { return active_.load()->cfg; }

std::shared_ptr<const config> service::config_of(const active& a) { return a.cfg; }

result<std::shared_ptr<const service::active>> service::build(config next, const active* old, reload_report& report) {
  auto cfg = std::make_shared<const config>(std::move(next));
  auto a = std::make_shared<active>(cfg);
  std::vector<std::pair<std::string, const any_policy*>> redefined;  // to undo on failure
  for (const auto& p : cfg->policies) {
    std::string enc = encode_policy(p.policy);
    std::optional<std::size_t> before = old != nullptr ? old->policy_index(p.name) : std::nullopt;
    policy_id id = 0;
    if (before && old->encoded[*before] == enc) {
      id = old->view.ids[*before];
      report.kept.push_back(p.name);
    } else {
      auto defined = store_->define(p.name, p.policy);
      if (!defined) {
        for (auto it = redefined.rbegin(); it != redefined.rend(); ++it) {
          if (it->second != nullptr) (void)store_->define(it->first, *it->second);
        }
        return error{"policies." + p.name, defined.err().what()};
      }
      id = *defined;
      redefined.emplace_back(p.name, before ? &old->cfg->policies[*before].policy : nullptr);
      (before ? report.changed : report.added).push_back(p.name);
    }
    a->view.ids.push_back(id);
    a->encoded.push_back(std::move(enc));
    a->view.counters.push_back(&metrics_.for_policy(p.name));
    a->policy_members.push_back(policy_member(p.name, p.policy));
  }
  if (old != nullptr) {
    const config& oc = *old->cfg;
    if (oc.listen != cfg->listen || oc.admin != cfg->admin) report.notes.push_back("listeners change at restart only");
    if (oc.threads != cfg->threads) report.notes.push_back("threads change at restart only");
    if (oc.grpc_tls != cfg->grpc_tls) report.notes.push_back("the gRPC listener's TLS changes at restart only");
    if (oc.store.url != cfg->store.url || oc.store.password != cfg->store.password ||
        oc.store.snapshot != cfg->store.snapshot || oc.store.max_keys != cfg->store.max_keys ||
        oc.store.purge_interval != cfg->store.purge_interval || oc.store.in_time_order != cfg->store.in_time_order)
      report.notes.push_back("the store changes at restart only");
  }
  return std::shared_ptr<const active>(std::move(a));
}

result<reload_report> service::apply(config next) {
  const std::lock_guard lock(reload_mutex_);
  reload_report report;
  const auto old = active_.load();
  auto a = build(std::move(next), old.get(), report);
  if (!a) {
    metrics_.reloads_failed.fetch_add(1, std::memory_order_relaxed);
    return a.err();
  }
  release_body_bytes_.store(longest_release_body((*a)->cfg->lim.key_bytes), std::memory_order_relaxed);
  active_.store(*a);
  metrics_.reloads_ok.fetch_add(1, std::memory_order_relaxed);
  return report;
}

result<reload_report> service::reload() {
  const auto file = current()->file;
  if (file.empty()) return error{"reload", "this service was started without a configuration file"};
  auto c = load_config(file);
  if (!c) {
    metrics_.reloads_failed.fetch_add(1, std::memory_order_relaxed);
    return c.err();
  }
  return apply(std::move(c).value());
}

void service::handle(const http_request& req, http_response& res, listener_role role) {
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

bool service::handle(const http_request& req, http_response& res, listener_role role, answered done) {
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
bool service::post_allowed(const config& c, const http_request& req, http_response& res, std::string_view usage) {
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

void service::internal_error(http_response& res) {
  res.clear();
  res.status = 500;
  res.content_type = "application/json";
  res.body = error_body("request", "internal error");
}

bool service::route(const http_request& req, http_response& res, listener_role role,
                    const std::shared_ptr<answer_gate>& gate) {
  res.clear();
  // Routed by the normalised path, as the rules read paths: an absolute-form
  // target by its path, "//v1/decide" as "/v1/decide".
  const auto parts = split_target(req.target);
  std::string normal;
  const std::string_view path = routed_path(req.target, normal).value_or(std::string_view());
  auto a = active_.load();
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
    enter();
    store_->count_keys_async([this, &res, gate](std::optional<std::uint64_t> keys) {
      res.content_type = "text/plain; version=0.0.4; charset=utf-8";
      const auto figures = store_->figures();
      std::optional<memory_figures> mem;
      if (const auto* m = dynamic_cast<const memory_store*>(store_.get())) {
        const keyed_stats k = m->keyed_totals();
        mem = memory_figures{k.bytes, k.purged, k.refused, max_keys_};
      }
      res.body = metrics_.render(store_->stats(), keys, figures ? &*figures : nullptr, mem, store_->override_count());
      gate->complete(metrics_, res);
      leave();
    });
    return true;
  } else if (path == "/healthz") {
    // Liveness: never touches the store.
    res.content_type = "text/plain";
    res.body = "ok\n";
  } else if (path == "/readyz") {
    return readyz(std::move(a), res, gate);
  } else if (role == listener_role::admin && path.substr(0, 7) == "/admin/") {
    admin(path, req, res);
  } else {
    bad_request(metrics_, res, 404, "path",
                "no such endpoint (POST /v1/decide, /v1/report, /v1/refund, /v1/release, /v1/authorize, /metrics, "
                "/healthz, /readyz)");
  }
  return false;
}

bool service::readyz(std::shared_ptr<const active> a, http_response& res, const std::shared_ptr<answer_gate>& gate) {
  const auto answer = [this, &res, gate](bool ok) {
    res.status = ok ? 200 : 503;
    res.content_type = "text/plain";
    res.body = ok ? "ready\n" : "not ready\n";
    gate->complete(metrics_, res);
  };
  if (draining_.load(std::memory_order_relaxed)) {
    answer(false);
    return true;
  }
  if (a->view.ids.empty()) {
    answer(true);
    return true;
  }
  // One peek, without waiting: ready when the store itself answered.
  struct probe_call {
    std::shared_ptr<const active> a;
    check probe;
  };
  auto p =
      std::make_shared<probe_call>(probe_call{a, check{a->view.ids.front(), std::string_view("\x01sluice-readyz")}});
  enter();
  store_->peek_async(store_request{std::span<const check>(&p->probe, 1), store_->now(), 1, {}},
                     [this, p, answer](const store_decision& d) {
                       answer(d.from == source::store || d.from == source::deny_cache || d.from == source::replayed);
                       leave();
                     });
  return true;
}

bool service::offload(const http_request& req, http_response& res, const std::shared_ptr<answer_gate>& gate,
                      std::function<void(const http_request&, http_response&)> work) {
  if (dynamic_cast<memory_store*>(store_.get()) != nullptr) {
    work(req, res);  // in process: answered at once
    return false;
  }
  std::call_once(blocking_once_, [this] { blocking_ = std::make_unique<boost::asio::thread_pool>(4); });
  enter();
  boost::asio::post(*blocking_, [this, q = req, &res, gate, work = std::move(work)] {
    try {
      work(q, res);
    } catch (const std::exception&) {
      internal_error(res);
    }
    gate->complete(metrics_, res);
    leave();
  });
  return true;
}

void service::enter() {
  const std::lock_guard lock(flight_mu_);
  ++in_flight_;
}

void service::leave() {
  {
    const std::lock_guard lock(flight_mu_);
    --in_flight_;
  }
  flight_cv_.notify_all();
}

void service::quiesce() {
  std::unique_lock lock(flight_mu_);
  flight_cv_.wait(lock, [this] { return in_flight_ == 0; });
}

bool service::authorize(std::shared_ptr<const active> ap, const http_request& req, http_response& res,
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
  const tick now = store_->now();
  decide(ap, std::move(checks), now, {},
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
             write_rate_fields(*ap, cs, o, res, *store_);
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

bool service::decide(std::shared_ptr<const active> a, std::vector<planned_check> checks, tick now, std::string id,
                     checks_decided then) {
  enter();
  const policy_view& view = a->view;
  return decide_checks(*store_, metrics_, view, std::move(a), std::move(checks), now, std::move(id),
                       [this, then = std::move(then)](const std::vector<planned_check>& cs, const checks_outcome& o) {
                         then(cs, o);
                         leave();
                       });
}

void service::admin(std::string_view path, const http_request& req, http_response& res) {
  if (path == "/admin/reload") {
    if (req.method != "POST") {
      bad_request(metrics_, res, 405, "method", "POST /admin/reload");
      res.fields.push_back({"Allow", "POST"});
      return;
    }
    auto r = reload();
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
