// Choosing an algorithm at run time: a policy and a state that can be any of
// sluice's limiters, one `decide` over them, and a plain description
// (`spec`) that the command line and the stores build policies from.
//
// Composition lives here too, because a composite is itself any policy and
// holds any policies: `all_of` admits iff every part admits (and only then
// does every part consume), `any_of` admits iff some part admits and
// consumes from the first part, in order, that does. A composite decides in
// time proportional to its number of parts (nested ones included), however
// deep it is nested: every part is first asked, without changing it, what
// it would answer, and only then do the parts that consume decide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "sluice/core/concurrency.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/fixed_window.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/leaky_queue.hpp"
#include "sluice/core/quota.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/sliding_buckets.hpp"
#include "sluice/core/sliding_counter.hpp"
#include "sluice/core/sliding_log.hpp"
#include "sluice/core/token_bucket.hpp"

namespace sluice {

/// Every algorithm sluice implements.
enum class algorithm {
  fixed_window,
  sliding_log,
  sliding_counter,
  sliding_buckets,
  token_bucket,
  gcra,
  leaky_queue,
  quota,
  always_allow,
  always_deny,
  concurrency,
  all_of,
  any_of,
};

/// The command-line name of an algorithm: "fixed-window", "token-bucket", ...
std::string_view name_of(algorithm a) noexcept;
/// The algorithm with that command-line name, if any.
std::optional<algorithm> algorithm_named(std::string_view name) noexcept;
/// All names, comma-separated, for help and error messages.
std::string algorithm_names();

class all_of;
class any_of;
struct all_of_state;
struct any_of_state;

/// Whether `P`, an alternative of any_policy, keeps no state of its own per
/// key: the constant answers (always_allow, always_deny) and the composites
/// (all_of, any_of: their state is their parts'). A site that handles the
/// stateful algorithms one by one in an `if constexpr` chain ends it in
/// `else { static_assert(holds_no_leaf_state<P>, ...); }`, so that adding an
/// algorithm fails to compile there until the site handles it
/// (docs/architecture.md, "Adding an algorithm").
template <typename P>
inline constexpr bool holds_no_leaf_state = std::is_same_v<P, always_allow> || std::is_same_v<P, always_deny> ||
                                            std::is_same_v<P, all_of> || std::is_same_v<P, any_of>;

/// Always false: the last `else` of an `if constexpr` chain that must name
/// every alternative of any_policy is `static_assert(unhandled_algorithm<P>,
/// ...)`, so that a new algorithm fails to compile there.
template <typename P>
inline constexpr bool unhandled_algorithm = false;

/// A policy of any algorithm or composite. The alternatives' order matches
/// `algorithm`.
using any_policy = std::variant<fixed_window, sliding_log, sliding_counter, sliding_buckets, token_bucket, gcra,
                                leaky_queue, quota, always_allow, always_deny, concurrency, all_of, any_of>;
/// A state of any algorithm; holds the alternative matching its policy.
using any_state = std::variant<fixed_window::state, sliding_log::state, sliding_counter::state, sliding_buckets::state,
                               token_bucket::state, gcra::state, leaky_queue::state, quota::state, always_allow::state,
                               always_deny::state, concurrency::state, all_of_state, any_of_state>;

/// The state of an `all_of`: one state per part, in the parts' order.
struct all_of_state {
  std::vector<any_state> parts;
};
/// The state of an `any_of`: one state per part, in the parts' order.
struct any_of_state {
  std::vector<any_state> parts;
};
// Equality of composite states: declared here, defined once every
// alternative of any_state is complete (at the end of this header).
bool operator==(const all_of_state& a, const all_of_state& b);
bool operator==(const any_of_state& a, const any_of_state& b);

/// Every part must admit; only then does every part consume (no partial
/// consumption, ever). `retry_after` is the largest of the parts' (exact,
/// since each part only gets more permissive as time passes). `remaining`
/// and `reset_after` are read on the parts' states after the decision (a
/// denial leaves every part as it was, so a part that would have admitted
/// reports its room before consuming): `remaining` is the smallest of the
/// parts', `reset_after` the largest; on an admit `release_after` is the
/// largest of the parts' (a denial has none: 0). The decision's `part` is
/// the part that binds: on a denial the first of those with the longest
/// wait, on an admit the first of those with the least room left. Nestable.
class all_of {
 public:
  using state = all_of_state;
  /// Its name in policy expressions: all(...).
  static constexpr std::string_view name = "all";
  /// Builds the composite; the error names "parts" when there are none.
  static result<all_of> make(std::vector<any_policy> parts);
  [[nodiscard]] const std::vector<any_policy>& parts() const noexcept { return parts_; }
  /// How many any_of composites it holds, at any depth: the size of the
  /// scratch a decision records their choices in.
  [[nodiscard]] std::size_t choices() const noexcept { return choices_; }

