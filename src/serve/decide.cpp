// The decision path shared by the front ends (decide.hpp).
#include "decide.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <span>
#include <utility>

#include <boost/container/small_vector.hpp>

#include "wire.hpp"

namespace sluice::serve {

namespace {

// The prefix of a shadow check's key in the store: no key a rule builds
// begins with '%' followed by anything but "25" or "3A" (append_key_part),
// so no enforced check of a rule reaches a shadow state.
constexpr std::string_view shadow_key_prefix = "%shadow:";

// One request between its store calls and its outcome. Its store requests
// point into it, so it lives (shared by the calls' completions) until the
// last call has answered.
struct pending {
  metrics* m = nullptr;
  const policy_view* view = nullptr;
  std::shared_ptr<const void> owner;
  std::vector<planned_check> checks;
  std::string id;
  tick now = 0;
  checks_decided then;
  checks_outcome o;
  // The enforced checks as one store request, and its per-check answers:
  // a few in place (arrays of max_checks made every request one large
  // allocation, on malloc's slow path); sized before a span points in.
  static constexpr std::size_t in_place = 4;
  boost::container::small_vector<check, in_place> req;
  boost::container::small_vector<decision, in_place> req_out;
  boost::container::small_vector<std::optional<tick>, in_place> req_grows;
  struct shadow_call {
    std::size_t index = 0;  // into checks
    std::string key;        // "%shadow:" + the check's key
    check one{};
    std::int64_t cost = 1;
  };
  std::vector<shadow_call> shadows;
  // The calls not yet answered, plus one held by decide_checks until every
  // call is made: whoever brings it to zero hands the outcome over.
  std::atomic<std::size_t> outstanding{1};

  bool arrive() { return outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1; }

