// Envoy's rate limit service on gRPC's callback API (envoy_service.hpp).
#include "envoy_service.hpp"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <iterator>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "bearer.hpp"
#include "dynamic_metadata.hpp"
#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "envoy_quota.hpp"
#include "envoy_rules.hpp"
#include "metrics.hpp"
#include "rules.hpp"
#include "wire.hpp"

namespace sluice::serve::envoy {

namespace rls = ::envoy::service::ratelimit::v3;
using response_code = rls::RateLimitResponse::Code;
using limit_unit = rls::RateLimitResponse::RateLimit::Unit;

namespace {

constexpr tick second = 1'000'000'000;

// Whether a call carries the configuration's token: exactly one
// `authorization` entry (gRPC's metadata keys are lower case), compared as
// the HTTP endpoints compare theirs.
bool authenticated(const config& cfg, const grpc::CallbackServerContext& ctx) {
  if (cfg.token.empty()) return true;
  const auto [first, last] = ctx.client_metadata().equal_range("authorization");
  if (first == last || std::next(first) != last) return false;
  return bearer_ok(cfg.token, std::string_view(first->second.data(), first->second.size()));
}

// The Envoy unit a window is exactly one of, else UNKNOWN (a 10 s window,
// a quota without one). MONTH is 30 days and YEAR 365, as envoyproxy/
// ratelimit counts them (its files' units map back to themselves).
limit_unit unit_of(std::optional<tick> window) noexcept {
  if (!window) return rls::RateLimitResponse::RateLimit::UNKNOWN;
  switch (*window) {
    case second:
      return rls::RateLimitResponse::RateLimit::SECOND;
    case 60 * second:
      return rls::RateLimitResponse::RateLimit::MINUTE;
    case 3600 * second:
      return rls::RateLimitResponse::RateLimit::HOUR;
    case 86400 * second:
      return rls::RateLimitResponse::RateLimit::DAY;
    case 7 * 86400 * second:
      return rls::RateLimitResponse::RateLimit::WEEK;
    case 30 * 86400 * second:
      return rls::RateLimitResponse::RateLimit::MONTH;
    case 365 * 86400 * second:
      return rls::RateLimitResponse::RateLimit::YEAR;
    default:
      return rls::RateLimitResponse::RateLimit::UNKNOWN;
  }
}

std::uint32_t clamp_u32(std::int64_t v) noexcept {
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(v, 0, std::numeric_limits<std::uint32_t>::max()));
}

// What a matched descriptor gets.
enum class treatment : std::uint8_t {
  enforced,   // one check of the atomic store request
  shadow,     // decided alone, after it, never denies
  unlimited,  // matched, never limited
  replaced,   // dropped by another matched rule's `replaces`
};

// One matched descriptor.
struct planned {
  std::size_t descriptor = 0;
  std::size_t rule = 0;
  std::size_t policy = 0;
  treatment how = treatment::enforced;
  std::string key;
  std::int64_t cost = 1;
  std::size_t check = 0;  // enforced or shadow: index of the planned check that decided it
};

// A call between its store request and its answer.
struct call_state {
  std::shared_ptr<const service::active> view;  // the configuration in force (service::snapshot)
  std::vector<planned> plan;
  tick t0 = 0;
  std::vector<bool> quota;    // per planned check: a quota one (envoy_quota.hpp)
  bool quota_passes = false;  // a shadow quota rule matched: the quotas never deny
};

// Whether a TCP socket can bind `where` now (port 0: always, on an address
// of this machine); closed at once.
bool can_bind(const listen_address& where) {
  sockaddr_storage sa{};
  socklen_t len = 0;
  if (auto* v4 = reinterpret_cast<sockaddr_in*>(&sa); ::inet_pton(AF_INET, where.host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(where.port);
    len = sizeof(sockaddr_in);
  } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&sa);
             ::inet_pton(AF_INET6, where.host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(where.port);
    len = sizeof(sockaddr_in6);
  } else {
    return false;
  }
  const int fd = ::socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;  // as gRPC binds: a port in TIME_WAIT is free
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&sa), len) == 0;
  ::close(fd);
  return ok;
}

