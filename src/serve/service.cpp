// The decision service (service.hpp): its configuration and reloads, the
// decision path's bookkeeping, and what it asks of its store.
#include "service.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "lease_token.hpp"
#include "sluice/keyed/memory.hpp"
#include "sluice/keyed/snapshot.hpp"
#include "stores.hpp"

namespace sluice::serve {

service::service(std::unique_ptr<store> st)
    : store_(std::move(st)), in_process_(dynamic_cast<memory_store*>(store_.get()) != nullptr) {}

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
    a->current_limits.push_back(current_limit_of(p.policy));
  }
  for (const envoy_rule& r : cfg->envoy) {
    const named_policy* p = r.unlimited ? nullptr : cfg->find_policy(r.policy);
    a->envoy_policy.push_back(
        p == nullptr ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(p - cfg->policies.data())));
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

tick service::now() const { return store_->now(); }

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

void service::report(std::shared_ptr<const active> ap, std::vector<planned_check> checks, tick now,
                     checks_reported then) {
  // What the store reads until it answers (it may answer on its own thread).
  struct job {
    std::shared_ptr<const active> a;
    std::array<check, max_checks> req_checks;
    std::array<decision, max_checks> per;
    std::size_t n = 0;
  };
  auto j = std::make_shared<job>();
  j->a = std::move(ap);
  j->n = checks.size();
  for (std::size_t i = 0; i < j->n; ++i)
    j->req_checks[i] = check{j->a->view.ids[checks[i].policy], checks[i].key, checks[i].cost};
  const store_request r{std::span<const check>(j->req_checks.data(), j->n), now, 1, {}};
  enter();
  store_->report_async(r, std::span<decision>(j->per.data(), j->n),
                       [this, j, then = std::move(then)](const store_decision& sd) {
                         metrics_.count_source(sd.from);
                         then(sd, std::span<const decision>(j->per.data(), j->n));
                         leave();
                       });
}

void service::ready(std::function<void(bool)> then) {
  if (draining_.load(std::memory_order_relaxed)) {
    then(false);
    return;
  }
  auto a = active_.load();
  if (a->view.ids.empty()) {
    then(true);
    return;
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
                     [this, p, then = std::move(then)](const store_decision& d) {
                       then(d.from == source::store || d.from == source::deny_cache || d.from == source::replayed);
                       leave();
                     });
}

void service::render_metrics(std::function<void(std::string)> then) {
  enter();
  store_->count_keys_async([this, then = std::move(then)](std::optional<std::uint64_t> keys) {
    const auto figures = store_->figures();
    std::optional<memory_figures> mem;
    if (const auto* m = dynamic_cast<const memory_store*>(store_.get())) {
      const keyed_stats k = m->keyed_totals();
      mem = memory_figures{k.bytes, k.purged, k.refused, max_keys_};
    }
    then(metrics_.render(store_->stats(), keys, figures ? &*figures : nullptr, mem, store_->override_count()));
    leave();
  });
}

std::optional<any_policy> service::override_seen(policy_id id, std::string_view key) const {
  return store_->override_seen(id, key);
}

refund_answer service::refund(std::string_view id, tick now, std::span<decision> per, std::span<std::int64_t> given) {
  const tick t0 = steady_clock::now();
  const refund_answer ra = store_->refund_at(id, now, per, given);
  metrics_.observe_latency(steady_clock::now() - t0);
  metrics_.count_refund(ra.status);
  return ra;
}

release_result service::release(std::span<const check> checks, std::uint64_t nonce, tick now) {
  return store_->release_at(checks, nonce, now);
}

result<override_change> service::set_override(policy_id id, std::string_view key, const any_policy& limit) {
  auto set = store_->set_override_at(id, key, limit, store_->now());
  if (set && *set == override_change::created) metrics_.overrides_created.fetch_add(1, std::memory_order_relaxed);
  if (set && *set == override_change::replaced) metrics_.overrides_replaced.fetch_add(1, std::memory_order_relaxed);
  return set;
}

result<bool> service::delete_override(policy_id id, std::string_view key) {
  auto gone = store_->delete_override_at(id, key, store_->now());
  if (gone && *gone) metrics_.overrides_deleted.fetch_add(1, std::memory_order_relaxed);
  return gone;
}

result<std::optional<any_policy>> service::override_of(policy_id id, std::string_view key) {
  return store_->override_of(id, key);
}

result<override_page> service::list_overrides(policy_id id, std::string_view after, std::size_t limit) {
  return store_->list_overrides(id, after, limit);
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

result<bool> service::attach_loops(std::span<boost::asio::io_context* const> loops) {
  auto* ls = dynamic_cast<remote::loop_store*>(store_.get());
  if (ls == nullptr) return false;
  auto attached = ls->attach_loops(loops);
  if (!attached) return attached.err();
  loop_store_.store(ls);
  return true;
}

void service::detach_loop(boost::asio::io_context& loop) {
  if (auto* ls = loop_store_.load()) ls->detach_loop(loop);
}

result<snapshot_report> service::save_snapshots(const std::string& dir) {
  return serve::save_snapshots(*store_, *current(), dir);
}

result<snapshot_report> service::load_snapshots(const std::string& dir) {
  return serve::load_snapshots(*store_, *current(), dir);
}

}  // namespace sluice::serve
