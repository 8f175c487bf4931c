// One policy over a store (store_limiter.hpp): each call a request of one
// check, answered with the check's own decision when the store decided it.
#include "sluice/core/store_limiter.hpp"

#include <vector>

namespace sluice {

namespace {

/// Whether `from` means the store decided the check (its own figures are
/// in `per_check`), rather than a failure mode or an error answering.
bool decided(source from) noexcept { return from == source::store || from == source::replayed; }

/// `d` with the check's own decision `own` in place of the request's, when
/// the store decided it.
store_decision with_own(store_decision d, const decision& own) noexcept {
  if (decided(d.from)) d.d = own;
  return d;
}

}  // namespace

result<store_limiter> store_limiter::make(store& s, std::string_view name, const any_policy& policy) {
  auto id = s.define(name, policy);
  if (!id) return id.err();
  return store_limiter(s, *id);
}

store_decision store_limiter::decide_at(std::string_view key, tick now, std::int64_t cost, std::string_view id) const {
  const check c{id_, key};
  decision own;
  return with_own(store_->decide_at({.checks = {&c, 1}, .now = now, .cost = cost, .id = id}, {&own, 1}), own);
}

store_decision store_limiter::peek_at(std::string_view key, tick now, std::int64_t cost) const {
  const check c{id_, key};
  decision own;
  return with_own(store_->peek_at({.checks = {&c, 1}, .now = now, .cost = cost, .id = {}}, {&own, 1}), own);
}

store_decision store_limiter::report_at(std::string_view key, tick now, std::int64_t cost) const {
  const check c{id_, key};
  decision own;
  return with_own(store_->report_at({.checks = {&c, 1}, .now = now, .cost = cost, .id = {}}, {&own, 1}), own);
}

void store_limiter::decide_many_at(std::span<const request> requests, std::span<store_decision> out) const {
  std::vector<check> checks(requests.size());
  std::vector<store_request> rs(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    checks[i] = check{id_, requests[i].key};
    rs[i] = store_request{
        .checks = {&checks[i], 1}, .now = requests[i].now, .cost = requests[i].cost, .id = requests[i].id};
  }
  store_->decide_many_at(rs, out);
}

}  // namespace sluice