grpc::Status invalid(const std::string& message) { return {grpc::StatusCode::INVALID_ARGUMENT, message}; }

}  // namespace

struct grpc_front_end::impl final : rls::RateLimitService::CallbackService {
  explicit impl(service& s) : svc(s) {}

  service& svc;
  listen_address bound;
  std::unique_ptr<grpc::Server> server;

  grpc::ServerUnaryReactor* ShouldRateLimit(grpc::CallbackServerContext* ctx, const rls::RateLimitRequest* req,
                                            rls::RateLimitResponse* res) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    auto call = std::make_shared<call_state>();
    call->t0 = steady_clock::now();
    call->view = svc.snapshot();
    if (!authenticated(*call->view->cfg, *ctx)) {
      svc.stats().bad_requests.fetch_add(1, std::memory_order_relaxed);
      reactor->Finish({grpc::StatusCode::UNAUTHENTICATED,
                       "a valid bearer token is required (metadata authorization: Bearer <server.token>)"});
      return reactor;
    }
    std::vector<planned_check> checks;
    if (grpc::Status bad = plan(*req, *call, checks); !bad.ok()) {
      reactor->Finish(bad);
      return reactor;
    }
    // Through the service's one decision path, without waiting: the store's
    // answer finishes the call from whichever thread it comes on.
    const auto view = call->view;
    const tick now = svc.now();
    checks_decided done = [this, reactor, req, res, call](const std::vector<planned_check>& cs,
                                                          const checks_outcome& o) {
      grpc::Status st;
      try {
        st = answer(*req, *res, *call, cs, o);
      } catch (const std::exception&) {
        st = grpc::Status(grpc::StatusCode::INTERNAL, "internal error");
      }
      svc.stats().observe_latency(steady_clock::now() - call->t0);
      reactor->Finish(st);
    };
    if (std::find(call->quota.begin(), call->quota.end(), true) == call->quota.end()) {
      svc.decide(view, std::move(checks), now, {}, std::move(done));
    } else {
      auto round = [this, view, now](std::vector<planned_check> cs, checks_decided then) {
        svc.decide(view, std::move(cs), now, {}, std::move(then));
      };
      decide_with_quotas(std::move(checks), call->quota, call->quota_passes, std::move(round), std::move(done));
    }
    return reactor;
  }

  // The checks of a call (an error names the field of a bad request).
  grpc::Status plan(const rls::RateLimitRequest& req, call_state& call, std::vector<planned_check>& checks);
  // The response to a call from its checks' outcome.
  grpc::Status answer(const rls::RateLimitRequest& req, rls::RateLimitResponse& res, const call_state& call,
                      const std::vector<planned_check>& checks, const checks_outcome& o);
};

