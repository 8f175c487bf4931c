// The Redis store's face of the store interface (store.hpp): `run_at` and
// `run_async` over its decide, peek and report, and its capabilities. Only
// dispatch: each operation is the store's own member (store.cpp, report.cpp).
#include <utility>

#include "sluice/core/detail/run_members.hpp"
#include "sluice/redis/store.hpp"

namespace sluice {

store_decision redis_store::run_at(store_op op, const store_request& r, std::span<decision> per_check,
                                   std::span<std::optional<tick>> grows_after) {
  return detail::run_members(*this, op, r, per_check, grows_after);
}

void redis_store::run_async(store_op op, const store_request& r, std::span<decision> per_check,
                            std::span<std::optional<tick>> grows_after, decided done) {
  switch (op) {
    case store_op::decide:
      return decide_async(r, per_check, grows_after, std::move(done));
    case store_op::peek:
      // The asynchronous peek writes no per-check figures (redis.hpp).
      if (!per_check.empty()) return done(peek_at(r, per_check));
      return peek_async(r, std::move(done));
    case store_op::report:
      return report_async(r, per_check, std::move(done));
  }
  throw std::invalid_argument("sluice::redis_store::run_async: not an operation");
}

store_capabilities redis_store::capabilities() const noexcept {
  // The capabilities are faces of this store, which every caller may use
  // from any thread (store.hpp).
  auto* self = const_cast<redis_store*>(this);
  return {.refunds = self, .leases = self, .overrides = self, .introspection = self};
}

}  // namespace sluice
