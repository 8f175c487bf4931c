// Concurrency: at most N units in flight, each admit holding a lease that
// its holder releases, or that expires by itself D ticks after the admit
// (semantics.md, "The algorithms" and "Leases"). Exact: at no instant do the
// leases held add up to more than N (except after a reconfiguration to a
// smaller N, which admits nothing until they do).
//
// A lease is named by its nonce, an input of the step: the store draws one
// (`draw_lease_nonce`: 64 random bits from the operating system) per store
// request and hands it to every concurrency part the request decides, so
// that the step itself stays deterministic. The generic `decide` over
// `any_policy` reads it from the calling thread's `lease_scope` (nonce 0
// without one), so that no other algorithm's step takes a new argument.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/decision.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

struct spec;
class receipt;
struct limit_figures;
struct worst_case_traits;

/// A concurrency policy's lease length when none is given: 30 s, in ns.
inline constexpr tick default_lease = 30'000'000'000;

/// The policy of the concurrency limit. Immutable once built.
class concurrency {
 public:
  /// Its name on the command line and in policy expressions.
  static constexpr std::string_view name = "concurrency";
  /// Whether its state owns memory (then `peek` reads it in place;
  /// otherwise a peek decides on a copy).
  static constexpr bool owns_memory = true;
  /// The options a policy expression may give it ("" for none).
  static constexpr std::string_view options = "lease=DURATION";

  /// One lease: held at `t` iff `expiry > t`.
  struct lease {
    tick expiry = 0;
    std::uint64_t nonce = 0;
    std::int64_t units = 0;
    friend constexpr bool operator==(const lease&, const lease&) = default;
  };

  /// The leases not yet dropped, by expiry (ties in the order they were
  /// issued), the sum of their units, and the latest admit's instant. After
  /// every admit each lease kept is held, so there are at most N of them.
  /// Owns memory (copyable, not trivially); fresh is `state{}`.
  struct state {
    std::vector<lease> leases;
    std::int64_t units = 0;
    tick latest = detail::i64_min;
    friend bool operator==(const state&, const state&) = default;
  };

  /// Builds the policy: N from 0 to 2^62 ("concurrency"), D from 1 tick to
  /// 2^62 ("lease").
  static result<concurrency> make(std::int64_t units, tick length);
  /// `make` with the lease's length a std::chrono duration of any integral
  /// unit, read as nanosecond ticks (`ticks_of`: `std::chrono::seconds{30}`
  /// is `default_lease`): "lease" when it is not a whole number of
  /// nanoseconds, or past int64, or out of range.
  template <chrono_duration D>
  static result<concurrency> make(std::int64_t units, D length) {
    const std::optional<tick> ticks = ticks_of(length);
    if (!ticks) return error{"lease", "must be a whole number of nanoseconds within int64"};
    return make(units, *ticks);
  }
  /// Builds the policy a spec describes (any.hpp: make_policy); the error
  /// names the field.
  static result<concurrency> from_spec(const spec& s);

  /// N: the units in flight at most.
  [[nodiscard]] constexpr std::int64_t units() const noexcept { return units_; }
  /// D: a lease's length, in ticks.
  [[nodiscard]] constexpr tick lease_length() const noexcept { return lease_; }

  /// Decides one request of `cost` units at `now`; an admit adds the lease
  /// `(e + D, nonce, cost)` and drops the expired ones. Allocates only when
  /// the lease list grows past its capacity.
  decision decide(state& s, tick now, std::int64_t cost, std::uint64_t nonce) const noexcept;

  /// What `decide` would answer, without changing `s`. Pure; thread-safe
  /// for concurrent readers.
  [[nodiscard]] decision peek(const state& s, tick now, std::int64_t cost) const noexcept;

  /// Releases the lease with `nonce` held at `max(now, latest)`: its units,
  /// or 0 when there is none (never issued, released, expired), and then
  /// nothing changes. Never moves `latest`, never drops another lease.
  std::int64_t release(state& s, tick now, std::uint64_t nonce) const noexcept;

  /// The units of the leases held at `t` (expiry > t).
  [[nodiscard]] static std::int64_t held_at(const state& s, tick t) noexcept;

 private:
  constexpr concurrency(std::int64_t units, tick length) noexcept : units_(units), lease_(length) {}
  std::int64_t units_;
  tick lease_;
};

namespace detail {
/// The nonce the calling thread's steps give the leases they issue, and how
/// many leases they have issued under the current `lease_scope`.
struct lease_context {
  std::uint64_t nonce = 0;
  std::uint64_t issued = 0;
};
inline thread_local lease_context lease_ctx;
}  // namespace detail