grpc::Status grpc_front_end::impl::plan(const rls::RateLimitRequest& req, call_state& call,
                                        std::vector<planned_check>& checks) {
  const service::active* view = call.view.get();
  const config& cfg = *view->cfg;
  if (req.domain().empty()) return invalid("domain: must not be empty");
  if (req.descriptors_size() == 0) return invalid("descriptors: must not be empty");
  const std::int64_t request_cost = req.hits_addend() == 0 ? 1 : static_cast<std::int64_t>(req.hits_addend());
  const bool known = knows_domain(cfg, req.domain());

  std::vector<planned>& plan = call.plan;
  thread_local std::vector<entry_view> entries;
  thread_local std::vector<entry_view> keyed;  // as the state is keyed (share_threshold)
  for (int i = 0; i < req.descriptors_size(); ++i) {
    const auto& d = req.descriptors(i);
    if (d.entries_size() == 0) return invalid("descriptors[" + std::to_string(i) + "].entries: must not be empty");
    entries.clear();
    for (int k = 0; k < d.entries_size(); ++k) {
      const auto& e = d.entries(k);
      if (e.key().empty() || e.value().empty())
        return invalid("descriptors[" + std::to_string(i) + "].entries[" + std::to_string(k) + "]." +
                       (e.key().empty() ? "key" : "value") + ": must not be empty");
      entries.push_back(entry_view{e.key(), e.value()});
    }
    std::int64_t cost = request_cost;
    if (d.has_hits_addend()) {
      const std::uint64_t h = d.hits_addend().value();
      if (h > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return invalid("descriptors[" + std::to_string(i) + "].hits_addend: larger than 2^63 - 1");
      cost = h == 0 ? 1 : static_cast<std::int64_t>(h);
    }
    if (!known) continue;
    keyed.resize(entries.size());
    const auto rule = match_envoy(cfg, req.domain(), entries, keyed);
    if (!rule) continue;
    const envoy_rule& r = cfg.envoy[*rule];
    planned p;
    p.descriptor = static_cast<std::size_t>(i);
    p.rule = *rule;
    p.how = r.unlimited ? treatment::unlimited : r.shadow ? treatment::shadow : treatment::enforced;
    if (p.how != treatment::unlimited) {
      p.policy = *view->envoy_policy[*rule];
      envoy_key(keyed, p.key);
      if (p.key.size() > cfg.lim.key_bytes)
        return invalid("descriptors[" + std::to_string(i) + "]: the key is longer than " +
                       std::to_string(cfg.lim.key_bytes) + " bytes (server.max_key_bytes)");
    }
    p.cost = cost;
    plan.push_back(std::move(p));
  }
  // `replaces` (envoyproxy/ratelimit files): a matched rule whose limit
  // another matched rule names is dropped from the call, not charged.
  for (auto& p : plan) {
    const std::string& name = cfg.envoy[p.rule].limit_name;
    if (name.empty()) continue;
    const bool dropped = std::any_of(plan.begin(), plan.end(), [&](const planned& o) {
      const auto& rep = cfg.envoy[o.rule].replaces;
      return std::find(rep.begin(), rep.end(), name) != rep.end();
    });
    if (dropped) p.how = treatment::replaced;
  }

  // The checks: one per matched enforced or shadow descriptor, in order;
  // the decision path makes the enforced ones one atomic store request (one
  // check per distinct (policy, key), at the largest cost, a denied call
  // charging none) and decides each shadow one alone on its own state.
  for (std::size_t k = 0; k < plan.size(); ++k) {
    planned& p = plan[k];
    if (p.how != treatment::enforced && p.how != treatment::shadow) continue;
    const bool shadow = p.how == treatment::shadow;
    std::size_t first = checks.size();
    for (std::size_t j = 0; j < checks.size(); ++j)
      if (checks[j].shadow == shadow && checks[j].policy == p.policy && checks[j].key == p.key) {
        first = j;
        break;
      }
    p.check = first;
    checks.push_back(planned_check{p.policy, p.key, p.cost, shadow, p.rule, false});
    call.quota.push_back(!shadow && cfg.envoy[p.rule].quota);
    call.quota_passes = call.quota_passes || (shadow && cfg.envoy[p.rule].quota);
  }
  if (!within_check_limit(checks))
    return invalid("descriptors: more than " + std::to_string(max_checks) + " of them match a rule");
  return grpc::Status::OK;
}

grpc::Status grpc_front_end::impl::answer(const rls::RateLimitRequest& req, rls::RateLimitResponse& res,
                                          const call_state& call, const std::vector<planned_check>& checks,
                                          const checks_outcome& o) {
  const service::active* view = call.view.get();
  const config& cfg = *view->cfg;
  const std::vector<planned>& plan = call.plan;
  const std::size_t n = o.per.size();
  // The store check deciding each planned enforced check.
  std::vector<std::size_t> check_of(checks.size(), 0);
  std::array<std::size_t, max_checks> check_policy{};
  for (std::size_t k = 0; k < n; ++k) {
    const planned_check& pc = checks[o.enforced[k]];
    check_policy[k] = pc.policy;
    for (std::size_t j = 0; j < checks.size(); ++j)
      if (!checks[j].shadow && checks[j].policy == pc.policy && checks[j].key == pc.key) check_of[j] = k;
  }
  const bool allowed = o.d.allowed;
  const tick retry_after = allowed ? 0 : o.d.retry_after;
  const source from = o.from;
  // A store error (a key holding a value sluice did not write) is no rate
  // limit: a gRPC error, so Envoy applies its own failure_mode_deny (the
  // HTTP endpoints answer 500). Nothing was charged.
  if (from == source::error) {
    return {grpc::StatusCode::INTERNAL,
            "the store answered with an error (a key holding a value sluice did not write, or a state that fails "
            "its checks); counted in sluice_store_errors_total"};
  }
  // A failure mode's answer (fail-open, fail-closed) comes from no state:
  // no remaining, no reset, no RateLimit field.
  const bool figures = figures_known(from);

  // The response: one status per descriptor, in order.
  res.set_overall_code(allowed ? rls::RateLimitResponse::OK : rls::RateLimitResponse::OVER_LIMIT);
  std::size_t next_plan = 0;
  for (int i = 0; i < req.descriptors_size(); ++i) {
    auto* status = res.add_statuses();
    if (next_plan >= plan.size() || plan[next_plan].descriptor != static_cast<std::size_t>(i)) {
      status->set_code(rls::RateLimitResponse::OK);  // no rule: not limited
      continue;
    }
    const planned& p = plan[next_plan++];
    if (p.how == treatment::replaced) {
      status->set_code(rls::RateLimitResponse::OK);  // not decided
      continue;
    }
    if (p.how == treatment::unlimited) {
      // As envoyproxy/ratelimit answers an unlimited descriptor.
      status->set_code(rls::RateLimitResponse::OK);
      status->set_limit_remaining(std::numeric_limits<std::uint32_t>::max());
      continue;
    }
    const decision& d = p.how == treatment::shadow ? o.shadow[p.check] : o.per[check_of[p.check]];
    // A check of a denied request that would have admitted reports
    // allowed = false with retry_after 0 (store.hpp): it is not over its
    // limit. A shadow rule is never over its limit to Envoy.
    const bool over = p.how == treatment::enforced && !d.allowed && d.retry_after > 0;
    status->set_code(over ? rls::RateLimitResponse::OVER_LIMIT : rls::RateLimitResponse::OK);
    if (const std::optional<current_limit>& cl = view->current_limits[p.policy]) {
      auto* lim = status->mutable_current_limit();
      // A rule of an envoyproxy/ratelimit file: its rate_limit.name, as that service sends.
      const envoy_rule& r = cfg.envoy[p.rule];
      lim->set_name(r.in_tree ? r.limit_name : cfg.policies[p.policy].name);
      lim->set_requests_per_unit(clamp_u32(cl->quota));
      lim->set_unit(unit_of(cl->window));
    }
    if (!(p.how == treatment::shadow ? figures_known(o.shadow_from[p.check]) : figures)) continue;
    status->set_limit_remaining(clamp_u32(d.remaining));
    if (d.reset_after != never) {
      auto* reset = status->mutable_duration_until_reset();
      reset->set_seconds(d.reset_after / second);
      reset->set_nanos(static_cast<std::int32_t>(d.reset_after % second));
    }
  }

  if (cfg.grpc_dynamic_metadata) {
    std::vector<const nlohmann::json*> passed;  // the rules of the descriptors answered OK
    for (const planned& p : plan)
      if ((p.how == treatment::enforced || p.how == treatment::shadow) &&
          res.statuses(static_cast<int>(p.descriptor)).code() == rls::RateLimitResponse::OK)
        passed.push_back(cfg.envoy[p.rule].metadata.get());
    write_dynamic_metadata(req, passed, *res.mutable_dynamic_metadata());
  }

  // RateLimit-Policy and RateLimit (one member per check), Retry-After on a
  // denial: the HTTP endpoints' headers, for Envoy to add to its response.
  std::string policy_field;
  std::string rl_field;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t pol = check_policy[k];
    const std::string& member = view->policy_members[pol];
    if (member.empty()) continue;
    const decision& d = o.per[k];
    const std::optional<tick> t = figures ? o.t[k] : std::nullopt;
    if (!policy_field.empty()) {
      policy_field += ", ";
      rl_field += ", ";
    }
    policy_field += member;
    if (figures) rl_field += ratelimit_member(cfg.policies[pol].name, d.remaining, t);
  }
  if (!policy_field.empty()) {
    auto* h = res.add_response_headers_to_add();
    h->set_key("RateLimit-Policy");
    h->set_value(std::move(policy_field));
    if (figures) {
      h = res.add_response_headers_to_add();
      h->set_key("RateLimit");
      h->set_value(std::move(rl_field));
    }
  }
  if (!allowed && retry_after != never && retry_after > 0) {
    auto* h = res.add_response_headers_to_add();
    h->set_key("Retry-After");
    h->set_value(std::to_string(ceil_seconds(retry_after)));
  }
  return grpc::Status::OK;
}

