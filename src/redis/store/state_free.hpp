// Answers that need no state (semantics.md, "Answers that need no state"):
// what a request's policies and costs alone say — always-allow admits,
// always-deny denies, a leaf asked past its capacity denies `never`, and
// all_of / any_of carry those up. Private to sluice::redis: the store
// decides a request that holds no state without a call, and keeps a known
// answer when the store fails instead of letting the failure mode decide.
#pragma once

#include <cstdint>

#include "redis/store/protocol.hpp"
#include "sluice/core/store.hpp"

namespace sluice::redis {

/// What the rules know of an answer.
enum class known : std::uint8_t {
  depends,  ///< it depends on a state
  admit,    ///< admitted, charging nothing
  deny,     ///< denied, never
};

/// The rules' answer, and whether it reads no state at all (every part
/// always-allow or always-deny: the figures are known too).
struct rule_answer {
  known k = known::depends;
  bool stateless = true;
};

/// The rules' answer for policy `p` (its plan, for each leaf's capacity)
/// asked at `cost` (≥ 1).
[[nodiscard]] rule_answer rule_of(const plan& p, std::int64_t cost) noexcept;

/// The rules' answer for a request, all_of over its checks: `plans[i]` the
/// plan of check i.
[[nodiscard]] rule_answer rule_of(const store_request& r, const plan* const* plans) noexcept;

}  // namespace sluice::redis