/// Sets the nonce the calling thread's concurrency steps issue leases with
/// (and counts the leases they issue) until it is destroyed, then restores
/// the previous one. What a store wraps a request's step in.
class lease_scope {
 public:
  explicit lease_scope(std::uint64_t nonce) noexcept : saved_(detail::lease_ctx) {
    detail::lease_ctx = detail::lease_context{nonce, 0};
  }
  ~lease_scope() { detail::lease_ctx = saved_; }
  lease_scope(const lease_scope&) = delete;
  lease_scope& operator=(const lease_scope&) = delete;
  /// The nonce of this scope.
  [[nodiscard]] std::uint64_t nonce() const noexcept { return detail::lease_ctx.nonce; }
  /// How many leases the thread's steps have issued since the scope began
  /// (on copies too: a caller that decides on a copy and discards it must
  /// judge by the decision it keeps).
  [[nodiscard]] std::uint64_t issued() const noexcept { return detail::lease_ctx.issued; }

 private:
  detail::lease_context saved_;
};

/// Decides one request: admits iff the units held at max(now, latest) plus
/// `cost` stay within N. The lease gets the nonce of the thread's
/// `lease_scope` (0 without one).
inline decision decide(const concurrency& p, concurrency::state& s, tick now, std::int64_t cost) noexcept {
  const decision d = p.decide(s, now, cost, detail::lease_ctx.nonce);
  if (d.allowed) ++detail::lease_ctx.issued;
  return d;
}

/// 64 random bits, never 0, from getrandom(2) through a per-thread buffer:
/// a lease's nonce. Thread-safe. Throws std::system_error only if the
/// operating system has no random source.
std::uint64_t draw_lease_nonce();

/// What `decide` would answer, without changing `s` (read in place: no
/// copy, no allocation). Pure; thread-safe for concurrent readers.
inline decision peek(const concurrency& p, const concurrency::state& s, tick now, std::int64_t cost) noexcept {
  return p.peek(s, now, cost);
}

// ---- concurrency: its part of the operations over any policy (src/core/concurrency.cpp) ----

/// Charges nothing: a report's units are held by nobody (semantics.md,
/// "Leases"); its figures are those of the unchanged state.
constexpr void charge(const concurrency&, concurrency::state&, tick, std::int64_t) noexcept {}
/// The receipt of an admit of `cost` at `now`, read on the state before
/// the step (refund.hpp: `admit`).
receipt receipt_before(const concurrency& p, const concurrency::state& s, tick now, std::int64_t cost) noexcept;
/// Completes an admit's receipt from the state the step left.
void receipt_after(receipt& r, const concurrency& p, const concurrency::state& s) noexcept;
/// The release of the receipt's lease (semantics.md, "Leases"): its units,
/// or 0 when it is no longer held.
std::int64_t refund(const concurrency& p, concurrency::state& s, receipt&& r, tick now) noexcept;
/// The leases carry over as they are, expiries included (semantics.md,
/// "Leases"): a smaller N may hold more than it admits. Allocates.
[[nodiscard]] concurrency::state reconfigure(const concurrency& from, const concurrency::state& s,
                                             const concurrency& to, tick now);
/// Whether no lease is held at `now` (and `now` is not before the latest
/// admit, which a released lease may leave after every expiry).
inline bool is_fresh(const concurrency&, const concurrency::state& s, tick now) noexcept {
  return now >= s.latest && (s.leases.empty() || s.leases.back().expiry <= now);
}
/// Its policy as a policy expression writes it (policy_expr.hpp).
std::string policy_text(const concurrency& p);
/// What its worst case needs of it for `window2` and `granularity` ≥ 1
/// (worst_case.hpp).
worst_case_traits worst_case_traits_of(const concurrency& p, tick window2, tick granularity);
/// The figures of its limit that the wire advertises, and what the command
/// asks of it (algorithm.hpp).
limit_figures limit_of(const concurrency& p) noexcept;
/// Whether carrying a state of `from` over to `to` may leave it below
/// empty (a debt), which only a non-compact keyed store can hold.
bool may_leave_debt(const concurrency& from, const concurrency& to) noexcept;

/// The concurrency limit's encodings (portable.hpp): a state of variable
/// size (its leases), encoded by each codec's `variable_state` hook.
template <>
struct portable::of<concurrency> {
  static constexpr std::uint8_t tag = 12;
  static constexpr bool aligned_windows = false;
  static constexpr char letter = 'l';
  /// Its Redis leaf (portable.hpp; src/redis/lua/, its `--! leaf` line).
  static std::optional<error> redis_plan(const concurrency& p, redis_constants& k);
  static void redis_args(const concurrency& p, const redis_constants& k, const redis_call& c,
                         redis_numbers& out) noexcept;
  /// The most units a concurrency part may hold in the Redis store (its
  /// value holds every lease: semantics.md, "Leases in a Redis store").
  static constexpr std::int64_t redis_most_units = 65536;
  static constexpr std::array params{
      param<concurrency>{"units", [](const concurrency& p) { return p.units(); }},
      param<concurrency>{"lease", [](const concurrency& p) { return static_cast<std::int64_t>(p.lease_length()); }}};
  static result<concurrency> make(const std::array<std::int64_t, 2>& v) { return concurrency::make(v[0], v[1]); }
};

}  // namespace sluice
