// Composites: all_of and any_of decide in two linear passes, evaluate and
// commit (see detail/compose.hpp), and `peek` is the first pass alone.
#include "detail/compose.hpp"

#include <algorithm>
#include <type_traits>
#include <variant>

namespace sluice {
namespace detail {
namespace {

constexpr std::size_t first_composite = static_cast<std::size_t>(algorithm::all_of);
static_assert(first_composite + 2 == std::variant_size_v<any_policy>, "all_of and any_of come last");

bool is_composite(const any_policy& p) noexcept { return p.index() >= first_composite; }

/// The scratch slots part `p` takes (choices_of, without a call for a
/// plain limiter).
std::size_t slots_of(const any_policy& p) noexcept { return is_composite(p) ? choices_of(p) : 0; }

/// A plain limiter's outcome, from its `peek` (which reads a state that
/// owns memory in place and decides on a copy of any other). The figures
/// before an admit are those of a request of cost 0, which every limiter
/// denies without changing anything.
template <typename Policy>
outcome evaluate_leaf(const Policy& p, const typename Policy::state& s, tick now, std::int64_t cost,
                      bool want_before) noexcept {
  outcome o;
  decision before;
  o.d = peek(p, s, now, cost);
  if (o.d.allowed && want_before) before = peek(p, s, now, 0);
  if (!o.d.allowed) {
    o.remaining_before = o.d.remaining;
    o.reset_before = o.d.reset_after;
    o.before_known = true;
  } else if (want_before) {
    o.remaining_before = before.remaining;
    o.reset_before = before.reset_after;
    o.before_known = true;
  }
  return o;
}

}  // namespace

namespace {
/// evaluate() of the alternative `p` holds, from the I-th on: a compare
/// chain, so that every plain limiter's step inlines here (std::visit
/// would call through a table).
template <std::size_t I>
outcome evaluate_from(const any_policy& p, const any_state& s, tick now, std::int64_t cost, std::int32_t* choices,
                      bool want_before) noexcept {
  if constexpr (I == 0) {  // composites first: the chain is for the plain limiters
    if (const auto* a = std::get_if<all_of>(&p))
      return evaluate(*a, *std::get_if<all_of_state>(&s), now, cost, choices, want_before);
    if (const auto* o = std::get_if<any_of>(&p))
      return evaluate(*o, *std::get_if<any_of_state>(&s), now, cost, choices, want_before);
  }
  if constexpr (I + 1 < first_composite) {
    if (p.index() != I) return evaluate_from<I + 1>(p, s, now, cost, choices, want_before);
  }
  using policy_t = std::variant_alternative_t<I, any_policy>;
  const policy_t& pol = *std::get_if<I>(&p);
  (void)choices;
  const auto& st = *std::get_if<typename policy_t::state>(&s);
  return evaluate_leaf(pol, st, now, cost, want_before);
}
}  // namespace

outcome evaluate(const any_policy& p, const any_state& s, tick now, std::int64_t cost, std::int32_t* choices,
                 bool want_before) noexcept {
  return evaluate_from<0>(p, s, now, cost, choices, want_before);
}

// The all_of rule of sluice/detail/all_of_fold.hpp, fused with the lazy
// reading of the figures before: the fold object itself cost a 32-deep
// composite 1.8× (bench/decide_bench nest32-allow: 827 → 1,545 ns), so the
// core keeps this hand-fused copy; ComposeFold.SameRuleAsTheStoresFold
// (tests/unit) holds the two to one answer.
outcome evaluate(const all_of& p, const all_of_state& s, tick now, std::int64_t cost, std::int32_t* choices,
                 bool want_before) noexcept {
  const auto& parts = p.parts();
  decision out;
  out.allowed = true;
  out.remaining = i64_max;
  std::int64_t remaining_before = i64_max;
  tick reset_before = 0;
  const auto fold = [&](const outcome& o) {
    remaining_before = std::min(remaining_before, o.remaining_before);
    reset_before = std::max(reset_before, o.reset_before);
  };
  bool want = want_before;  // whether the figures before are needed (from the first denial on, they are)
  std::size_t offset = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const any_policy& part = parts[i];
    const outcome o = evaluate(part, s.parts[i], now, cost, choices + offset, want || is_composite(part));
    offset += slots_of(part);
    if (o.before_known) fold(o);
    if (o.d.allowed) {
      if (!out.allowed) continue;
      if (out.part < 0 || o.d.remaining < out.remaining) {
        out.remaining = o.d.remaining;
        out.part = static_cast<std::int32_t>(i);
      }
      out.reset_after = std::max(out.reset_after, o.d.reset_after);
      out.release_after = std::max(out.release_after, o.d.release_after);
    } else if (out.allowed) {
      // The first denial: nothing will consume, so every part reports its
      // figures as it is, including the plain parts before this one that
      // would have admitted (whose figures before were not asked for).
      out.allowed = false;
      out.retry_after = o.d.retry_after;
      out.part = static_cast<std::int32_t>(i);
      if (!want) {
        for (std::size_t j = 0; j < i; ++j)
          if (!is_composite(parts[j])) fold(evaluate(parts[j], s.parts[j], now, 0, nullptr, true));
        want = true;
      }
    } else if (o.d.retry_after > out.retry_after) {
      out.retry_after = o.d.retry_after;
      out.part = static_cast<std::int32_t>(i);
    }
  }
  if (!out.allowed) {
    out.remaining = remaining_before;
    out.reset_after = reset_before;
    out.release_after = 0;
  }
  outcome r;
  r.d = out;
  if (want) {
    r.remaining_before = remaining_before;
    r.reset_before = reset_before;
    r.before_known = true;
  }
  return r;
}

outcome evaluate(const any_of& p, const any_of_state& s, tick now, std::int64_t cost, std::int32_t* choices,
                 bool want_before) noexcept {
  const auto& parts = p.parts();
  choices[0] = -1;
  decision out;
  out.retry_after = never;
  std::int32_t k = -1;  // the part that consumes: the first that admits
  outcome chosen;
  std::int64_t remaining_others = 0;  // the largest over every part but k, as it is
  tick reset_others = 0;
  std::size_t offset = 1;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const any_policy& part = parts[i];
    // Every part but the consumer reports its figures as it is: a part
    // before k denied (they are its decision's), one after k is not asked
    // to consume.
    const outcome o =
        evaluate(part, s.parts[i], now, cost, choices + offset, want_before || k >= 0 || is_composite(part));
    offset += slots_of(part);
    if (k < 0 && o.d.allowed) {
      k = static_cast<std::int32_t>(i);
      choices[0] = k;
      chosen = o;
      continue;
    }
    remaining_others = std::max(remaining_others, o.remaining_before);
    reset_others = std::max(reset_others, o.reset_before);
    if (k < 0 && (out.part < 0 || o.d.retry_after < out.retry_after)) {
      out.retry_after = o.d.retry_after;
      out.part = static_cast<std::int32_t>(i);
    }
  }
  outcome r;
  if (k >= 0) {
    out = chosen.d;
    out.part = k;
    out.remaining = std::max(out.remaining, remaining_others);
    out.reset_after = std::max(out.reset_after, reset_others);
    r.d = out;
    if (chosen.before_known) {
      r.remaining_before = std::max(remaining_others, chosen.remaining_before);
      r.reset_before = std::max(reset_others, chosen.reset_before);
      r.before_known = true;
    }
    return r;
  }
  out.remaining = remaining_others;
  out.reset_after = reset_others;
  r.d = out;
  r.remaining_before = remaining_others;
  r.reset_before = reset_others;
  r.before_known = true;
  return r;
}