grpc_front_end::grpc_front_end(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

grpc_front_end::~grpc_front_end() {
  if (impl_ && impl_->server) shutdown(0);
}

const listen_address& grpc_front_end::address() const noexcept { return impl_->bound; }

void grpc_front_end::shutdown(tick drain) {
  if (!impl_->server) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::nanoseconds(drain));
  impl_->server->Wait();
  impl_->server.reset();
}

result<std::unique_ptr<grpc_front_end>> grpc_front_end::start(service& svc, const listen_address& where,
                                                              const std::optional<tls_files>& tls) {
  auto p = std::make_unique<impl>(svc);
  const bool v6 = where.host.find(':') != std::string::npos;
  const std::string host = v6 ? "[" + where.host + "]" : where.host;
  const std::string target = host + ":" + std::to_string(where.port);
  grpc::ServerBuilder builder;
  int port = 0;
  // No SO_REUSEPORT (gRPC's default): a second server on the port is an
  // error here, not a silent share of the calls.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (tls) {
    grpc::SslServerCredentialsOptions o(tls->client_ca_pem.empty()
                                            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    o.pem_root_certs = tls->client_ca_pem;
    o.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
    credentials = grpc::SslServerCredentials(o);
  }
  builder.AddListeningPort(target, credentials, &port);
  builder.RegisterService(p.get());
  const auto body = svc.current()->lim.body_bytes;
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::clamp<std::size_t>(body, 4096, static_cast<std::size_t>(std::numeric_limits<int>::max()))));
  p->server = builder.BuildAndStart();
  if (!p->server || port == 0) {
    if (p->server) p->server->Shutdown();
    // gRPC loads the TLS files when it binds, and a port it cannot secure
    // fails as one it cannot bind: told apart by binding it without gRPC.
    if (tls && can_bind(where))
      return error{"grpc.tls_key_file", "gRPC refused the TLS files: is '" + tls->key_file +
                                            "' the unencrypted private key of '" + tls->cert_file + "'?"};
    return error{"grpc.listen", "cannot listen on " + target + " (in use, or not an address of this machine)"};
  }
  p->bound = listen_address{where.host, static_cast<std::uint16_t>(port)};
  return std::unique_ptr<grpc_front_end>(new grpc_front_end(std::move(p)));
}

}  // namespace sluice::serve::envoy
