// The concurrency limit's step (semantics.md, "The algorithms":
// Concurrency), its release, and the nonce source.
#include "sluice/core/concurrency.hpp"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <string>
#include <system_error>

#include "detail/receipts.hpp"
#include "detail/redis_leaf.hpp"
#include "sluice/core/algorithm.hpp"
#include "sluice/core/analysis.hpp"
#include "sluice/core/any.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/worst_case.hpp"

namespace sluice {
namespace {

/// The first lease held at `t` (the leases are sorted by expiry).
std::vector<concurrency::lease>::const_iterator first_held(const concurrency::state& s, tick t) noexcept {
  return std::upper_bound(s.leases.begin(), s.leases.end(), t,
                          [](tick at, const concurrency::lease& l) { return at < l.expiry; });
}

}  // namespace

result<concurrency> concurrency::make(std::int64_t units, tick length) {
  if (units < 0) return error{"concurrency", "must not be negative (got " + std::to_string(units) + ")"};
  if (units > max_quantity) return error{"concurrency", "must be at most 2^62 (got " + std::to_string(units) + ")"};
  if (length < 1) return error{"lease", "must be at least 1 tick (got " + std::to_string(length) + ")"};
  if (length > max_quantity) return error{"lease", "must be at most 2^62 ticks (got " + std::to_string(length) + ")"};
  return concurrency(units, length);
}

std::int64_t concurrency::held_at(const state& s, tick t) noexcept {
  std::int64_t held = s.units;
  for (auto it = s.leases.begin(); it != s.leases.end() && it->expiry <= t; ++it) held -= it->units;
  return held;
}

decision concurrency::peek(const state& s, tick now, std::int64_t cost) const noexcept {
  const tick e = detail::max64(now, s.latest);
  const auto first = first_held(s, e);
  std::int64_t held = 0;
  for (auto it = first; it != s.leases.end(); ++it) held += it->units;
  decision d;
  if (cost >= 1 && cost <= units_ && held <= units_ - cost) {
    // The admit's figures: the lease (e + D) joins the held ones.
    d.allowed = true;
    d.remaining = units_ - held - cost;
    const tick x = e > detail::i64_max - lease_ ? detail::i64_max : e + lease_;
    const tick last = s.leases.empty() || first == s.leases.end() ? x : std::max(x, s.leases.back().expiry);
    d.reset_after = detail::until(last, now);
    return d;
  }
  d.remaining = detail::max64(0, units_ - held);
  d.reset_after = first == s.leases.end() ? 0 : detail::until(s.leases.back().expiry, now);
  if (cost < 1 || cost > units_) {
    d.retry_after = never;
    return d;
  }
  // The earliest expiry after which the leases still held leave room.
  std::int64_t h = held;
  for (auto it = first; it != s.leases.end(); ++it) {
    h -= it->units;
    const bool last_of_instant = std::next(it) == s.leases.end() || std::next(it)->expiry != it->expiry;
    if (last_of_instant && h <= units_ - cost) {
      d.retry_after = detail::until(it->expiry, now);
      return d;
    }
  }
  d.retry_after = never;  // not reached: with no lease held, h = 0 ≤ N − cost
  return d;
}

decision concurrency::decide(state& s, tick now, std::int64_t cost, std::uint64_t nonce) const noexcept {
  const decision d = peek(s, now, cost);
  if (!d.allowed) return d;
  const tick e = detail::max64(now, s.latest);
  const auto first = first_held(s, e);
  for (auto it = s.leases.cbegin(); it != first; ++it) s.units -= it->units;
  s.leases.erase(s.leases.cbegin(), first);
  const tick x = e > detail::i64_max - lease_ ? detail::i64_max : e + lease_;
  const auto at = first_held(s, x);  // after every lease expiring at or before x: ties keep issue order
  s.leases.insert(at, lease{x, nonce, cost});
  s.units += cost;
  s.latest = e;
  return d;
}

std::int64_t concurrency::release(state& s, tick now, std::uint64_t nonce) const noexcept {
  const tick e = detail::max64(now, s.latest);
  for (auto it = first_held(s, e); it != s.leases.end(); ++it) {
    if (it->nonce != nonce) continue;
    const std::int64_t u = it->units;
    s.units -= u;
    s.leases.erase(it);
    return u;
  }
  return 0;
}

std::uint64_t draw_lease_nonce() {
  // 64 nonces per getrandom(2) call; a nonce is never 0 (0 names none).
  struct pool {
    std::array<std::uint64_t, 64> v{};
    std::size_t next = 64;
  };
  thread_local pool p;
  for (;;) {
    if (p.next == p.v.size()) {
      auto* at = reinterpret_cast<unsigned char*>(p.v.data());
      std::size_t got = 0;
      while (got < sizeof(p.v)) {
        const ssize_t n = ::getrandom(at + got, sizeof(p.v) - got, 0);
        if (n < 0) {
          if (errno == EINTR) continue;
          throw std::system_error(errno, std::generic_category(), "getrandom");
        }
        got += static_cast<std::size_t>(n);
      }
      p.next = 0;
    }
    const std::uint64_t n = p.v[p.next];
    p.v[p.next++] = 0;  // a used nonce does not stay in memory
    if (n != 0) return n;
  }
}

// ---- its part of every operation over any policy ----

namespace {
using detail::i128;
using ra = detail::receipt_access;
}  // namespace

result<concurrency> concurrency::from_spec(const spec& s) {
  if (!s.units) return error{"concurrency", "is required by concurrency (the units in flight at most)"};
  return make(*s.units, s.lease.value_or(default_lease));
}

std::string policy_text(const concurrency& p) {
  std::string out = std::string(concurrency::name) + " " + std::to_string(p.units());
  if (p.lease_length() != default_lease) out += " lease=" + format_duration(p.lease_length());
  return out;
}

std::int64_t worst_case(const concurrency& p, tick window2, tick granularity) noexcept {
  if (window2 < 1) return 0;
  const i128 g = granularity < 1 ? 1 : granularity;
  const i128 period = (p.lease_length() + g - 1) / g * g;  // D ≤ 2^62: no overflow
  const i128 rounds = (static_cast<i128>(window2) - 1) / period + 1;
  const i128 units = rounds * p.units();
  return units > detail::i64_max ? detail::i64_max : static_cast<std::int64_t>(units);
}

worst_case_traits worst_case_traits_of(const concurrency& p, tick window2, tick granularity) {
  const std::int64_t c = worst_case(p, window2, granularity);
  return {.exact = c, .bound = c};
}

limit_figures limit_of(const concurrency& p) noexcept { return {.units = p.units(), .concurrent = true}; }

bool may_leave_debt(const concurrency&, const concurrency&) noexcept { return false; }

receipt receipt_before(const concurrency& p, const concurrency::state&, tick now, std::int64_t cost) noexcept {
  return detail::new_receipt(detail::stamp_of(p), now, cost);
}
void receipt_after(receipt& r, const concurrency&, const concurrency::state& s) noexcept {
  // The lease just issued carries the scope's nonce (semantics.md, "Leases").
  ra::key(r) = static_cast<std::int64_t>(detail::lease_ctx.nonce);
  ra::at(r) = s.latest;
}

std::int64_t refund(const concurrency& p, concurrency::state& s, receipt&& rc, tick now) noexcept {
  receipt r(std::move(rc));
  // The lease carries over every reconfiguration, so its receipt does too:
  // only the algorithm must match.
  if (r.empty() || ra::algo(r) != algorithm::concurrency) return 0;
  return p.release(s, now, static_cast<std::uint64_t>(ra::key(r)));
}

concurrency::state reconfigure(const concurrency&, const concurrency::state& s, const concurrency&, tick) { return s; }

// ---- its Redis leaf (portable.hpp; src/redis/lua/) ----

// Each call reads and writes the whole value, 40 bytes a lease
// (semantics.md, "Leases in a Redis store").
std::optional<error> portable::of<concurrency>::redis_plan(const concurrency& p, redis_constants&) {
  if (p.units() > redis_most_units)
    return error{"concurrency", "must be at most 65536 for the Redis store, whose value holds every lease (got " +
                                    std::to_string(p.units()) + ")"};
  return std::nullopt;
}
// mode N c lease_h lease_l nonce_h nonce_l: the nonce is the request's (its
// lease_scope: semantics.md, "Leases"); a report charges nothing (mode 2:
// fits or not).
void portable::of<concurrency>::redis_args(const concurrency& p, const redis_constants&, const redis_call& c,
                                           redis_numbers& out) noexcept {
  const bool can = c.cost >= 1 && c.cost <= p.units();
  out.number(detail::redis_leaf::mode(c.report, can));
  out.number(p.units());
  out.number(can ? c.cost : 0);
  out.limbs(p.lease_length());
  out.number(static_cast<std::int64_t>(c.nonce >> 32));
  out.number(static_cast<std::int64_t>(c.nonce & 0xFFFFFFFFULL));
}

}  // namespace sluice
