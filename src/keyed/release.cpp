// Releasing a lease (semantics.md, "Leases"): in the keyed store, one key's
// state under its shard lock; in the memory store, each check of a lease id
// through its policy's gate.
#include "release.hpp"

#include <mutex>

#include "keyed_impl.hpp"
#include "sluice/core/lease.hpp"

namespace sluice {

std::int64_t keyed_limiter::release_at(std::string_view key, std::uint64_t nonce, tick now) {
  impl& im = *impl_;
  // A concurrency part's state owns memory: such a policy is never compact.
  if (im.m != keyed_detail::mode::general) return 0;
  const auto h = im.hash(key);
  keyed_detail::shard& s = im.shard_for(h);
  std::lock_guard lock(s.mu);
  const keyed_detail::table* t = s.tab.load(std::memory_order_relaxed);
  keyed_detail::record* r = t != nullptr ? keyed_detail::find(t, impl::h21_for(h), key) : nullptr;
  if (r == nullptr) return 0;
  return release(im.policy, *reinterpret_cast<any_state*>(r->lo), now, nonce);
}

release_result memory_store::release_at(std::span<const check> checks, std::uint64_t nonce, tick now) {
  release_result out;
  if (checks.empty() || checks.size() > max_checks) {
    out.from = source::error;
    return out;
  }
  for (const check& c : checks)
    if (!keyed_detail::knows(*this, c.policy)) {  // nothing released
      out.from = source::error;
      return out;
    }
  for (std::size_t i = 0; i < checks.size(); ++i) {
    std::int64_t freed = 0;
    (void)keyed_detail::with_current(*this, checks[i].policy, checks[i].key,
                                     [&](keyed_limiter& k) { freed = k.release_at(checks[i].key, nonce, now); });
    out.per_check[i] = freed;
    out.units += freed;
  }
  return out;
}

}  // namespace sluice
