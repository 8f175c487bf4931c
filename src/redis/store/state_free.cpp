// The rules of answers that need no state (state_free.hpp).
#include "redis/store/state_free.hpp"

#include <variant>

namespace sluice::redis {
namespace {

rule_answer walk(const any_policy& p, const plan& pl, std::size_t& next, std::int64_t cost) noexcept {
  if (const auto* a = std::get_if<all_of>(&p)) {
    // Denies when some part denies so, admits when every part admits so.
    bool deny = false;
    bool every = true;
    bool stateless = true;
    for (const auto& part : a->parts()) {  // every part: `next` walks the leaves in order
      const rule_answer x = walk(part, pl, next, cost);
      stateless = stateless && x.stateless;
      deny = deny || x.k == known::deny;
      every = every && x.k == known::admit;
    }
    return {deny ? known::deny : (every ? known::admit : known::depends), stateless};
  }
  if (const auto* o = std::get_if<any_of>(&p)) {
    // The first part that does not deny so decides: an admit so admits
    // (charging nothing), a part that depends makes the whole depend.
    known k = known::deny;
    bool decided = false;
    bool stateless = true;
    for (const auto& part : o->parts()) {
      const rule_answer x = walk(part, pl, next, cost);
      stateless = stateless && x.stateless;
      if (!decided && x.k != known::deny) {
        k = x.k;
        decided = true;
      }
    }
    return {k, stateless};
  }
  if (std::holds_alternative<always_allow>(p)) return {known::admit, true};
  if (std::holds_alternative<always_deny>(p)) return {known::deny, true};
  const std::int64_t most = next < pl.leaves().size() ? pl.leaves()[next].most : detail::i64_max;
  ++next;
  return {cost > most ? known::deny : known::depends, false};
}

}  // namespace

rule_answer rule_of(const plan& p, std::int64_t cost) noexcept {
  std::size_t next = 0;
  return walk(p.policy(), p, next, cost);
}

rule_answer rule_of(const store_request& r, const plan* const* plans) noexcept {
  bool deny = false;
  bool every = true;
  bool stateless = true;
  for (std::size_t i = 0; i < r.checks.size(); ++i) {
    const rule_answer x = rule_of(*plans[i], cost_of(r, r.checks[i]));
    stateless = stateless && x.stateless;
    deny = deny || x.k == known::deny;
    every = every && x.k == known::admit;
  }
  return {deny ? known::deny : (every ? known::admit : known::depends), stateless};
}

}  // namespace sluice::redis
