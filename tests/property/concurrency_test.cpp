// The concurrency limit against its definition (semantics.md, "The
// algorithms": Concurrency, and "Leases"), on random traces of admits and
// releases, the clock now and then stepping back. The reference keeps every
// lease ever issued with the instant it stopped being held (its expiry, or
// its release) and answers each request from that list alone: held(t) is
// the units of the leases issued, not released, with expiry > t. Checked at
// every step: every field of every decision is the definition's (remaining,
// and retry_after and reset_after found by trying every later instant where
// a lease ends); every release frees exactly the lease the definition holds;
// and at no instant do the leases held add up to more than N.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "sluice/core/concurrency.hpp"

namespace sluice::property_concurrency_test {
namespace {

struct ref_lease {
  tick expiry;
  std::uint64_t nonce;
  std::int64_t units;
  bool released = false;
};

struct reference {
  std::int64_t n = 0;
  tick length = 1;
  std::vector<ref_lease> all;
  tick latest = std::numeric_limits<tick>::min();

  [[nodiscard]] std::int64_t held(tick t) const {
    std::int64_t h = 0;
    for (const auto& l : all)
      if (!l.released && l.expiry > t) h += l.units;
    return h;
  }

  decision decide(tick now, std::int64_t c, std::uint64_t nonce) {
    const tick e = std::max(now, latest);
    decision d;
    const std::int64_t h = held(e);
    d.allowed = c >= 1 && h + c <= n;
    if (d.allowed) {
      all.push_back({e + length, nonce, c});
      latest = e;
    }
    const std::int64_t after = held(e);
    d.remaining = std::max<std::int64_t>(0, n - after);
    tick last = 0;
    for (const auto& l : all)
      if (!l.released && l.expiry > e) last = std::max(last, l.expiry - now);
    d.reset_after = last;
    if (!d.allowed) {
      d.retry_after = never;
      if (c >= 1 && c <= n) {
        // The earliest instant t ≥ e at which the request fits: one where a lease ends.
        tick best = never;
        for (const auto& l : all)
          if (!l.released && l.expiry > e && held(l.expiry) + c <= n) best = std::min(best, l.expiry - now);
        d.retry_after = best;
      }
    }
    return d;
  }

  std::int64_t release(tick now, std::uint64_t nonce) {
    const tick e = std::max(now, latest);
    for (auto& l : all)
      if (!l.released && l.nonce == nonce && l.expiry > e) {
        l.released = true;
        return l.units;
      }
    return 0;
  }
};

TEST(ConcurrencyProperty, EveryDecisionAndReleaseIsTheDefinitions) {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 g(seed);
    const auto pick = [&](std::int64_t lo, std::int64_t hi) {
      return lo + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(hi - lo + 1));
    };
    const std::int64_t n = pick(0, 8);
    const tick d = pick(1, 30);
    const concurrency p = concurrency::make(n, d).value();
    reference ref;
    ref.n = n;
    ref.length = d;
    concurrency::state s;
    tick now = pick(-50, 50);
    std::vector<std::uint64_t> issued;
    std::uint64_t next_nonce = 1;
    for (int step = 0; step < 200; ++step) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " step " + std::to_string(step) + " now " + std::to_string(now));
      const auto kind = pick(0, 9);
      if (kind < 6) {
        const std::int64_t c = pick(0, 4) == 0 ? pick(-1, n + 2) : pick(1, 3);
        const std::uint64_t nonce = next_nonce++;
        const decision want = ref.decide(now, c, nonce);
        const decision got = p.decide(s, now, c, nonce);
        ASSERT_EQ(got.allowed, want.allowed) << "cost " << c;
        EXPECT_EQ(got.remaining, want.remaining);
        EXPECT_EQ(got.retry_after, want.retry_after);
        EXPECT_EQ(got.reset_after, want.reset_after);
        EXPECT_EQ(got.release_after, 0);
        if (got.allowed) issued.push_back(nonce);
        // retry_after is exact when nothing is released: admitted then, not a tick earlier.
        if (!got.allowed && got.retry_after != never && got.retry_after > 0) {
          concurrency::state a = s;
          EXPECT_TRUE(p.decide(a, now + got.retry_after, c, 0).allowed);
          EXPECT_FALSE(p.peek(s, now + got.retry_after - 1, c).allowed);
        }
      } else if (kind < 8 && !issued.empty()) {
        const std::uint64_t nonce = pick(0, 5) == 0 ? next_nonce + 1000 : issued[g() % issued.size()];
        EXPECT_EQ(p.release(s, now, nonce), ref.release(now, nonce));
      }
      // The invariant: at no instant from here on do the held leases pass N
      // (the state's own count of what it holds agrees with the definition).
      const tick e = std::max(now, ref.latest);
      EXPECT_LE(ref.held(e), n);
      EXPECT_EQ(concurrency::held_at(s, e), ref.held(e));
      EXPECT_LE(s.leases.size(), static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
      now += pick(0, 9) == 0 ? -pick(1, 20) : pick(0, 8);
    }
  }
}

}  // namespace
}  // namespace sluice::property_concurrency_test