  void finish() {
    if (o.from != source::id_conflict) {  // refused, not decided: no policy's count
      for (std::size_t k = 0; k < o.enforced.size(); ++k) {
        policy_counters* pc = view->counters[checks[o.enforced[k]].policy];
        (o.d.allowed ? pc->allowed : pc->denied).fetch_add(1, std::memory_order_relaxed);
      }
    }
    then(checks, o);
  }
};

// Whether planned check `j` is an enforced one whose (policy, key) an
// earlier enforced check names: decided as that one.
bool joins_earlier(std::span<const planned_check> cs, std::size_t j) noexcept {
  for (std::size_t i = 0; i < j; ++i)
    if (!cs[i].shadow && cs[i].policy == cs[j].policy && cs[i].key == cs[j].key) return true;
  return false;
}

}  // namespace

bool within_check_limit(std::span<const planned_check> checks) noexcept {
  std::size_t n = 0;
  for (std::size_t j = 0; j < checks.size(); ++j)
    if (!checks[j].shadow && !joins_earlier(checks, j) && ++n > max_checks) return false;
  return true;
}

bool decide_checks(store& st, metrics& m, const policy_view& view, std::shared_ptr<const void> owner,
                   std::vector<planned_check> checks, tick now, std::string id, checks_decided then) {
  auto p = std::make_shared<pending>();
  p->m = &m;
  p->view = &view;
  p->owner = std::move(owner);
  p->checks = std::move(checks);
  p->id = std::move(id);
  p->now = now;
  p->then = std::move(then);
  checks_outcome& out = p->o;
  out.d = decision{true, std::numeric_limits<std::int64_t>::max(), 0, 0, 0, -1};
  const auto& cs = p->checks;
  for (std::size_t j = 0; j < cs.size(); ++j) {
    if (cs[j].shadow) continue;
    const check c{view.ids[cs[j].policy], cs[j].key, cs[j].cost};
    std::size_t k = 0;
    while (k < p->req.size() && !(p->req[k].policy == c.policy && p->req[k].key == c.key)) ++k;
    if (k < p->req.size()) {
      p->req[k].cost = std::max(p->req[k].cost, c.cost);
      out.cost[k] = p->req[k].cost;
      continue;
    }
    if (p->req.size() == max_checks) break;  // the front ends keep a request within_check_limit
    p->req.push_back(c);
    out.enforced.push_back(j);
    out.cost.push_back(c.cost);
  }
  // Shadow checks: each on a state of its own (shadow_key_prefix): a shadow
  // rule consumes nothing an enforced check reads. Two shadow rules giving
  // one (policy, key) are one check, at the larger of their costs; one that
  // could not read the request is counted as invalid, not decided.
  out.shadow.assign(cs.size(), decision{});
  out.shadow_from.assign(cs.size(), source::store);
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const planned_check& sc = cs[i];
    if (!sc.shadow) continue;
    if (sc.invalid) {
      view.counters[sc.policy]->shadow_invalid.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    std::int64_t cost = sc.cost;
    bool seen = false;
    for (std::size_t j = 0; j < cs.size() && !seen; ++j) {
      const planned_check& o = cs[j];
      if (j == i || !o.shadow || o.invalid || o.policy != sc.policy || o.key != sc.key) continue;
      if (j < i) seen = true;  // decided with the first of them
      cost = std::max(cost, o.cost);
    }
    if (seen) continue;
    pending::shadow_call call;
    call.index = i;
    call.key.assign(shadow_key_prefix);
    call.key += sc.key;
    call.cost = cost;
    p->shadows.push_back(std::move(call));
  }
  // Keys are set once `shadows` no longer moves.
  for (auto& sh : p->shadows) sh.one = check{view.ids[cs[sh.index].policy], sh.key};
  const std::size_t n = p->req.size();
  p->req_out.resize(n);
  p->req_grows.resize(n);
  p->outstanding.store(1 + (n > 0 ? 1 : 0) + p->shadows.size(), std::memory_order_relaxed);
  if (n > 0) {
    // t (when each check's `remaining` grows by one) comes with the
    // decision: the store reads it on the state it decided on, no call more.
    const store_request r{std::span<const check>(p->req.data(), n), now, 1, p->id};
    if (!p->id.empty()) p->o.refund_id = st.refund_id(r);
    st.decide_async(r, std::span<decision>(p->req_out.data(), n),
                    std::span<std::optional<tick>>(p->req_grows.data(), n), [p](const store_decision& sd) {
                      checks_outcome& o = p->o;
                      p->m->count_source(sd.from);
                      o.any_enforced = true;
                      o.from = sd.from;
                      o.d = sd.d;
                      o.lease = sd.lease;
                      o.per.assign(p->req_out.begin(), p->req_out.end());
                      // Left out past what a RateLimit field carries (and, by
                      // ratelimit_member, when it never comes).
                      for (std::size_t k = 0; k < p->req_out.size(); ++k)
                        o.t.push_back(p->req_out[k].remaining < sf_integer_max ? p->req_grows[k] : std::nullopt);
                      if (p->arrive()) p->finish();
                    });
  } else {
    out.d.remaining = 0;
  }
  for (std::size_t s = 0; s < p->shadows.size(); ++s) {
    const pending::shadow_call& sh = p->shadows[s];
    st.decide_async(store_request{std::span<const check>(&sh.one, 1), now, sh.cost, {}}, {}, {},
                    [p, s](const store_decision& sd) {
                      const std::size_t i = p->shadows[s].index;
                      p->m->count_source(sd.from);
                      p->o.shadow[i] = sd.d;
                      p->o.shadow_from[i] = sd.from;
                      policy_counters* pc = p->view->counters[p->checks[i].policy];
                      (sd.d.allowed ? pc->shadow_allowed : pc->shadow_denied).fetch_add(1, std::memory_order_relaxed);
                      if (p->arrive()) p->finish();
                    });
  }
  if (!p->arrive()) return false;
  p->finish();
  return true;
}

}  // namespace sluice::serve
