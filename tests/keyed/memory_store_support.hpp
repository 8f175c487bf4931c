// Shared by the memory store's tests: a policy that must parse, and one
// request of one check.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>

#include "sluice/core/policy_expr.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::memory_store_support {

/// `text` parsed as a policy (a failed test if it does not parse).
inline any_policy policy(std::string_view text) {
  auto p = parse_policy(text);
  EXPECT_TRUE(p.ok()) << text;
  return p.value();
}

/// One request of `cost` for `key` under `p` at `now`, with request id `id` (none: empty).
inline store_decision one(memory_store& s, policy_id p, std::string_view key, tick now, std::int64_t cost = 1,
                          std::string_view id = {}) {
  const check c{p, key};
  return s.decide_at({.checks = {&c, 1}, .now = now, .cost = cost, .id = id});
}

}  // namespace sluice::memory_store_support
