// Every decision's figures against their definitions (semantics.md, "The
// decision" and "Composition"), checked directly on copies of the limiter
// rather than against a model that computes them the same way:
//
// - `remaining` is the largest cost a copy of the limiter (policy and state
//   after the decision) admits at the same instant: that cost is admitted,
//   one more is not (INT64_MAX: any cost is);
// - `reset_after` is the time until the state is fresh (fresh.hpp's
//   is_fresh): fresh at now + reset_after, not one tick earlier;
// - a denial changes nothing, carries no `release_after`, and its
//   `retry_after` is exact: the same request on a copy is admitted at
//   now + retry_after and denied one tick earlier (`never`: denied at the
//   end of time, or INT64_MAX − 1 ticks from now if that comes first; a
//   wait of INT64_MAX ticks is itself `never`). The same end for a
//   `reset_after` of `never`.
//
// For every algorithm, on the model tests' random configurations (values up
// to 2^62, clocks stepping back), and for random composites: all(...) and
// any(...) mixed and nested up to 4 deep over small random parts, so that
// parts disagree often.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "property/checks.hpp"
#include "property/models.hpp"
#include "property/sched_gen.hpp"
#include "sluice/core/fresh.hpp"

namespace sluice::definitions {

using namespace sluice::model;

/// How often each check ran, so that a test that checks nothing fails.
struct tally {
  long decisions = 0;
  long remaining_probed = 0;  // remaining finite and ≥ 1: admitted at it, denied above
  long reset_probed = 0;      // reset_after finite and > 0: fresh then, not one tick before
  long retry_probed = 0;      // a finite retry_after checked both ways
  long bound_by_other = 0;    // composites: a denial while some part would have admitted
};

inline std::string at_step(const std::string& what, std::size_t i, tick now, std::int64_t cost) {
  return what + " step " + std::to_string(i) + " now=" + std::to_string(now) + " cost=" + std::to_string(cost);
}

inline bool admits(const any_policy& p, const any_state& s, tick now, std::int64_t cost) {
  any_state copy = s;
  return decide(p, copy, now, cost).allowed;
}

/// Checks one decision `d`, taken at `now` for `cost` on `before`, which
/// left `after`.
inline testing::AssertionResult figures_hold(const any_policy& p, const any_state& before, const any_state& after,
                                             const decision& d, tick now, std::int64_t cost, tally& n) {
  ++n.decisions;
  // remaining: the largest cost admitted at now, right after the decision.
  if (d.remaining < 0) return testing::AssertionFailure() << "negative remaining in " << show(d);
  if (d.remaining == i64_max) {
    if (!admits(p, after, now, i64_max))
      return testing::AssertionFailure() << show(d) << ": remaining unbounded, but a cost of INT64_MAX is denied";
  } else {
    if (d.remaining >= 1 && !admits(p, after, now, d.remaining))
      return testing::AssertionFailure() << show(d) << ": a cost of " << d.remaining << " is denied right after";
    if (admits(p, after, now, d.remaining + 1))
      return testing::AssertionFailure() << show(d) << ": a cost of " << d.remaining + 1 << " is admitted right after";
    if (d.remaining >= 1) ++n.remaining_probed;
  }
  // reset_after: ticks until the state is fresh.
  if (d.reset_after < 0) return testing::AssertionFailure() << "negative reset_after in " << show(d);
  // `never`: not before the end of time, nor within the longest duration
  // (INT64_MAX ticks is itself `never`, so a tick less than that).
  const auto end = static_cast<tick>(std::min<i128>(t_max, static_cast<i128>(now) + i64_max - 1));
  if (d.reset_after == never) {
    if (is_fresh(p, after, end)) return testing::AssertionFailure() << show(d) << ": never fresh, but fresh at " << end;
  } else {
    const i128 at = static_cast<i128>(now) + d.reset_after;
    if (at > t_max) return testing::AssertionFailure() << show(d) << ": reset_after ends past the end of time";
    if (!is_fresh(p, after, static_cast<tick>(at)))
      return testing::AssertionFailure() << show(d) << ": not fresh at now + reset_after";
    if (d.reset_after > 0) {
      if (is_fresh(p, after, static_cast<tick>(at - 1)))
        return testing::AssertionFailure() << show(d) << ": already fresh one tick before now + reset_after";
      ++n.reset_probed;
    }
  }
  if (d.allowed) {
    if (d.retry_after != 0) return testing::AssertionFailure() << show(d) << ": admitted with a retry_after";
    return testing::AssertionSuccess();
  }
  // A denial: nothing changed, no release, an exact retry_after.
  if (!(after == before)) return testing::AssertionFailure() << show(d) << ": a denial changed the state";
  if (d.release_after != 0) return testing::AssertionFailure() << show(d) << ": a denial has a release_after";
  if (d.retry_after == never) {
    if (admits(p, before, end, cost))
      return testing::AssertionFailure() << show(d) << ": never, but admitted at " << end;
    return testing::AssertionSuccess();
  }
  if (d.retry_after <= 0) return testing::AssertionFailure() << show(d) << ": denied with no wait";
  const i128 at = static_cast<i128>(now) + d.retry_after;
  if (at > t_max) return testing::AssertionFailure() << show(d) << ": retry_after ends past the end of time";
  if (!admits(p, before, static_cast<tick>(at), cost))
    return testing::AssertionFailure() << show(d) << ": still denied at now + retry_after";
  if (admits(p, before, static_cast<tick>(at - 1), cost))
    return testing::AssertionFailure() << show(d) << ": already admitted one tick before now + retry_after";
  ++n.retry_probed;
  return testing::AssertionSuccess();
}

/// Whether some part of an all_of at the top of `p` would admit the request
/// that the composite denied (a part's figures must then be read as it is).
inline bool a_part_would_admit(const any_policy& p, const any_state& s, tick now, std::int64_t cost) {
  const auto* all = std::get_if<all_of>(&p);
  if (all == nullptr) return false;
  const auto& parts = std::get<all_of_state>(s).parts;
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (admits(all->parts()[i], parts[i], now, cost)) return true;
  return false;
}

/// Decides every request of `trace` on a fresh state of `p`, checking each
/// decision against the definitions.
inline testing::AssertionResult trace_holds(const any_policy& p, const std::vector<model::request>& trace,
                                            const std::string& what, tally& n) {
  any_state s = fresh_state(p);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const model::request& q = trace[i];
    const any_state before = s;
    const decision d = decide(p, s, q.now, q.cost);
    if (!d.allowed && q.cost >= 1 && a_part_would_admit(p, before, q.now, q.cost)) ++n.bound_by_other;
    if (auto r = figures_hold(p, before, s, d, q.now, q.cost, n); !r)
      return testing::AssertionFailure() << at_step(what, i, q.now, q.cost) << ": " << r.message();
  }
  return testing::AssertionSuccess();
}

