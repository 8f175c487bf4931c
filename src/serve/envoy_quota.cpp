// Quota checks decided in rounds (envoy_quota.hpp).
#include "envoy_quota.hpp"

#include <limits>
#include <optional>
#include <utility>

#include "wire.hpp"

namespace sluice::serve {

namespace {

// A quota check found over its limit, left out of the later rounds.
struct left_out {
  std::size_t check = 0;  // index into the call's checks
  decision d{};
  std::optional<tick> t;
  std::int64_t cost = 1;
};

struct quota_call : std::enable_shared_from_this<quota_call> {
  std::vector<planned_check> checks;
  std::vector<bool> quota;
  bool quota_passes = false;
  round_decider decide;
  checks_decided then;
  bool first_done = false;
  std::vector<decision> shadow;       // the first round's
  std::vector<source> shadow_from;    // the first round's
  std::vector<left_out> out;          // quota checks over their limit
  std::vector<std::size_t> in_round;  // the call's index of each check of the round being decided

  void round(std::vector<planned_check> cs) {
    auto self = shared_from_this();
    decide(std::move(cs), [self](const std::vector<planned_check>&, const checks_outcome& o) { self->decided(o); });
  }

  void decided(const checks_outcome& given) {
    // The exact deny cache answers without the checks' figures: it names the
    // one check it knows is over (decision::part), with its wait.
    checks_outcome o = given;
    if (o.from == source::deny_cache && o.d.part >= 0 && static_cast<std::size_t>(o.d.part) < o.per.size()) {
      decision& d = o.per[static_cast<std::size_t>(o.d.part)];
      d.allowed = false;
      d.remaining = 0;
      d.retry_after = o.d.retry_after;
      d.reset_after = o.d.reset_after;
    }
    if (!first_done) {
      first_done = true;
      shadow = o.shadow;
      shadow_from = o.shadow_from;
    }
    // Only a decision read from the states says which check is over.
    if (o.d.allowed || !o.any_enforced || !figures_known(o.from) || o.from == source::replayed) return finish(o);
    std::vector<std::size_t> over;  // indexes into o.per
    for (std::size_t k = 0; k < o.per.size(); ++k) {
      const decision& d = o.per[k];
      if (d.allowed || d.retry_after <= 0) continue;
      if (!quota[in_round[o.enforced[k]]]) return finish(o);  // another check is over: denied
      over.push_back(k);
    }
    if (over.empty()) return finish(o);  // nothing to leave out
    for (std::size_t k : over) out.push_back(left_out{in_round[o.enforced[k]], o.per[k], o.t[k], o.cost[k]});
    // The next round: this round's enforced checks but those over their limit
    // (every check of theirs: two checks of one (policy, key) are one).
    std::vector<planned_check> next;
    std::vector<std::size_t> next_in;
    bool quota_left = false;
    for (std::size_t j = 0; j < in_round.size(); ++j) {
      const std::size_t c = in_round[j];
      if (checks[c].shadow) continue;
      bool dropped = false;
      for (std::size_t k : over) {
        const planned_check& o_c = checks[in_round[o.enforced[k]]];
        dropped = dropped || (o_c.policy == checks[c].policy && o_c.key == checks[c].key);
      }
      if (dropped) continue;
      quota_left = quota_left || quota[c];
      next.push_back(checks[c]);
      next_in.push_back(c);
    }
    if (!quota_left && !quota_passes) return finish(o);  // every quota check is over: denied
    if (next.empty()) {
      // Only quota checks over their limit, and a quota that passes: admitted, nothing to charge.
      checks_outcome none;
      none.d = decision{true, std::numeric_limits<std::int64_t>::max(), 0, 0, 0, -1};
      none.any_enforced = true;
      in_round.clear();
      return finish(none);
    }
    in_round = std::move(next_in);
    round(std::move(next));
  }

  // Hands over the deciding round's outcome, in the call's indexes.
  void finish(const checks_outcome& o) {
    checks_outcome m = o;
    for (auto& e : m.enforced) e = in_round[e];
    for (const left_out& l : out) {
      bool there = false;  // a check found over in a round that turned out to decide is there already
      for (std::size_t e : m.enforced) there = there || e == l.check;
      if (there) continue;
      m.enforced.push_back(l.check);
      m.per.push_back(l.d);
      m.t.push_back(l.t);
      m.cost.push_back(l.cost);
    }
    m.shadow = shadow;
    m.shadow_from = shadow_from;
    then(checks, m);
  }
};

}  // namespace

void decide_with_quotas(std::vector<planned_check> checks, std::vector<bool> quota, bool quota_passes,
                        round_decider decide, checks_decided then) {
  auto call = std::make_shared<quota_call>();
  call->quota = std::move(quota);
  call->quota_passes = quota_passes;
  call->decide = std::move(decide);
  call->then = std::move(then);
  call->in_round.resize(checks.size());
  for (std::size_t j = 0; j < checks.size(); ++j) call->in_round[j] = j;
  call->checks = checks;
  call->round(std::move(checks));
}

}  // namespace sluice::serve
