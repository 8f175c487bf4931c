// A refund by request id in the in-process store (semantics.md, "Refunds").
#include <algorithm>
#include <mutex>

#include "memory_store_impl.hpp"

namespace sluice {

refund_answer memory_store::impl::refund(std::string_view id, tick now, std::span<decision> per_check,
                                         std::span<std::int64_t> given) {
  refund_answer a;
  a.at = now;
  if (opt.idempotency_window <= 0) {
    a.status = refund_status::unknown_id;
    return a;
  }
  id_stripe& s = stripe_of(id);
  std::lock_guard lock(s.mu);
  id_entry* e = remembered(s, id, id_now(now));
  if (e == nullptr) {
    a.status = refund_status::unknown_id;
    return a;
  }
  if (e->refunded) {
    a.status = refund_status::already_refunded;
    return a;
  }
  if (!e->charged) {
    a.status = refund_status::not_refundable;
    return a;
  }
  const std::size_t n = e->checks.size();
  policy_entry* es[max_checks];
  for (std::size_t i = 0; i < n; ++i) es[i] = entry_of(e->checks[i].first);
  decision pc[max_checks];
  std::int64_t back[max_checks] = {};
  through_gates(std::span<policy_entry* const>(es, n), [&](const store_guard&) {
    keyed_check ks[max_checks];
    for (std::size_t i = 0; i < n; ++i) ks[i] = {resolve(*es[i], e->checks[i].second), e->checks[i].second, 1};
    a.d = keyed_limiter::refund_all_at(std::span<const keyed_check>(ks, n), now,
                                       std::span<receipt>(e->receipts.data(), n), std::span<decision>(pc, n),
                                       std::span<std::int64_t>(back, n));
  });
  e->refunded = true;
  e->receipts.clear();
  a.status = refund_status::refunded;
  a.checks = n;
  for (std::size_t i = 0; i < std::min(n, per_check.size()); ++i) per_check[i] = pc[i];
  for (std::size_t i = 0; i < std::min(n, given.size()); ++i) given[i] = back[i];
  return a;
}

}  // namespace sluice
