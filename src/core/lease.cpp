// The walks over a policy that the stores use to find and release a lease
// (semantics.md, "Leases"); the concurrency limit itself, and its part of
// every operation over any policy, is src/core/concurrency.cpp.
#include "sluice/core/lease.hpp"

#include <variant>

namespace sluice {

bool holds_concurrency(const any_policy& p) noexcept {
  if (std::holds_alternative<concurrency>(p)) return true;
  const std::vector<any_policy>* parts = nullptr;
  if (const auto* a = std::get_if<all_of>(&p)) parts = &a->parts();
  if (const auto* o = std::get_if<any_of>(&p)) parts = &o->parts();
  if (parts == nullptr) return false;
  for (const auto& part : *parts)
    if (holds_concurrency(part)) return true;
  return false;
}

namespace {
template <typename F>
void each_concurrency(const any_policy& p, any_state& s, F&& f) {
  if (const auto* c = std::get_if<concurrency>(&p)) {
    f(*c, *std::get_if<concurrency::state>(&s));
    return;
  }
  const std::vector<any_policy>* parts = nullptr;
  std::vector<any_state>* states = nullptr;
  if (const auto* a = std::get_if<all_of>(&p)) {
    parts = &a->parts();
    states = &std::get_if<all_of_state>(&s)->parts;
  } else if (const auto* o = std::get_if<any_of>(&p)) {
    parts = &o->parts();
    states = &std::get_if<any_of_state>(&s)->parts;
  }
  if (parts == nullptr) return;
  for (std::size_t i = 0; i < parts->size() && i < states->size(); ++i) each_concurrency((*parts)[i], (*states)[i], f);
}
}  // namespace

std::int64_t release(const any_policy& p, any_state& s, tick now, std::uint64_t nonce) noexcept {
  std::int64_t freed = 0;
  each_concurrency(p, s, [&](const concurrency& c, concurrency::state& st) { freed += c.release(st, now, nonce); });
  return freed;
}

bool holds_lease(const any_policy& p, const any_state& s, tick now, std::uint64_t nonce) noexcept {
  bool found = false;
  each_concurrency(p, const_cast<any_state&>(s), [&](const concurrency&, concurrency::state& st) {
    const tick e = detail::max64(now, st.latest);
    for (const auto& l : st.leases)
      if (l.nonce == nonce && l.expiry > e) found = true;
  });
  return found;
}

}  // namespace sluice
