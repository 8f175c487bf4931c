// The decision service's request handling (service.hpp).
#include "service.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "decide.hpp"
#include "json_body.hpp"
#include "lease_token.hpp"
#include "release.hpp"
#include "sluice/lease.hpp"
#include "sluice/redact.hpp"
#include "sluice/snapshot.hpp"
#include "sluice/store/memory.hpp"
#include "stores.hpp"
#include "target.hpp"
#include "wire.hpp"

namespace sluice::serve {

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

namespace {

std::string error_body(std::string_view field, std::string_view message) {
  std::string out = "{\"error\":{\"field\":";
  append_json_string(out, field);
  out += ",\"message\":";
  append_json_string(out, message);
  out += "}}\n";
  return out;
}

// A request refused for its content (or for lacking the token): its answer,
// counted in sluice_bad_requests_total. A denial is not one.
void bad_request(metrics& m, http_response& res, unsigned status, std::string_view field, std::string_view message) {
  m.bad_requests.fetch_add(1, std::memory_order_relaxed);
  res.status = status;
  res.content_type = "application/json";
  res.body = error_body(field, message);
}

std::string ns_or_never(tick t) { return t == never ? std::string("\"never\"") : std::to_string(t); }

// RateLimit-Policy, RateLimit (when the checks' figures are known),
// Retry-After and Cache-Control for an outcome. A check whose key has an
// override (semantics.md, "Overrides") advertises the override: asked of
// `st` without a call (store::override_seen).
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

bool token_ok(const config& c, const http_request& req) {
  if (c.token.empty()) return true;
  std::string_view got;
  for (const auto& h : req.headers)
    if (iequals(h.name, "Authorization")) got = h.value;
  constexpr std::string_view scheme = "Bearer ";
  if (got.size() < scheme.size() || !iequals(got.substr(0, scheme.size()), scheme)) return false;
  got.remove_prefix(scheme.size());
  // Constant time in the token's length: no early exit on the first mismatch.
  unsigned diff = got.size() == c.token.size() ? 0u : 1u;
  for (std::size_t i = 0; i < c.token.size(); ++i)
    diff |= static_cast<unsigned>(static_cast<unsigned char>(c.token[i]) ^
                                  static_cast<unsigned char>(i < got.size() ? got[i] : 0));
  return diff == 0;
}

// Whether a JSON value is a cost: a whole number from 1 to 2^63 - 1.
bool whole_cost(const nlohmann::json& v) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() >= 1 && v.get<std::uint64_t>() <= INT64_MAX;
  return v.get<std::int64_t>() >= 1;
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
  std::string_view path;
  if (parts) {
    switch (normalise_path(parts->path, normal)) {
      case path_form::normal:
        path = parts->path;
        break;
      case path_form::rewritten:
        path = normal;
        break;
      case path_form::invalid:
        break;
    }
  }
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
      return offload(req, res, gate,
                     [this, client_time](const http_request& q, http_response& r) { refund_json(client_time, q, r); });
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

std::optional<service::json_request> service::parse_json_request(const active& a, const http_request& req,
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

bool service::decide_json(std::shared_ptr<const active> ap, const http_request& req, http_response& res,
                          const std::shared_ptr<answer_gate>& gate) {
  auto parsed = parse_json_request(*ap, req, res);
  if (!parsed) return false;
  std::vector<planned_check> checks = std::move(parsed->checks);
  const std::string id = std::move(parsed->id);
  const std::optional<tick> now = parsed->now;
  const tick t0 = steady_clock::now();
  decide(ap, std::move(checks), now ? *now : store_->now(), id,
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

void service::write_decision(const active& a, const std::vector<planned_check>& checks, const std::string& id,
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
  b += ",\"remaining\":" + std::to_string(o.d.remaining);
  b += ",\"retry_after\":";
  b += o.d.retry_after == never ? std::string("null") : std::to_string(ceil_seconds(o.d.retry_after));
  b += ",\"retry_after_ns\":" + ns_or_never(o.d.retry_after);
  b += ",\"reset_after_ns\":" + ns_or_never(o.d.reset_after);
  if (o.d.release_after != 0) b += ",\"release_after_ns\":" + ns_or_never(o.d.release_after);
  b += ",\"source\":\"";
  b += name_of(o.from);
  b += '"';
  if (!id.empty()) {
    b += ",\"id\":";
    append_json_string(b, id);
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
  write_rate_fields(a, checks, o, res, *store_);
}

std::string service::lease_of(const active& a, const std::vector<planned_check>& checks,
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

void service::release_json(const active& a, const http_request& req, http_response& res) {
  const release_answer r = release_lease(
      *store_, metrics_, req.body,
      [&a](std::string_view name) -> std::optional<policy_id> {
        const auto i = a.policy_index(name);
        return i ? std::optional<policy_id>(a.view.ids[*i]) : std::nullopt;
      },
      store_->now());
  res.status = r.status;
  res.content_type = "application/json";
  res.body = r.body;
}

bool service::report_json(std::shared_ptr<const active> ap, const http_request& req, http_response& res,
                          const std::shared_ptr<answer_gate>& gate) {
  auto parsed = parse_json_request(*ap, req, res);
  if (!parsed) return false;
  if (!parsed->id.empty()) {
    bad_request(metrics_, res, 400, "id",
                "a report holds no request id: it is never a retry of a decision (semantics.md, \"Reports\")");
    return false;
  }
  // What the store reads until it answers (it may answer on its own thread).
  struct job {
    std::shared_ptr<const active> a;
    std::vector<planned_check> checks;
    std::array<check, max_checks> req_checks;
    std::array<decision, max_checks> per;
  };
  auto j = std::make_shared<job>();
  j->a = std::move(ap);
  j->checks = std::move(parsed->checks);
  for (std::size_t i = 0; i < j->checks.size(); ++i)
    j->req_checks[i] = check{j->a->view.ids[j->checks[i].policy], j->checks[i].key, j->checks[i].cost};
  const std::size_t n = j->checks.size();
  const store_request r{
      std::span<const check>(j->req_checks.data(), n), parsed->now ? *parsed->now : store_->now(), 1, {}};
  const tick t0 = steady_clock::now();
  enter();
  store_->report_async(r, std::span<decision>(j->per.data(), n), [this, j, &res, gate, t0](const store_decision& sd) {
    metrics_.observe_latency(steady_clock::now() - t0);
    metrics_.count_source(sd.from);
    try {
      write_report(*j->a, j->checks, sd, std::span<const decision>(j->per.data(), j->checks.size()), res);
    } catch (const std::exception&) {
      internal_error(res);
    }
    gate->complete(metrics_, res);
    leave();
  });
  return true;
}

void service::write_report(const active& a, const std::vector<planned_check>& checks, const store_decision& sd,
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
  b += ",\"remaining\":" + std::to_string(sd.d.remaining);
  b += ",\"retry_after\":";
  b += sd.d.retry_after == never ? std::string("null") : std::to_string(ceil_seconds(sd.d.retry_after));
  b += ",\"retry_after_ns\":" + ns_or_never(sd.d.retry_after);
  b += ",\"reset_after_ns\":" + ns_or_never(sd.d.reset_after);
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
