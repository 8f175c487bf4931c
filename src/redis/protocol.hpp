// The Redis store's wire protocol (private to sluice::redis): what the C++
// side sends to the Lua library (src/redis/lua/) for one policy, and how it
// reads back the states the library returns.
//
// The split (research/redis-design.md §1.3): the client does, in int128,
// every multiplication and division that depends only on the configuration
// and the cost, and splits instants into 32-bit limbs and window indices;
// the script only adds, subtracts and compares integers below 2^53. The
// script decides admit and writes the new states; it returns every leaf's
// stored value before the decision (and the value it wrote), and the client
// rebuilds the core states from them and derives every figure with the core
// `decide`. A `plan` is built once per defined policy; `plan::make` refuses a
// configuration whose quantities the Lua arithmetic cannot hold exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/any.hpp"
#include "sluice/detail/arith.hpp"
#include "sluice/result.hpp"
#include "sluice/time.hpp"

namespace sluice::redis {

/// One stateful leaf of a policy tree (a plain algorithm, not always-*), with
/// the constants its arguments are computed from.
struct leaf_plan {
  const any_policy* policy = nullptr;  ///< the leaf, inside plan::policy
  char letter = 'g';                   ///< the state's type letter (g, q, f, c, u, s, b)
  std::string tag;                     ///< letter + 8 hex digits of the configuration's CRC
  std::string suffix;                  ///< appended to the check's key ("" for a plain policy, ":0.1" ...)
  // GCRA, token bucket, leaky queue: L and W reduced by g = gcd(L, W).
  detail::i128 g = 1, l1 = 1, w1 = 1;
  detail::i128 sq = 0, sr = 0;  ///< S·W' (or Q·W') = sq·L' + sr
  detail::i128 wq = 0, wr = 0;  ///< W' = wq·L' + wr (leaky queue)
};

/// How one policy is sent: the tree in prefix form, its stateful leaves in
/// order (each takes one key).
class plan {
 public:
  /// Builds the plan of `p`; the error names the field and the bound when a
  /// quantity of `p` is outside what the Lua arithmetic holds exactly.
  static result<plan> make(const any_policy& p);

  [[nodiscard]] const any_policy& policy() const noexcept { return *policy_; }
  [[nodiscard]] const std::vector<leaf_plan>& leaves() const noexcept { return leaves_; }

  /// Appends the tree's tokens and every leaf's arguments for a request of
  /// `cost` at `now`.
  void append_args(tick now, std::int64_t cost, std::vector<std::string>& out) const;

  /// The core state of the whole policy from its leaves' stored values
  /// (`values[i]` for leaf i, nullopt when fresh), checked; an error when a
  /// value is not one this configuration writes. `latest` gets the latest
  /// admit's instant over the leaves (INT64_MIN when all are fresh).
  [[nodiscard]] result<any_state> decode(const std::vector<std::optional<std::string_view>>& values,
                                         tick& latest) const;

  /// The core states of the leaves of `s` (a state of this policy), in leaf
  /// order, for comparing with the values the script wrote.
  void leaf_states(const any_state& s, std::vector<const any_state*>& out) const;

  /// One leaf's state from its stored value (nullopt: fresh); `latest` as
  /// in decode.
  [[nodiscard]] result<any_state> decode_leaf(std::size_t i, std::optional<std::string_view> value, tick& latest) const;

 private:
  plan() = default;
  std::shared_ptr<const any_policy> policy_;
  std::vector<leaf_plan> leaves_;
};

/// The limbs of a 64-bit value: v = h·2^32 + l, 0 ≤ l < 2^32.
constexpr void split_limbs(std::int64_t v, std::int64_t& h, std::int64_t& l) noexcept {
  h = v >> 32;
  l = static_cast<std::int64_t>(static_cast<std::uint64_t>(v) & 0xFFFFFFFFULL);
}

}  // namespace sluice::redis
