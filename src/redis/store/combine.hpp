// A request's checks decided together, as all_of over them (store.hpp):
// the core's all_of rule on states held outside a limiter, writing each
// check's own decision. Private to sluice::redis (the Redis store and its
// local fallback).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/detail/all_of_fold.hpp"
#include "sluice/core/time.hpp"

namespace sluice::redis {

/// Decides one request over `policies[i]` with `states[i]` at `costs[i]`
/// units (the same size), as the core `decide(all_of)` does over its parts:
/// admitted iff every check admits at its cost, and only then does every
/// state change. `d.part` is the
/// binding check. Writes check i's decision to `per_check[i]` when
/// `per_check` is not empty (store.hpp: on a denied request, a check that
/// would have admitted reports a denial with retry_after 0 and its
/// untouched state's remaining and reset_after), exactly as the memory
/// store's multi-key form.
inline decision combine(const std::vector<const any_policy*>& policies, std::vector<any_state>& states, tick now,
                        std::span<const std::int64_t> costs, std::span<decision> per_check) {
  std::vector<decision> trial(policies.size());
  bool all = true;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    trial[i] = peek(*policies[i], states[i], now, costs[i]);
    if (!trial[i].allowed) all = false;
  }
  detail::all_of_fold fold;  // the one all_of rule (sluice/detail/all_of_fold.hpp)
  if (!all) {
    // As the memory store's multi-key form (store.hpp): a check that would
    // have admitted reports a denial with no wait, and the remaining and
    // reset_after of its untouched state.
    fold.mark_denied();
    for (std::size_t k = 0; k < policies.size(); ++k) {
      decision d = trial[k];
      if (d.allowed) {
        any_state copy = states[k];
        const decision u = decide(*policies[k], copy, now, 0);
        d.allowed = false;
        d.remaining = u.remaining;
        d.reset_after = u.reset_after;
        d.retry_after = 0;
        d.release_after = 0;
      }
      fold.as_is(d.remaining, d.reset_after);
      if (!d.allowed && d.retry_after != 0) fold.deny(static_cast<std::int32_t>(k), d);
      if (k < per_check.size()) per_check[k] = d;
    }
    return fold.result();
  }
  for (std::size_t k = 0; k < policies.size(); ++k) {
    const decision d = decide(*policies[k], states[k], now, costs[k]);
    fold.admit(static_cast<std::int32_t>(k), d);
    if (k < per_check.size()) per_check[k] = d;
  }
  return fold.result();
}

}  // namespace sluice::redis
