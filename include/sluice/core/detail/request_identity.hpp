// A request id's identity (store.hpp, store_request::id; semantics.md,
// "Request ids"), the bytes two requests with one id must share to be the
// same request. Every store (the memory store in sluice::keyed, the Redis
// store in sluice::redis, a store of your own) builds it here, so that they
// agree on what a conflict is.
//
// Internal to sluice's stores (installed because stores in other targets
// share it); not part of the API, may change between versions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/store.hpp"

namespace sluice::detail {

/// The identity of `r` into `out` (cleared first): its number of checks,
/// then per check its policy's name (`name_of_check(i)`), its key and its
/// cost (`cost_of`), each length-prefixed, so that no two different lists
/// share one identity.
template <typename NameOf>
void request_identity(const store_request& r, NameOf name_of_check, std::string& out) {
  out.clear();
  out.append(std::to_string(r.checks.size())).push_back('|');
  for (std::size_t i = 0; i < r.checks.size(); ++i) {
    const std::string_view name = name_of_check(i);
    out.append(std::to_string(name.size())).push_back(':');
    out.append(name);
    out.append(std::to_string(r.checks[i].key.size())).push_back(':');
    out.append(r.checks[i].key);
    out.append(std::to_string(cost_of(r, r.checks[i]))).push_back(';');
  }
}

}  // namespace sluice::detail
