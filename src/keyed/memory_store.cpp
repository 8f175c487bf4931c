// The in-process store (store/memory.hpp): policies, the gate that makes a
// live redefinition atomic for the decisions around it, request ids, and
// per-thread counters. Its internals are memory_store_impl.hpp; a
// redefinition's carry-over is memory_store_carry.cpp, a refund
// memory_store_refund.cpp.
#include "sluice/keyed/memory.hpp"

#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>

#include "memory_store_impl.hpp"
#include "sluice/core/detail/run_members.hpp"

namespace sluice {

memory_store::memory_store(memory_store_options options) : impl_(std::make_unique<impl>(options)) {}

memory_store::~memory_store() = default;

result<policy_id> memory_store::define(std::string_view name, const any_policy& policy) {
  return define_at(name, policy, now());
}

result<policy_id> memory_store::define_at(std::string_view name, const any_policy& policy, tick at) {
  if (name.empty()) return error{"name", "a policy needs a name"};
  impl& im = *impl_;
  policy_entry* e = nullptr;
  policy_id id = 0;
  {
    std::lock_guard lock(im.define_mu);
    if (auto it = im.names.find(std::string(name)); it != im.names.end()) {
      id = it->second;
      e = im.entries[id].get();
    } else {
      if (im.entries.size() >= im.opt.max_policies)
        return error{"policies", "the store holds at most " + std::to_string(im.opt.max_policies) + " policies"};
      auto fresh = std::make_unique<policy_entry>();
      fresh->name = std::string(name);
      fresh->stateless = holds_no_state(policy);
      fresh->leases = holds_concurrency(policy);
      if (fresh->leases) im.leases.store(true, std::memory_order_relaxed);
      fresh->owned = im.make_limiter(policy, im.opt.keyed);
      fresh->current.store(fresh->owned.get(), std::memory_order_relaxed);
      id = static_cast<policy_id>(im.entries.size());
      im.names.emplace(fresh->name, id);
      im.slots[id].store(fresh.get(), std::memory_order_release);
      im.entries.push_back(std::move(fresh));
      return id;
    }
  }
  return im.redefine(*e, id, policy, at);
}

namespace keyed_detail {
bool knows(memory_store& m, policy_id id) noexcept { return detail::keyed_internals::of(m).entry_of(id) != nullptr; }

bool with_current(memory_store& m, policy_id id, std::string_view key, const std::function<void(keyed_limiter&)>& fn) {
  memory_store::impl& im = detail::keyed_internals::of(m);
  policy_entry* e = im.entry_of(id);
  if (e == nullptr) return false;
  im.through_gates(std::span<policy_entry* const>(&e, 1),
                   [&](const store_guard&) { fn(*memory_store::impl::resolve(*e, key)); });
  return true;
}

bool with_overrides(memory_store& m, policy_id id, bool closed, std::optional<std::string_view> key,
                    const std::function<void(override_table&, keyed_limiter&)>& fn) {
  memory_store::impl& im = detail::keyed_internals::of(m);
  policy_entry* e = im.entry_of(id);
  if (e == nullptr) return false;
  std::lock_guard r(e->redefine);
  if (!closed) {
    im.settle(*e);
    fn(e->overrides, *e->owned);
    return true;
  }
  e->closed.store(true, std::memory_order_seq_cst);
  synchronize(domain::store);  // decisions in flight on this policy end
  struct reopen {
    memory_store::impl& im;
    policy_entry& e;
    ~reopen() {
      {
        std::lock_guard g(im.gate_mu);
        e.closed.store(false, std::memory_order_release);
      }
      im.gate_cv.notify_all();
    }
  } const open_again{im, *e};
  // The key's state moves now: first out of any earlier configuration.
  if (const carry_chain* ch = e->pending.load(std::memory_order_acquire);
      ch != nullptr && key && !e->overrides.find(*key))
    carry_key(*ch, *e->owned, *key);
  fn(e->overrides, *e->owned);
  return true;
}

std::atomic<std::size_t>& override_total(memory_store& m) noexcept { return detail::keyed_internals::of(m).overrides; }

const memory_store_options& options_of(memory_store& m) noexcept { return detail::keyed_internals::of(m).opt; }
}  // namespace keyed_detail

store_decision memory_store::decide_at(const store_request& r, std::span<decision> per_check,
                                       std::span<std::optional<tick>> grows_after) {
  if (impl_->leases.load(std::memory_order_relaxed)) [[unlikely]] {
    // A policy with a concurrency part is defined: every decision draws a
    // nonce for the leases it may take (semantics.md, "Leases").
    const lease_scope scope(draw_lease_nonce());
    store_decision d = impl_->decide(r, per_check, true, grows_after);
    d.at = r.now;
    if (d.lease == 0) d.lease = issued_lease(d);
    return d;
  }
  store_decision d = impl_->decide(r, per_check, true, grows_after);
  d.at = r.now;
  return d;
}

void memory_store::decide_many_at(std::span<const store_request> requests, std::span<store_decision> out) {
  if (out.size() < requests.size())
    throw std::invalid_argument("sluice::memory_store::decide_many_at: out is shorter than requests");
  impl& im = *impl_;
  if (im.leases.load(std::memory_order_relaxed)) [[unlikely]] {  // each its own nonce
    for (std::size_t k = 0; k < requests.size(); ++k) out[k] = decide_at(requests[k]);
    return;
  }
  std::size_t i = 0;
  while (i < requests.size()) {
    // A run of plain single-check requests of one policy goes to that
    // policy's keyed store as one batch; anything else one by one.
    std::size_t j = i;
    while (j < requests.size() && im.plain(requests[j]) && requests[j].checks[0].policy == requests[i].checks[0].policy)
      ++j;
    if (j - i >= 2) {
      im.decide_run(requests, i, j, out.data());
      i = j;
    } else {
      out[i] = im.decide(requests[i], {}, true);
      ++i;
    }
  }
  for (std::size_t k = 0; k < requests.size(); ++k) out[k].at = requests[k].now;
}

store_decision memory_store::peek_at(const store_request& r, std::span<decision> per_check) {
  store_decision d = impl_->decide(r, per_check, false);
  d.at = r.now;
  return d;
}

store_decision memory_store::report_at(const store_request& r, std::span<decision> per_check) {
  store_decision d = impl_->report(r, per_check);
  d.at = r.now;
  return d;
}

store_decision memory_store::run_at(store_op op, const store_request& r, std::span<decision> per_check,
                                    std::span<std::optional<tick>> grows_after) {
  return detail::run_members(*this, op, r, per_check, grows_after);
}

store_capabilities memory_store::capabilities() const noexcept {
  // The capabilities are faces of this store, which every caller may use
  // from any thread (store.hpp).
  auto* self = const_cast<memory_store*>(this);
  return {.refunds = self, .leases = self, .overrides = self, .introspection = nullptr};
}

refund_answer memory_store::refund_at(std::string_view id, tick now, std::span<decision> per_check,
                                      std::span<std::int64_t> given) {
  return impl_->refund(id, now, per_check, given);
}

tick memory_store::now() const noexcept {
  return impl_->opt.clock != nullptr ? impl_->opt.clock->now() : unix_clock::now();
}

store_stats memory_store::stats() const {
  const impl& im = *impl_;
  store_stats out;
  for (const counter_stripe& s : im.stripes) {
    out.from_store += s.from_store.load(std::memory_order_relaxed);
    out.replayed += s.replayed.load(std::memory_order_relaxed);
    out.errors += s.errors.load(std::memory_order_relaxed);
    out.id_conflicts += s.conflicts.load(std::memory_order_relaxed);
  }
  if (im.opt.keyed.budget) out.fallbacks = im.opt.keyed.budget->refused();
  out.fallbacks += im.ids_refused.load(std::memory_order_relaxed);
  out.decisions = out.from_store + out.replayed + out.errors + out.fallbacks + out.id_conflicts;
  std::lock_guard lock(impl_->define_mu);
  for (const auto& e : im.entries) {
    std::lock_guard r(e->redefine);
    out.keys += e->owned->stats().keys;
    for (const auto& f : e->frozen) out.keys += f->stats().keys;  // not carried over yet
    for (const auto& o : e->overrides.map) out.keys += o.second->stats().keys;
  }
  return out;
}

keyed_stats memory_store::keyed_totals() const {
  keyed_stats out;
  std::lock_guard lock(impl_->define_mu);
  for (const auto& e : impl_->entries) {
    std::lock_guard r(e->redefine);
    const keyed_stats s = e->owned->stats();
    out.keys += s.keys;
    out.purged += s.purged;
    out.evicted += s.evicted;
    out.units_forgiven += s.units_forgiven;
    out.refused += s.refused;
    out.bytes += s.bytes;
  }
  return out;
}

std::optional<policy_id> memory_store::find(std::string_view name) const {
  std::lock_guard lock(impl_->define_mu);
  auto it = impl_->names.find(std::string(name));
  if (it == impl_->names.end()) return std::nullopt;
  return it->second;
}

bool memory_store::with_keyed(policy_id id, const std::function<void(keyed_limiter&)>& fn) {
  policy_entry* e = impl_->entry_of(id);
  if (e == nullptr) return false;
  std::lock_guard r(e->redefine);
  impl_->settle(*e);
  fn(*e->owned);
  return true;
}

std::size_t memory_store::purge(tick now) {
  impl& im = *impl_;
  std::size_t dropped = 0;
  std::vector<policy_entry*> es;
  {
    std::lock_guard lock(im.define_mu);
    for (const auto& e : im.entries) es.push_back(e.get());
  }
  for (policy_entry* e : es) {
    std::lock_guard r(e->redefine);
    im.settle(*e);  // a state not carried over yet is purged as its carried state
    dropped += e->owned->purge(now, 1024);
    for (auto& o : e->overrides.map) dropped += o.second->purge(now, 1024);
  }
  im.forget_all_expired(im.id_now(now));
  return dropped;
}

void memory_store::for_each_policy(const std::function<void(std::string_view, keyed_limiter&)>& fn) {
  std::vector<policy_entry*> es;
  {
    std::lock_guard lock(impl_->define_mu);
    for (const auto& e : impl_->entries) es.push_back(e.get());
  }
  for (policy_entry* e : es) {
    std::lock_guard r(e->redefine);
    impl_->settle(*e);
    fn(e->name, *e->owned);
  }
}

void memory_store::for_each_policy_with_overrides(
    const std::function<void(std::string_view, keyed_limiter&, std::span<const override_state>)>& fn) {
  std::vector<policy_entry*> es;
  {
    std::lock_guard lock(impl_->define_mu);
    for (const auto& e : impl_->entries) es.push_back(e.get());
  }
  std::vector<override_state> os;
  for (policy_entry* e : es) {
    std::lock_guard r(e->redefine);
    impl_->settle(*e);
    os.clear();
    for (const auto& [key, states] : e->overrides.map)
      os.push_back({key, states->policy(), states->state_of(key).value_or(fresh_state(states->policy()))});
    std::sort(os.begin(), os.end(), [](const override_state& a, const override_state& b) { return a.key < b.key; });
    fn(e->name, *e->owned, os);
  }
}

}  // namespace sluice
