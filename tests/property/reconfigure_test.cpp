// Live reconfiguration: random history under an old policy, a change at
// `now` to a random new policy of the same algorithm, then random traffic on
// the new state. Checked for every algorithm:
//
// - the new state answers exactly (next_allowed_at admitted at the instant
//   it names, denied one tick before), even when it is over its limit or in
//   debt;
// - a state fresh under the old policy is fresh under the new one (a keyed
//   store may have dropped it), except a token bucket/GCRA whose rate drops
//   while its capacity grows (documented);
// - a throttled client is not handed a fresh state (token bucket, GCRA,
//   fixed window, leaky queue, quota);
// - no window around the change lets through more than the limits allow:
//   token bucket/GCRA — any interval [a, b] with a ≤ now ≤ b whose last
//   admit is after the change holds at most S + r_old·(now − a) +
//   r_new·(b − now) units (S = S_new, or min(S_old, S_new) when the rate
//   drops), which is within one of the two limits over b − a; window
//   algorithms — every new window holding an admit made after the change
//   holds at most L_new, counting the history the old state still counted;
//   leaky queue — new units leave after the last old one, spaced by the new
//   rate; quota — N_new in all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "property/sched_gen.hpp"
#include "sluice/sluice.hpp"

namespace sluice::property_reconfigure_test {
namespace {

using namespace sched_test;
using detail::i128;

struct admitted {
  tick at;
  std::int64_t cost;
};

i128 fdiv(i128 a, i128 b) {
  i128 q = a / b;
  if (q * b > a) --q;
  return q;
}

bool fresh_at(const any_policy& p, const any_state& s, tick now) {
  any_state c = s;
  return decide(p, c, now, 0).reset_after == 0;
}

/// Units of `hist` that the old policy still counts at `now` (the history a
/// reconfiguration must charge).
std::vector<admitted> remembered(const any_policy& from, const std::vector<admitted>& hist, tick now) {
  std::vector<admitted> out;
  for (const admitted& a : hist) {
    bool keep = false;
    if (const auto* fw = std::get_if<fixed_window>(&from)) {
      keep = fw->window_of(a.at) == fw->window_of(now);
    } else if (const auto* sl = std::get_if<sliding_log>(&from)) {
      keep = a.at > now - sl->limit().window;
    } else if (const auto* sc = std::get_if<sliding_counter>(&from)) {
      const tick w = sc->limit().window;
      keep = fdiv(a.at, w) >= fdiv(now, w) - 1;
    } else if (const auto* sb = std::get_if<sliding_buckets>(&from)) {
      const tick width = sb->limit().window / sb->buckets();
      keep = fdiv(a.at, width) > fdiv(now, width) - sb->buckets();
    } else {
      keep = true;
    }
    if (keep) out.push_back(a);
  }
  return out;
}

testing::AssertionResult safe_change(std::uint64_t seed, int kind) {
  rng_t g = seeded(4, kind, seed);
  const algorithm a = leaves[kind];
  const any_policy from = random_leaf(a, g);
  const any_policy to = random_leaf(a, g);
  const auto fail = [&](const std::string& what) {
    return testing::AssertionFailure() << "seed " << seed << " " << name_of(a) << ": " << what;
  };
  // History.
  any_state s = fresh_state(from);
  std::vector<admitted> hist;
  tick now = pick(g, 0, 30);
  const int n_hist = static_cast<int>(pick(g, 0, 25));
  for (int i = 0; i < n_hist; ++i) {
    now += pick(g, 0, 4);
    const std::int64_t c = pick(g, 1, 3);
    if (decide(from, s, now, c).allowed) hist.push_back({now, c});
  }
  now += pick(g, 0, 10);
  const result<any_state> changed = reconfigure(from, s, to, now);
  if (!changed) return fail("refused: " + changed.err().what());
  any_state n = changed.value();
  if (n.index() != to.index()) return fail("state of another algorithm");

  // Fresh stays fresh; throttled does not become fresh.
  const bool old_fresh = fresh_at(from, s, now);
  const bool new_fresh = fresh_at(to, n, now);
  bool tb_exception = false;
  if (a == algorithm::token_bucket || a == algorithm::gcra) {
    const rate rf = std::visit(
        [](const auto& p) -> rate {
          if constexpr (requires { p.limit(); })
            return p.limit();
          else
            return rate{};
        },
        from);
    const rate rt = std::visit(
        [](const auto& p) -> rate {
          if constexpr (requires { p.limit(); })
            return p.limit();
          else
            return rate{};
        },
        to);
    const auto burst = [](const any_policy& p) {
      if (const auto* t = std::get_if<token_bucket>(&p)) return t->burst();
      return std::get<gcra>(p).burst();
    };
    tb_exception =
        static_cast<i128>(rt.limit) * rf.window < static_cast<i128>(rf.limit) * rt.window && burst(to) > burst(from);
  }
  if (old_fresh && !new_fresh && !tb_exception) return fail("fresh became not fresh");
  {
    any_state probe = s;
    const decision d = decide(from, probe, now, 1);
    const bool throttled = !d.allowed && d.retry_after != never && d.retry_after > 0;
    // (A new limit of 0 denies everything: "fresh" means nothing there.)
    const bool blocked = std::visit(
        [](const auto& p) {
          if constexpr (requires { p.limit().limit; })
            return p.limit().limit == 0;
          else
            return false;
        },
        to);
    const bool strict =
        !blocked && (a == algorithm::token_bucket || a == algorithm::gcra || a == algorithm::fixed_window ||
                     a == algorithm::leaky_queue || a == algorithm::quota);
    if (throttled && strict && new_fresh) return fail("a throttled client was handed a fresh state");
  }

  // Future traffic on the new state, checking exactness as it goes.
  std::vector<admitted> post;
  tick t = now;
  any_state live = n;
  for (int i = 0; i < 40; ++i) {
    if (i > 0) t += pick(g, 0, 5);
    const std::int64_t c = pick(g, 1, 3);
    const tick next = next_allowed_at(to, live, t, c);
    if (next != never) {
      any_state at_next = live;
      if (!decide(to, at_next, next, c).allowed) return fail("not admitted at next_allowed_at");
      if (next > t) {
        any_state before = live;
        if (decide(to, before, next - 1, c).allowed) return fail("admitted before next_allowed_at");
      }
    }
    if (decide(to, live, t, c).allowed) post.push_back({t, c});
  }

  // Bounds across the change.
  if (a == algorithm::token_bucket || a == algorithm::gcra) {
    const auto params = [](const any_policy& p) {
      if (const auto* tbp = std::get_if<token_bucket>(&p)) return std::pair{tbp->limit(), tbp->burst()};
      const auto& gp = std::get<gcra>(p);
      return std::pair{gp.limit(), gp.burst()};
    };
    const auto [ro, so] = params(from);
    const auto [rn, sn] = params(to);
    const bool drops = static_cast<i128>(rn.limit) * ro.window < static_cast<i128>(ro.limit) * rn.window;
    const i128 sb = drops ? std::min(so, sn) : sn;
    // Every history admit i, every post admit j: units in [t_i, t_j].
    for (std::size_t i = 0; i < hist.size(); ++i) {
      i128 units = 0;
      for (std::size_t k = i; k < hist.size(); ++k) units += hist[k].cost;
      for (const admitted& pj : post) {
        units += pj.cost;
        const i128 lhs = units * ro.window * rn.window;
        const i128 rhs = sb * ro.window * rn.window + static_cast<i128>(ro.limit) * rn.window * (now - hist[i].at) +
                         static_cast<i128>(rn.limit) * ro.window * (pj.at - now);
        if (lhs > rhs)
          return fail("interval [" + std::to_string(hist[i].at) + ", " + std::to_string(pj.at) + "] holds " +
                      std::to_string(static_cast<std::int64_t>(units)) + " units, over the bound");
      }
    }
    // Post admits alone conform to the new bucket from the state it got.
  } else if (a == algorithm::fixed_window) {
    const auto& fw = std::get<fixed_window>(to);
    const std::vector<admitted> mem = remembered(from, hist, now);
    for (const admitted& pj : post) {
      const std::int64_t k = fw.window_of(pj.at);
      i128 units = 0;
      for (const admitted& h : mem)
        if (fw.window_of(h.at) == k) units += h.cost;
      for (const admitted& q : post)
        if (fw.window_of(q.at) == k) units += q.cost;
      if (units > fw.limit().limit)
        return fail("a new window holds " + std::to_string(static_cast<std::int64_t>(units)));
    }
  } else if (a == algorithm::sliding_log) {
    const auto& sl = std::get<sliding_log>(to);
    const std::vector<admitted> mem = remembered(from, hist, now);
    for (const admitted& pj : post) {
      i128 units = 0;
      for (const admitted& h : mem)
        if (h.at > pj.at - sl.limit().window && h.at <= pj.at) units += h.cost;
      for (const admitted& q : post)
        if (q.at > pj.at - sl.limit().window && q.at <= pj.at) units += q.cost;
      if (units > sl.limit().limit)
        return fail("a sliding window holds " + std::to_string(static_cast<std::int64_t>(units)));
    }
  } else if (a == algorithm::sliding_counter) {
    const auto& sc = std::get<sliding_counter>(to);
    const i128 w = sc.limit().window;
    const std::vector<admitted> mem = remembered(from, hist, now);
    for (std::size_t j = 0; j < post.size(); ++j) {
      const i128 k = fdiv(post[j].at, w);
      const i128 o = post[j].at - k * w;
      i128 prev = 0;
      i128 curr = 0;
      const auto count = [&](const admitted& x) {
        if (fdiv(x.at, w) == k) curr += x.cost;
        if (fdiv(x.at, w) == k - 1) prev += x.cost;
      };
      for (const admitted& h : mem) count(h);
      for (std::size_t q = 0; q <= j; ++q) count(post[q]);
      if (prev * (w - o) + curr * w > static_cast<i128>(sc.limit().limit) * w)
        return fail("the estimate passes L after admit " + std::to_string(j));
    }
  } else if (a == algorithm::sliding_buckets) {
    const auto& sb = std::get<sliding_buckets>(to);
    const i128 width = sb.limit().window / sb.buckets();
    const std::vector<admitted> mem = remembered(from, hist, now);
    for (const admitted& pj : post) {
      const i128 j = fdiv(pj.at, width);
      i128 units = 0;
      const auto in = [&](const admitted& x) {
        const i128 sub = fdiv(x.at, width);
        return sub > j - sb.buckets() && sub <= j;
      };
      for (const admitted& h : mem)
        if (in(h)) units += h.cost;
      for (const admitted& q : post)
        if (q.at <= pj.at && in(q)) units += q.cost;
      if (units > sb.limit().limit)
        return fail("a bucketed window holds " + std::to_string(static_cast<std::int64_t>(units)));
    }
  } else if (a == algorithm::leaky_queue) {
    const auto& lf = std::get<leaky_queue>(from);
    const auto& lt = std::get<leaky_queue>(to);
    const auto& so = std::get<leaky_queue::state>(s);
    const auto& sn = std::get<leaky_queue::state>(n);
    // The last old unit's release instant is kept (rounded later): R'/L' ≥ R/L.
    if (!old_fresh && lf.limit().limit > 0 && lt.limit().limit > 0 &&
        sn.release * lf.limit().limit < so.release * lt.limit().limit)
      return fail("the new queue releases before the last old unit");
  } else if (a == algorithm::quota) {
    const auto& qf = std::get<quota::state>(s);
    std::int64_t total = 0;
    for (const admitted& q : post) total += q.cost;
    if (total > std::max<std::int64_t>(0, std::get<quota>(to).units() - qf.used)) return fail("quota overspent");
  }
  return testing::AssertionSuccess();
}

TEST(ReconfigureProperty, NeverMoreThanTheLimitsAllowAndNeverAReset) {
  for (int kind = 0; kind < 8; ++kind)
    for (std::uint64_t seed = 1; seed <= 400; ++seed) ASSERT_TRUE(safe_change(seed, kind));
}

// Composites map part by part: the result decides, for every later request,
// exactly as the parts reconfigured one by one.
TEST(ReconfigureProperty, CompositesArePartByPart) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    rng_t g = seeded(5, 0, seed);
    std::vector<any_policy> from_parts;
    std::vector<any_policy> to_parts;
    const auto n = pick(g, 1, 3);
    for (std::int64_t i = 0; i < n; ++i) {
      const algorithm a = leaves[g() % std::size(leaves)];
      from_parts.push_back(random_leaf(a, g));
      to_parts.push_back(random_leaf(a, g));
    }
    const bool all = pick(g, 0, 1) == 0;
    const any_policy from =
        all ? any_policy{all_of::make(from_parts).value()} : any_policy{any_of::make(from_parts).value()};
    const any_policy to = all ? any_policy{all_of::make(to_parts).value()} : any_policy{any_of::make(to_parts).value()};
    any_state s = fresh_state(from);
    tick now = 0;
    for (int i = 0; i < 20; ++i) {
      now += pick(g, 0, 4);
      (void)decide(from, s, now, pick(g, 1, 3));
    }
    const result<any_state> changed = reconfigure(from, s, to, now);
    ASSERT_TRUE(changed.ok()) << changed.err().what();
    const auto& parts = all ? std::get<all_of_state>(s).parts : std::get<any_of_state>(s).parts;
    const auto& got =
        all ? std::get<all_of_state>(changed.value()).parts : std::get<any_of_state>(changed.value()).parts;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const result<any_state> one = reconfigure(from_parts[i], parts[i], to_parts[i], now);
      ASSERT_TRUE(one.ok());
      EXPECT_TRUE(one.value() == got[i]) << "seed " << seed << " part " << i;
    }
  }
}

}  // namespace
}  // namespace sluice::property_reconfigure_test
