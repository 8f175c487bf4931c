// The concurrency limit's step (semantics.md, "The algorithms":
// Concurrency), its release, and the nonce source.
#include "sluice/concurrency.hpp"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <string>
#include <system_error>

#include "sluice/rate.hpp"

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

}  // namespace sluice
