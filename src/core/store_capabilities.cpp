// The store's non-virtual members over its optional capabilities
// (store.hpp, store_capabilities): each asks the capability the store
// offers, or answers as a store without it — refunds `refund_status::error`,
// releases `source::error`, overrides the error "store", key counts
// `stats().keys`, figures none — nothing changed.
#include "sluice/core/store.hpp"

namespace sluice {

namespace {

error no_overrides() { return error{"store", "this store keeps no overrides", error_code::store_failed}; }

}  // namespace

refund_answer store::refund_at(std::string_view id, tick now, std::span<decision> per_check,
                               std::span<std::int64_t> given) {
  if (store_refunds* r = capabilities().refunds) return r->refund_at(id, now, per_check, given);
  refund_answer a;
  a.at = now;
  return a;
}

std::string store::refund_id(const store_request& r) const {
  if (const store_refunds* s = capabilities().refunds) return s->refund_id(r);
  return std::string(r.id);
}

release_result store::release_at(std::span<const check> checks, std::uint64_t nonce, tick now) {
  if (store_leases* l = capabilities().leases) return l->release_at(checks, nonce, now);
  release_result r;
  r.from = source::error;
  return r;
}

result<override_change> store::set_override_at(policy_id policy, std::string_view key, const any_policy& limit,
                                               tick now) {
  if (store_overrides* o = capabilities().overrides) return o->set_override_at(policy, key, limit, now);
  return no_overrides();
}

result<bool> store::delete_override_at(policy_id policy, std::string_view key, tick now) {
  if (store_overrides* o = capabilities().overrides) return o->delete_override_at(policy, key, now);
  return no_overrides();
}

result<std::optional<any_policy>> store::override_of(policy_id policy, std::string_view key) {
  if (store_overrides* o = capabilities().overrides) return o->override_of(policy, key);
  return no_overrides();
}

result<override_page> store::list_overrides(policy_id policy, std::string_view after, std::size_t limit) {
  if (store_overrides* o = capabilities().overrides) return o->list_overrides(policy, after, limit);
  return no_overrides();
}

std::optional<std::uint64_t> store::override_count() const {
  if (const store_overrides* o = capabilities().overrides) return o->override_count();
  return std::nullopt;
}

std::optional<any_policy> store::override_seen(policy_id policy, std::string_view key) {
  if (store_overrides* o = capabilities().overrides) return o->override_seen(policy, key);
  return std::nullopt;
}

std::optional<std::uint64_t> store::count_keys() {
  if (store_introspection* i = capabilities().introspection) return i->count_keys();
  return stats().keys;
}

void store::count_keys_async(std::function<void(std::optional<std::uint64_t>)> done) {
  if (store_introspection* i = capabilities().introspection) return i->count_keys_async(std::move(done));
  done(stats().keys);
}

std::optional<store_figures> store::figures() const {
  if (const store_introspection* i = capabilities().introspection) return i->figures();
  return std::nullopt;
}

}  // namespace sluice