void commit(const any_policy& p, any_state& s, tick now, std::int64_t cost, const std::int32_t* choices) noexcept {
  if (const auto* a = std::get_if<all_of>(&p)) {
    commit(*a, *std::get_if<all_of_state>(&s), now, cost, choices);
  } else if (const auto* o = std::get_if<any_of>(&p)) {
    commit(*o, *std::get_if<any_of_state>(&s), now, cost, choices);
  } else {
    (void)decide(p, s, now, cost);  // admits: evaluate found so, on this same state
  }
}

void commit(const all_of& p, all_of_state& s, tick now, std::int64_t cost, const std::int32_t* choices) noexcept {
  std::size_t offset = 0;
  for (std::size_t i = 0; i < p.parts().size(); ++i) {
    commit(p.parts()[i], s.parts[i], now, cost, choices + offset);
    offset += slots_of(p.parts()[i]);
  }
}

void commit(const any_of& p, any_of_state& s, tick now, std::int64_t cost, const std::int32_t* choices) noexcept {
  const auto k = static_cast<std::size_t>(choices[0]);
  commit(p.parts()[k], s.parts[k], now, cost, choices + choice_offset(p, k));
}

}  // namespace detail

namespace {
template <typename Composite, typename State>
decision decide_composite(const Composite& p, State& s, tick now, std::int64_t cost) noexcept {
  detail::choice_buffer choices(p.choices());
  const detail::outcome o = detail::evaluate(p, s, now, cost, choices.data(), false);
  if (o.d.allowed) detail::commit(p, s, now, cost, choices.data());
  return o.d;
}
}  // namespace

decision decide(const all_of& p, all_of_state& s, tick now, std::int64_t cost) noexcept {
  return decide_composite(p, s, now, cost);
}

decision decide(const any_of& p, any_of_state& s, tick now, std::int64_t cost) noexcept {
  return decide_composite(p, s, now, cost);
}

decision peek(const any_policy& p, const any_state& s, tick now, std::int64_t cost) {
  detail::choice_buffer choices(detail::choices_of(p));
  return detail::evaluate(p, s, now, cost, choices.data(), false).d;
}

}  // namespace sluice