 private:
  explicit all_of(std::vector<any_policy> parts);
  std::vector<any_policy> parts_;
  std::size_t choices_ = 0;
};

/// Some part must admit: the first part, in order, that admits consumes,
/// and no other. `retry_after` is the smallest of the parts'. `remaining`
/// and `reset_after` are read on the parts' states after the decision (the
/// consuming part after its admit, every other part as it was): `remaining`
/// is the largest of the parts', `reset_after` the largest; `release_after`
/// is the consuming part's (a denial has none: 0). The decision's `part` is
/// the part that admitted, or on a denial the first of those that free up
/// first. Nestable.
class any_of {
 public:
  using state = any_of_state;
  /// Its name in policy expressions: any(...).
  static constexpr std::string_view name = "any";
  /// Builds the composite; the error names "parts" when there are none.
  static result<any_of> make(std::vector<any_policy> parts);
  [[nodiscard]] const std::vector<any_policy>& parts() const noexcept { return parts_; }
  /// How many any_of composites it holds, itself included, at any depth.
  [[nodiscard]] std::size_t choices() const noexcept { return choices_; }

 private:
  explicit any_of(std::vector<any_policy> parts);
  std::vector<any_policy> parts_;
  std::size_t choices_ = 0;
};

/// Decides one request with every part of `p` (see all_of). Time
/// proportional to the number of parts, nested ones included; allocates
/// only for a composite holding more than 64 any_of composites.
decision decide(const all_of& p, all_of_state& s, tick now, std::int64_t cost) noexcept;
/// Decides one request with the first part of `p` that admits it (see
/// any_of). Time and allocation as for all_of.
decision decide(const any_of& p, any_of_state& s, tick now, std::int64_t cost) noexcept;

/// Which algorithm a policy is.
inline algorithm algorithm_of(const any_policy& p) noexcept { return static_cast<algorithm>(p.index()); }

/// The fresh state for `p` (a full bucket, an empty log, ...).
any_state fresh_state(const any_policy& p);

namespace detail {
/// The state type of a policy; any_state for any_policy. (A trait, not
/// std::conditional_t, which would name the variant's nonexistent ::state.)
template <typename Policy>
struct state_of {
  using type = typename Policy::state;
};
template <>
struct state_of<any_policy> {
  using type = any_state;
};

/// The fresh state of a policy of any type: a composite's holds a fresh
/// state for each of its parts (its default-constructed state has none).
template <typename Policy>
typename state_of<Policy>::type fresh_state_of(const Policy& p) {
  if constexpr (std::is_same_v<Policy, any_policy>) {
    return fresh_state(p);
  } else if constexpr (std::is_same_v<Policy, all_of> || std::is_same_v<Policy, any_of>) {
    return std::get<typename Policy::state>(fresh_state(any_policy{p}));
  } else {
    return typename Policy::state{};
  }
}
}  // namespace detail

namespace detail {
/// decide() of the I-th alternative of `p`, which `p` holds. An I past the
/// last alternative is a case of `decide`'s switch that no index reaches.
template <std::size_t I>
inline decision decide_alternative(const any_policy& p, any_state& s, tick now, std::int64_t cost) noexcept {
  if constexpr (I < std::variant_size_v<any_policy>) {
    using policy_t = std::variant_alternative_t<I, any_policy>;
    return decide(*std::get_if<I>(&p), *std::get_if<typename policy_t::state>(&s), now, cost);
  } else {
    __builtin_unreachable();
  }
}
}  // namespace detail

/// Decides one request with whichever algorithm `p` holds. Requires `s` to
/// hold the state type of `p` (as `fresh_state(p)` made it).
///
/// Not std::visit: for a variant of more than 11 alternatives, libstdc++
/// dispatches through a table of function pointers (an out-of-line call
/// per decision). This switch on the index (a jump table) is always inlined
/// into the caller, and each alternative's step inlines there or not by its
/// own size, as a direct call to it would. (A chain of compares,
/// `if (index != I) return from<I + 1>(...)`, was left out of line by GCC
/// past its first link: +26 instructions per decision of a GCRA.) Every
/// alternative gets its case without a change here, and one without a
/// `decide` fails to compile in decide_alternative. A policy left valueless
/// by an exception (a broken invariant) terminates, as std::visit would
/// here (it throws, and this function is noexcept).
[[gnu::always_inline]] inline decision decide(const any_policy& p, any_state& s, tick now, std::int64_t cost) noexcept {
  static_assert(std::variant_size_v<any_policy> <= 16, "any_policy outgrew decide's switch: add its cases");
  switch (p.index()) {
    case 0:
      return detail::decide_alternative<0>(p, s, now, cost);
    case 1:
      return detail::decide_alternative<1>(p, s, now, cost);
    case 2:
      return detail::decide_alternative<2>(p, s, now, cost);
    case 3:
      return detail::decide_alternative<3>(p, s, now, cost);
    case 4:
      return detail::decide_alternative<4>(p, s, now, cost);
    case 5:
      return detail::decide_alternative<5>(p, s, now, cost);
    case 6:
      return detail::decide_alternative<6>(p, s, now, cost);
    case 7:
      return detail::decide_alternative<7>(p, s, now, cost);
    case 8:
      return detail::decide_alternative<8>(p, s, now, cost);
    case 9:
      return detail::decide_alternative<9>(p, s, now, cost);
    case 10:
      return detail::decide_alternative<10>(p, s, now, cost);
    case 11:
      return detail::decide_alternative<11>(p, s, now, cost);
    case 12:
      return detail::decide_alternative<12>(p, s, now, cost);
    case 13:
      return detail::decide_alternative<13>(p, s, now, cost);
    case 14:
      return detail::decide_alternative<14>(p, s, now, cost);
    case 15:
      return detail::decide_alternative<15>(p, s, now, cost);
    default:
      std::terminate();  // valueless_by_exception
  }
}

/// A description of a policy as a person gives it; `make_policy` validates it.
struct spec {
  algorithm algo = algorithm::token_bucket;
  rate limit{};                         ///< L per W (unused by quota, always-*)
  std::optional<std::int64_t> burst;    ///< token bucket, GCRA: S (default L)
  std::optional<std::int64_t> buckets;  ///< sliding buckets: N (required)
  std::optional<std::int64_t> queue;    ///< leaky queue: Q (default L)
  std::optional<std::int64_t> units;    ///< quota, concurrency: N (required)
  std::optional<tick> lease;            ///< concurrency: D (default 30 s in ns)
  tick origin = 0;                      ///< fixed window: where windows start
};

/// Builds and validates the policy a spec describes; the error names the
/// field ("burst", "buckets", "queue", "quota", ...).
result<any_policy> make_policy(const spec& s);

/// What `decide` would answer, without changing `s`: the peek that
/// schedulers and stores build on. Copies no state that owns memory (a
/// sliding log's or buckets' ring); pure, safe for concurrent readers.
decision peek(const any_policy& p, const any_state& s, tick now, std::int64_t cost);

/// What `decide` would answer for a single algorithm whose state owns no
/// memory: `decide` on a copy (small and trivially copyable), inlined. An
/// algorithm whose state owns memory declares its own `peek`, which reads
/// the state in place (this one fails to compile for it).
template <typename P>
requires requires { P::owns_memory; }
constexpr decision peek(const P& p, const typename P::state& s, tick now, std::int64_t cost) noexcept {
  static_assert(!P::owns_memory, "an algorithm whose state owns memory declares its own peek");
  typename P::state copy = s;
  return decide(p, copy, now, cost);
}

/// The window W of a policy, in ticks (1 for quota and always-*: they have
/// none; the largest of the parts' for a composite).
tick window_of(const any_policy& p) noexcept;

inline bool operator==(const all_of_state& a, const all_of_state& b) { return a.parts == b.parts; }
inline bool operator==(const any_of_state& a, const any_of_state& b) { return a.parts == b.parts; }

}  // namespace sluice
