// What every single algorithm provides, named once: the concept
// `algorithm_policy`, checked over every alternative of `any_policy` below.
//
// A single algorithm is one file pair, `include/sluice/core/<name>.hpp`
// and `src/core/<name>.cpp` (docs/architecture.md, "Adding an algorithm"). The
// operations over `any_policy` (report, refund, reconfigure, freshness,
// the worst case, the property queries, parsing and printing) are generic
// dispatches that call the algorithm's own overload, found by argument-
// dependent lookup; they handle only the composites (all_of, any_of)
// themselves. So a new alternative of `any_policy` fails the static_assert
// at the end of this header, which names the first operation it lacks,
// instead of falling into some chain's silent default.
//
// The constant answers (always_allow, always_deny) are algorithms like any
// other (their header is quota.hpp, their code src/core/quota.cpp); the
// composites are not: they hold any policies.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "sluice/core/any.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/fresh.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/reconfigure.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/report.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"
#include "sluice/core/worst_case.hpp"

namespace sluice {

/// What a single algorithm says of its limit: the figures the wire
/// advertises (Envoy's current_limit, a RateLimit-Policy item) and the
/// properties the command and the stores ask about.
struct limit_figures {
  /// L per W, for a limiter that counts in a window or refills at a rate.
  std::optional<rate> per{};
  /// The most it admits at once: L, the burst S or the queue Q of a rate;
  /// N for a quota or a concurrency limit (which have no `per`).
  std::int64_t units = 0;
  /// Whether it has a limit to name (not always-allow, always-deny).
  bool counted = true;
  /// Whether it admits without any bound (always-allow).
  bool unbounded = false;
  /// Whether its units are in flight (leases) rather than in a window.
  bool concurrent = false;
  /// Whether its admits are queued, each with a release time to report.
  bool queues = false;
};

/// What a single algorithm `P` provides (all found by argument-dependent
/// lookup, so they sit beside `P` in its header and source):
/// - `P::name`, its name in policy expressions; `P::owns_memory`, whether
///   its state owns memory (exactly when the state is not trivially
///   copyable: then it has its own `peek`, which reads the state in place);
/// - `P::state`, default-constructed fresh, compared with `==`;
/// - `P::from_spec`, its policy from a `spec` (make_policy), and
///   `policy_text`, the policy as a policy expression writes it;
/// - `decide` (inline in its header: the fast path) and `peek` (any.hpp
///   gives every state that owns no memory one: decide on a copy);
/// - `charge`, what a report adds to its state (report.hpp);
/// - `receipt_before`, `receipt_after` and `refund`: its receipts
///   (refund.hpp; `admit` is one template over them);
/// - `reconfigure`, carrying its state over to another policy of it;
/// - `is_fresh`, when a store may drop its state (fresh.hpp);
/// - `worst_case_traits_of`, its closed form or what the search needs of
///   it (worst_case.hpp);
/// - `P::options`, the options a policy expression gives it; `limit_of`,
///   its `limit_figures`; `may_leave_debt(from, to)`, whether a change
///   between two of its policies may carry a state below empty.
template <typename P>
concept algorithm_policy = requires(const P& p, typename P::state& s, const typename P::state& cs, tick now,
                                    std::int64_t cost, receipt& r, const spec& sp) {
  requires std::same_as<std::remove_cvref_t<decltype(P::name)>, std::string_view>;
  requires std::same_as < std::remove_cvref_t<decltype(P::owns_memory)>,
  bool > ;
  requires P::owns_memory == !std::is_trivially_copyable_v<typename P::state>;
  requires std::default_initializable<typename P::state> && std::equality_comparable<typename P::state>;
  { P::from_spec(sp) } -> std::same_as<result<P>>;
  { policy_text(p) } -> std::same_as<std::string>;
  { decide(p, s, now, cost) }
  noexcept->std::same_as<decision>;
  { peek(p, cs, now, cost) }
  noexcept->std::same_as<decision>;
  { charge(p, s, now, cost) }
  noexcept->std::same_as<void>;
  { receipt_before(p, cs, now, cost) }
  noexcept->std::same_as<receipt>;
  { receipt_after(r, p, cs) }
  noexcept->std::same_as<void>;
  { refund(p, s, std::move(r), now) } -> std::same_as<std::int64_t>;
  { reconfigure(p, cs, p, now) } -> std::same_as<typename P::state>;
  { is_fresh(p, cs, now) }
  noexcept->std::same_as<bool>;
};

/// The limit_figures of a single algorithm; nothing for a composite (its
/// parts have theirs).
std::optional<limit_figures> limit_of(const any_policy& p) noexcept;

/// Whether carrying a state of `from` over to `to` (the same algorithm) may
/// leave a part of it below empty: its algorithm's `may_leave_debt`, part
/// by part for a composite. False when they are not alike.
bool may_leave_debt(const any_policy& from, const any_policy& to) noexcept;

/// How many single algorithms any_policy holds: its alternatives but the
/// two composites, which come last.
inline constexpr std::size_t algorithm_count = std::variant_size_v<any_policy> - 2;

static_assert(std::is_same_v<std::variant_alternative_t<algorithm_count, any_policy>, all_of> &&
                  std::is_same_v<std::variant_alternative_t<algorithm_count + 1, any_policy>, any_of> &&
                  static_cast<std::size_t>(algorithm::all_of) == algorithm_count &&
                  static_cast<std::size_t>(algorithm::any_of) == algorithm_count + 1,
              "the composites all_of and any_of come last in any_policy and `algorithm`");

namespace detail {
/// Checks one alternative of any_policy: a failure names it (`P`) and the
/// requirement of algorithm_policy it does not meet.
template <typename P>
constexpr bool check_algorithm() noexcept {
  static_assert(algorithm_policy<P>,
                "an alternative of any_policy is not an algorithm_policy: the notes below name the requirement it "
                "does not meet (docs/architecture.md, \"Adding an algorithm\")");
  static_assert(portable::described<P>,
                "an algorithm's encodings' description, portable::of<P> in its header, declares its policy's tag on "
                "disk `tag`, `aligned_windows` and `params` (include/sluice/portable.hpp)");
  return algorithm_policy<P> && portable::described<P>;
}
template <std::size_t... I>
constexpr bool check_algorithms(std::index_sequence<I...>) noexcept {
  return (check_algorithm<std::variant_alternative_t<I, any_policy>>() && ...);
}
}  // namespace detail

static_assert(detail::check_algorithms(std::make_index_sequence<algorithm_count>{}));

}  // namespace sluice
