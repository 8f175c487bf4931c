// The Redis store's wire protocol (private to sluice::redis): what the C++
// side sends to the Lua library (src/redis/lua/) for one policy, and how it
// reads and writes the values the library stores.
//
// The split (research/redis-design.md §1.3): the client does, in int128,
// every multiplication and division that depends only on the configuration
// and the cost, and splits instants into 32-bit limbs and window indices;
// the script only adds, subtracts and compares integers below 2^53. Every
// number travels as an 8-byte double (binary.hpp): the request's in one
// binary argument, a stored value as its 9-byte tag and its fields. The
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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redis/client/binary.hpp"
#include "sluice/core/any.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice::redis {

/// The length of a tag: a type letter and 8 hex digits.
inline constexpr std::size_t tag_size = 9;

/// One stateful leaf of a policy tree (a plain algorithm, not always-*), with
/// the constants its arguments are computed from.
struct leaf_plan : portable::redis_constants {
  const any_policy* policy = nullptr;  ///< the leaf, inside plan::policy
  char letter = 'g';                   ///< the state's type letter (g, q, f, c, u, s, b, l)
  char tag[tag_size] = {};             ///< letter + 8 hex digits: CRC-32C of the whole policy and the leaf's index
  std::string suffix;                  ///< appended to the check's key ("" for a plain policy, ":0.1" ...)
  /// The largest cost the leaf admits at once, on a fresh state (its
  /// capacity; semantics.md, "Answers that need no state"): every larger
  /// cost is denied `never` whatever the state. INT64_MAX when unknown.
  std::int64_t most = detail::i64_max;
  // Its constants (portable::redis_constants, from its description's
  // redis_plan): GCRA, token bucket: S·W = sq·L + sr; leaky queue:
  // Q·W = sq·L + sr and W = wq·L + wr (L ≥ 1); the three: the most debt
  // (backlog) a report may leave, K = kq·L + kr; 0 when L = 0.

  [[nodiscard]] std::string_view tag_view() const noexcept { return {tag, tag_size}; }
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
  /// True for a plain stateful policy: one leaf, no composite around it
  /// (decided by `sluice_v2_one`).
  [[nodiscard]] bool single() const noexcept { return single_; }
  /// True when some leaf is a concurrency part: its admits take leases, so
  /// a request on it draws a nonce (semantics.md, "Leases").
  [[nodiscard]] bool leases() const noexcept { return leases_; }

  /// Appends the tree's tokens and every leaf's tag and arguments for a
  /// request of `cost` at `now` (the prefix form of `sluice_v2_decide`);
  /// `report`: for `sluice_v2_report`, every leaf in mode 2 (a limit of 0
  /// in mode 0: nothing to charge), its cost sent saturated at what the
  /// library's bound needs (semantics.md, "Reports").
  void append_tree(tick now, std::int64_t cost, std::string& out, bool report = false) const;
  /// Appends leaf `i`'s tag and arguments.
  void append_leaf(std::size_t i, tick now, std::int64_t cost, std::string& out, bool report = false) const;

  /// The core state of the whole policy from its leaves' states, in leaf
  /// order (moved from `leaf_states`).
  [[nodiscard]] any_state assemble(std::span<any_state> leaf_states) const;

  /// The core states of the leaves of `s` (a state of this policy), in leaf
  /// order.
  void leaf_states(const any_state& s, std::vector<const any_state*>& out) const;

  /// One leaf's state from its stored value (nullopt: fresh), checked as
  /// the library checks it; an error when the value is not one this leaf
  /// writes (its tag included). `latest` is raised to the instant of the
  /// value's latest admit, when it holds one.
  [[nodiscard]] result<any_state> decode_leaf(std::size_t i, std::optional<std::string_view> value, tick& latest) const;

  /// Leaf `i`'s stored value for `s` (a state of that leaf after an admit at
  /// `at`, the instant the library would write: the later of the request's
  /// and the latest admit's), appended to `out` with its tag; false when the
  /// library could not hold it (a number past 2^53) — nothing is then
  /// appended.
  bool encode_leaf(std::size_t i, const any_state& s, tick at, std::string& out) const;

  /// How many ticks after a write of leaf `i`'s value `value` (as
  /// encode_leaf wrote it) its state is fresh, as the library computes it;
  /// -1 for never (a quota).
  [[nodiscard]] std::int64_t ticks_to_fresh(std::size_t i, std::string_view value) const;

  /// The nonce of the lease an admit added at concurrency leaf `i`: the one
  /// held in `after` that `before` does not hold (values as the library
  /// writes them); 0 when none (not a concurrency leaf, no admit there, a
  /// value that does not decode). What a replay and a refund by request id
  /// find the first decision's lease by.
  [[nodiscard]] std::uint64_t issued_nonce(std::size_t i, std::optional<std::string_view> before,
                                           std::optional<std::string_view> after) const;

 private:
  plan() = default;
  std::shared_ptr<const any_policy> policy_;
  std::vector<leaf_plan> leaves_;
  bool single_ = false;
  bool leases_ = false;
};

/// The limbs of a 64-bit value: v = h·2^32 + l, 0 ≤ l < 2^32.
constexpr void split_limbs(std::int64_t v, std::int64_t& h, std::int64_t& l) noexcept {
  h = v >> 32;
  l = static_cast<std::int64_t>(static_cast<std::uint64_t>(v) & 0xFFFFFFFFULL);
}

/// Appends the limbs of `v` (split_limbs) as two numbers (binary.hpp).
inline void put_limbs(std::string& out, std::int64_t v) {
  std::int64_t h = 0;
  std::int64_t l = 0;
  split_limbs(v, h, l);
  put_number(out, h);
  put_number(out, l);
}

/// Whether `v` looks like a value of this library (a type letter and 8 hex
/// digits), whatever its configuration. Inline: the value codec
/// (value_codec.hpp) uses it without the rest of the protocol.
namespace tag_shape {
/// Whether `c` is the type letter of some algorithm's values (portable.hpp).
template <std::size_t... I>
constexpr bool is_letter(char c, std::index_sequence<I...>) noexcept {
  const auto letter_is = [c]<typename P>(const P*) {
    if constexpr (holds_no_leaf_state<P>) {
      return false;
    } else {
      return portable::of<P>::letter == c;
    }
  };
  return (letter_is(static_cast<const std::variant_alternative_t<I, any_policy>*>(nullptr)) || ...);
}
}  // namespace tag_shape

inline bool has_tag_shape(std::string_view v) noexcept {
  if (v.size() < tag_size || !tag_shape::is_letter(v[0], std::make_index_sequence<std::variant_size_v<any_policy>>{}))
    return false;
  for (std::size_t i = 1; i < tag_size; ++i)
    if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f'))) return false;
  return true;
}

}  // namespace sluice::redis
