// Reservations, cancellations and refunds never let anything extra through.
//
// Random traces on a live_limiter of every algorithm and composite: admits
// (with receipts), reservations (some with a latest acceptable slot),
// cancellations and refunds, in random order as time moves on. The traffic
// that really happens is every admit not refunded and every reservation not
// cancelled, at its slot. The property: for each single limiter inside the
// policy, the traffic that consumed from it, replayed in time order into a
// fresh limiter of the same policy, is admitted in full — so no window ever
// holds more than the limiter would have admitted without the cancelled and
// refunded requests. Invariants checked after every step: next_allowed_at
// stays exact (admitted at the instant it names, denied one tick earlier),
// and what a call gives back is never more than was taken.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "property/sched_gen.hpp"
#include "sluice/sluice.hpp"

namespace sluice::property_refund_test {
namespace {

using namespace sched_test;

struct event {
  tick at;
  std::int64_t cost;
  std::size_t order;
};

/// The single limiters of a policy, depth first.
void leaves_of(const any_policy& p, std::vector<const any_policy*>& out) {
  if (const auto* a = std::get_if<all_of>(&p)) {
    for (const auto& part : a->parts()) leaves_of(part, out);
  } else if (const auto* o = std::get_if<any_of>(&p)) {
    for (const auto& part : o->parts()) leaves_of(part, out);
  } else {
    out.push_back(&p);
  }
}

std::size_t leaf_count(const any_policy& p) {
  std::vector<const any_policy*> v;
  leaves_of(p, v);
  return v.size();
}

/// Which single limiters a receipt took from: (leaf index, instant, cost).
void consumed(const any_policy& p, const receipt& r, std::size_t& leaf, std::vector<std::pair<std::size_t, event>>& out,
              std::size_t order) {
  if (const auto* a = std::get_if<all_of>(&p)) {
    for (std::size_t i = 0; i < a->parts().size(); ++i) consumed(a->parts()[i], r.parts()[i], leaf, out, order);
  } else if (const auto* o = std::get_if<any_of>(&p)) {
    for (std::size_t i = 0; i < o->parts().size(); ++i) {
      if (static_cast<std::int32_t>(i) == r.part()) {
        consumed(o->parts()[i], r.parts()[0], leaf, out, order);
      } else {
        leaf += leaf_count(o->parts()[i]);
      }
    }
  } else {
    out.push_back({leaf, event{r.at(), r.cost(), order}});
    ++leaf;
  }
}

/// One request that took something: what it took, and whether it still
/// counts (not refunded, not cancelled).
struct item {
  std::vector<std::pair<std::size_t, event>> took;
  bool kept = true;
};

testing::AssertionResult nothing_extra(std::uint64_t seed, int kind) {
  rng_t g = seeded(2, kind, seed);
  const any_policy p = random_policy(kind, g);
  manual_clock clock;
  live_limiter<any_policy, manual_clock> lim(p, clock);
  std::vector<item> items;
  std::vector<std::pair<std::size_t, receipt>> receipts;          // admits not yet refunded
  std::vector<std::pair<std::size_t, reservation>> reservations;  // not yet cancelled
  tick now = 0;
  const auto fail = [&](int step, const std::string& what) {
    return testing::AssertionFailure() << "seed " << seed << " " << kind_name(kind) << " step " << step << ": " << what;
  };
  for (int step = 0; step < 80; ++step) {
    now += pick(g, 0, 5);
    const std::int64_t cost = pick(g, 1, 3);
    const auto op = pick(g, 0, 9);
    if (op <= 2) {
      admission a = lim.admit_at(now, cost);
      if (a.result.allowed) {
        item it;
        std::size_t leaf = 0;
        consumed(p, a.ticket, leaf, it.took, items.size());
        receipts.emplace_back(items.size(), std::move(a.ticket));
        items.push_back(std::move(it));
      } else if (!a.ticket.empty()) {
        return fail(step, "a denial came with a receipt");
      }
    } else if (op <= 5) {
      const tick latest = pick(g, 0, 2) == 0 ? now + pick(g, 0, 15) : never;
      reservation r = lim.reserve_at(now, cost, latest);
      if (r.ok()) {
        if (r.at() < now || r.at() > latest) return fail(step, "slot out of range");
        item it;
        std::size_t leaf = 0;
        consumed(p, r.ticket(), leaf, it.took, items.size());
        for (auto& [l, e] : it.took)
          if (e.at != r.at()) return fail(step, "a part takes at another instant than the slot");
        reservations.emplace_back(items.size(), std::move(r));
        items.push_back(std::move(it));
      } else if (r.cost() != 0) {
        return fail(step, "a failed reservation claims units");
      }
    } else if (op <= 7 && !reservations.empty()) {
      const auto k = static_cast<std::size_t>(pick(g, 0, static_cast<std::int64_t>(reservations.size()) - 1));
      auto [id, r] = std::move(reservations[k]);
      reservations.erase(reservations.begin() + static_cast<std::ptrdiff_t>(k));
      const std::int64_t reserved = r.cost();
      const std::int64_t back = lim.cancel_at(std::move(r), now);
      if (back < 0) return fail(step, "negative units back");
      (void)reserved;
      items[id].kept = false;
    } else if (!receipts.empty()) {
      const auto k = static_cast<std::size_t>(pick(g, 0, static_cast<std::int64_t>(receipts.size()) - 1));
      auto [id, r] = std::move(receipts[k]);
      const std::int64_t took = r.cost();
      const std::int64_t back = lim.refund_at(std::move(r), now);
      if (back < 0 || back > took)
        return fail(step, "gave back " + std::to_string(back) + " of " + std::to_string(took));
      if (r.empty()) {  // used up: the request is withdrawn
        receipts.erase(receipts.begin() + static_cast<std::ptrdiff_t>(k));
        items[id].kept = false;
      } else {
        receipts[k].second = std::move(r);  // refused while a reservation is pending: still held
      }
    }
    // next_allowed_at stays exact on whatever state that left.
    const std::int64_t c = pick(g, 1, 3);
    const tick t = lim.next_allowed_at(now, c);
    if (t != never) {
      auto at_t = lim;
      if (!at_t.try_acquire_at(t, c).allowed) return fail(step, "not admitted at next_allowed_at");
      if (t > now) {
        auto before_t = lim;
        if (before_t.try_acquire_at(t - 1, c).allowed) return fail(step, "admitted before next_allowed_at");
      }
    }
  }
  // The traffic that happened, leaf by leaf, through a fresh limiter.
  std::vector<const any_policy*> leaves;
  leaves_of(p, leaves);
  std::vector<std::vector<event>> per_leaf(leaves.size());
  for (const item& it : items)
    if (it.kept)
      for (const auto& [leaf, e] : it.took) per_leaf[leaf].push_back(e);
  for (std::size_t l = 0; l < leaves.size(); ++l) {
    auto& evs = per_leaf[l];
    std::stable_sort(evs.begin(), evs.end(), [](const event& a, const event& b) { return a.at < b.at; });
    any_state s = fresh_state(*leaves[l]);
    for (const event& e : evs)
      if (!decide(*leaves[l], s, e.at, e.cost).allowed)
        return testing::AssertionFailure() << "seed " << seed << " " << kind_name(kind) << ": leaf " << l << " ("
                                           << name_of(algorithm_of(*leaves[l])) << ") would not admit " << e.cost
                                           << " at " << e.at << " (request " << e.order << ")";
  }
  return testing::AssertionSuccess();
}

TEST(RefundProperty, NothingExtraEverGetsThrough) {
  for (int kind = 0; kind < kinds; ++kind)
    for (std::uint64_t seed = 1; seed <= 150; ++seed) ASSERT_TRUE(nothing_extra(seed, kind));
}

// The token bucket and GCRA decide alike on every trace; refunds must keep
// that: the same admits and refunds leave them answering alike.
TEST(RefundProperty, TokenBucketAndGcraStayIdentical) {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    rng_t g = seeded(3, 0, seed);
    const rate r{pick(g, 1, 4), pick(g, 1, 20)};
    const std::int64_t burst = pick(g, 1, 5);
    const auto tp = token_bucket::make(r, burst).value();
    const auto gp = gcra::make(r, burst).value();
    token_bucket::state ts;
    gcra::state gs;
    std::vector<std::pair<receipt, receipt>> held;
    tick now = 0;
    for (int step = 0; step < 60; ++step) {
      now += pick(g, 0, 6);
      if (pick(g, 0, 2) > 0 || held.empty()) {
        const std::int64_t c = pick(g, 1, 3);
        admission a = admit(tp, ts, now, c);
        admission b = admit(gp, gs, now, c);
        ASSERT_EQ(a.result, b.result) << "seed " << seed << " step " << step;
        if (a.result.allowed) held.emplace_back(std::move(a.ticket), std::move(b.ticket));
      } else {
        const auto k = static_cast<std::size_t>(pick(g, 0, static_cast<std::int64_t>(held.size()) - 1));
        auto [a, b] = std::move(held[k]);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
        ASSERT_EQ(refund(tp, ts, std::move(a), now), refund(gp, gs, std::move(b), now))
            << "seed " << seed << " step " << step;
      }
      for (std::int64_t c = 1; c <= burst; ++c)
        ASSERT_EQ(next_allowed_at(tp, ts, now, c), next_allowed_at(gp, gs, now, c)) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace sluice::property_refund_test