// ---- composites: all and any, mixed and nested ----

using sched_test::pick;

/// A random policy tree: a composite (1 to 3 parts) or, at depth `depth`
/// ≥ `max_depth` and now and then before, a small random leaf (always-* now
/// and then).
inline any_policy random_tree(sched_test::rng_t& g, int depth, int max_depth) {
  if (depth >= max_depth || (depth > 0 && pick(g, 0, 2) == 0)) {
    if (pick(g, 0, 15) == 0) return pick(g, 0, 1) == 0 ? any_policy{always_allow{}} : any_policy{always_deny{}};
    const algorithm a = sched_test::leaves[g() % std::size(sched_test::leaves)];
    return sched_test::random_leaf(a, g, /*zero_ok=*/pick(g, 0, 3) == 0);
  }
  std::vector<any_policy> parts;
  const auto count = pick(g, 1, 3);
  for (std::int64_t i = 0; i < count; ++i) parts.push_back(random_tree(g, depth + 1, max_depth));
  if (pick(g, 0, 1) == 0) return any_policy{all_of::make(std::move(parts)).value()};
  return any_policy{any_of::make(std::move(parts)).value()};
}

/// Requests for the small parts: gaps of 0 to 25 ticks, the clock now and
/// then stepping back, costs 1 to 4 with the odd 0, −1 and oversized one.
inline std::vector<model::request> small_trace(sched_test::rng_t& g, std::size_t length) {
  std::vector<model::request> out;
  tick now = pick(g, -50, 50);
  for (std::size_t i = 0; i < length; ++i) {
    const auto roll = pick(g, 0, 19);
    if (roll == 0) {
      now -= pick(g, 0, 10);
    } else if (roll < 8) {
      now += pick(g, 0, 25);
    } else if (roll < 10) {
      now += pick(g, 1, 3);
    }
    std::int64_t cost = pick(g, 1, 4);
    const auto odd = pick(g, 0, 29);
    if (odd == 0) cost = 0;
    if (odd == 1) cost = -1;
    if (odd == 2) cost = 100;
    out.push_back({now, cost});
  }
  return out;
}

/// One seed of the leaves' property: algorithm `Policy` on the model tests'
/// random configuration and trace (clock stepping back).
template <typename Policy>
testing::AssertionResult leaf_figures_hold(std::uint64_t seed, tally& n) {
  const drawn dr = draw(seed ^ 0xdef5, algorithm_of_type<Policy>(), /*back=*/true);
  const any_policy p = make_policy(spec_of(dr.c)).value();
  return trace_holds(p, dr.trace, "seed " + std::to_string(seed) + " (" + dr.c.describe() + ")", n);
}

/// One seed of the composites' property: a random tree up to 4 deep and 60
/// requests.
inline testing::AssertionResult composite_figures_hold(std::uint64_t seed, tally& n) {
  sched_test::rng_t g = sched_test::seeded(0xc0b05, 0, seed);
  const int max_depth = static_cast<int>(pick(g, 1, 4));
  const any_policy p = random_tree(g, 0, max_depth);
  return trace_holds(p, small_trace(g, 60), "composite seed " + std::to_string(seed), n);
}

}  // namespace sluice::definitions
