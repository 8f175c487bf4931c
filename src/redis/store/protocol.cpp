// The Redis store's wire protocol: plans, tags and the request's binary
// argument (protocol.hpp). Stored values are read and written in values.cpp.
#include "redis/store/protocol.hpp"

#include <algorithm>
#include <cstdio>
#include <type_traits>
#include <utility>

#include "redis/client/binary.hpp"
#include "sluice/core/concurrency.hpp"
#include "sluice/core/policy_codec.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/report.hpp"

namespace sluice::redis {
namespace {

using detail::i128;

/// The leaf plan of a stateful algorithm (its letter, and the constants of
/// its description's redis_plan), or an error naming the field.
result<leaf_plan> leaf_of(const any_policy& p) {
  leaf_plan lp;
  lp.policy = &p;
  auto bad = std::visit(
      [&](const auto& pol) -> std::optional<error> {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (holds_no_leaf_state<T>) {
          return std::nullopt;  // no leaf: never planned
        } else {
          static_assert(portable::has_redis_leaf<T>,
                        "a new algorithm: its description (portable::of<P>, in its header) declares its Redis leaf: "
                        "`letter`, `redis_plan` and `redis_args` (include/sluice/portable.hpp)");
          lp.letter = portable::of<T>::letter;
          return portable::of<T>::redis_plan(pol, lp);
        }
      },
      p);
  if (bad) return *bad;
  return lp;
}

std::optional<error> walk_make(const any_policy& p, const std::string& path, std::vector<leaf_plan>& out) {
  const auto parts = [&](const auto& c) -> std::optional<error> {
    for (std::size_t i = 0; i < c.parts().size(); ++i)
      if (auto e = walk_make(c.parts()[i], path + (path.empty() ? ":" : ".") + std::to_string(i), out)) return e;
    return std::nullopt;
  };
  if (const auto* a = std::get_if<all_of>(&p)) return parts(*a);
  if (const auto* o = std::get_if<any_of>(&p)) return parts(*o);
  if (std::holds_alternative<always_allow>(p) || std::holds_alternative<always_deny>(p)) return std::nullopt;
  auto lp = leaf_of(p);
  if (!lp) return lp.err();
  lp.value().suffix = path;
  // Its capacity: what a fresh state has room for, kept only when the core
  // agrees that it admits that much and denies one more `never`.
  const any_state fresh = fresh_state(p);
  const decision one = peek(p, fresh, 0, 1);
  const std::int64_t room = !one.allowed ? 0 : (one.remaining < detail::i64_max ? one.remaining + 1 : detail::i64_max);
  const decision over = room < detail::i64_max ? peek(p, fresh, 0, room + 1) : decision{};
  if ((room == 0 || peek(p, fresh, 0, room).allowed) && room < detail::i64_max && !over.allowed &&
      over.retry_after == never)
    lp.value().most = room;
  out.push_back(std::move(lp).value());
  return std::nullopt;
}

void walk_tree(const any_policy& p, const plan& pl, std::size_t& next, tick now, std::int64_t cost, std::string& out,
               bool report) {
  const auto parts = [&](char token, const auto& c) {
    out.push_back(token);
    put_number(out, static_cast<std::int64_t>(c.parts().size()));
    for (const auto& part : c.parts()) walk_tree(part, pl, next, now, cost, out, report);
  };
  if (const auto* a = std::get_if<all_of>(&p)) {
    parts('A', *a);
  } else if (const auto* o = std::get_if<any_of>(&p)) {
    parts('O', *o);
  } else if (std::holds_alternative<always_allow>(p)) {
    out.push_back('Y');
  } else if (std::holds_alternative<always_deny>(p)) {
    out.push_back('N');
  } else {
    pl.append_leaf(next++, now, cost, out, report);
  }
}

void walk_leaves(const any_policy& p, const any_state& s, std::vector<const any_state*>& out) {
  if (const auto* a = std::get_if<all_of>(&p)) {
    const auto& st = std::get<all_of_state>(s);
    for (std::size_t i = 0; i < a->parts().size(); ++i) walk_leaves(a->parts()[i], st.parts[i], out);
  } else if (const auto* o = std::get_if<any_of>(&p)) {
    const auto& st = std::get<any_of_state>(s);
    for (std::size_t i = 0; i < o->parts().size(); ++i) walk_leaves(o->parts()[i], st.parts[i], out);
  } else if (!std::holds_alternative<always_allow>(p) && !std::holds_alternative<always_deny>(p)) {
    out.push_back(&s);
  }
}

any_state walk_assemble(const any_policy& p, std::span<any_state> leaves, std::size_t& next) {
  const auto parts = [&](const auto& c, auto state) {
    for (const auto& part : c.parts()) state.parts.push_back(walk_assemble(part, leaves, next));
    return any_state{std::move(state)};
  };
  if (const auto* a = std::get_if<all_of>(&p)) return parts(*a, all_of_state{});
  if (const auto* o = std::get_if<any_of>(&p)) return parts(*o, any_of_state{});
  if (std::holds_alternative<always_allow>(p)) return any_state{always_allow::state{}};
  if (std::holds_alternative<always_deny>(p)) return any_state{always_deny::state{}};
  return std::move(leaves[next++]);
}

}  // namespace

result<plan> plan::make(const any_policy& p) {
  plan out;
  out.policy_ = std::make_shared<const any_policy>(p);
  if (auto e = walk_make(*out.policy_, "", out.leaves_)) return *e;
  // A leaf's tag names the whole policy and the leaf's place in it, so that
  // any change of the policy (even of another part) gives every leaf a new
  // tag, and a value is never read under a configuration it was not
  // written for.
  const std::string bytes = encode_policy(*out.policy_);
  for (std::size_t i = 0; i < out.leaves_.size(); ++i) {
    leaf_plan& lp = out.leaves_[i];
    const std::string mine = bytes + "#" + std::to_string(i);
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", crc32c(mine.data(), mine.size()));
    lp.tag[0] = lp.letter;
    for (std::size_t k = 0; k < 8; ++k) lp.tag[k + 1] = hex[k];
  }
  out.single_ = out.leaves_.size() == 1 && out.leaves_[0].policy == out.policy_.get();
  out.leases_ = std::any_of(out.leaves_.begin(), out.leaves_.end(),
                            [](const leaf_plan& lp) { return lp.letter == portable::of<concurrency>::letter; });
  return out;
}

void plan::append_tree(tick now, std::int64_t cost, std::string& out, bool report) const {
  std::size_t next = 0;
  walk_tree(*policy_, *this, next, now, cost, out, report);
}

void plan::append_leaf(std::size_t i, tick now, std::int64_t cost, std::string& out, bool report) const {
  const leaf_plan& lp = leaves_[i];
  out.append(lp.tag, tag_size);
  const portable::redis_call call{now, cost, report, detail::lease_ctx.nonce};
  portable::redis_numbers args;
  std::visit(
      [&](const auto& pol) {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (!holds_no_leaf_state<T>) portable::of<T>::redis_args(pol, lp, call, args);
      },
      *lp.policy);
  for (const std::int64_t v : args) put_number(out, v);
}

any_state plan::assemble(std::span<any_state> leaf_states) const {
  std::size_t next = 0;
  return walk_assemble(*policy_, leaf_states, next);
}

void plan::leaf_states(const any_state& s, std::vector<const any_state*>& out) const { walk_leaves(*policy_, s, out); }

}  // namespace sluice::redis
