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

constexpr i128 p52 = i128{1} << 52;

std::string text(i128 v) { return std::to_string(static_cast<long long>(v)); }

/// "must be below 2^53 (9007199254740992) for the Redis store (got N)".
error bound_error(std::string field, std::string what, std::string bound, i128 got) {
  return error{std::move(field), what + " must be " + bound + " for the Redis store, whose Lua numbers are exact " +
                                     "only below 2^53 (got " + text(got) + ")"};
}

std::optional<error> below53(const char* field, i128 v) {
  if (v >= p53) return bound_error(field, field, "below 2^53 (9007199254740992)", v);
  return std::nullopt;
}

/// S·W (or Q·W) and W as mixed numbers modulo L (L ≥ 1), and the checks on
/// them: the tolerance below 2^52 ticks, L at most 2^52.
std::optional<error> mixed(leaf_plan& lp, rate r, std::int64_t capacity, const char* capacity_field) {
  const i128 sw = static_cast<i128>(capacity) * r.window;
  lp.sq = sw / r.limit;
  lp.sr = sw % r.limit;
  lp.wq = r.window / r.limit;
  lp.wr = r.window % r.limit;
  if (lp.sq >= p52)
    return bound_error(capacity_field, std::string(capacity_field) + "·window/limit (the tolerance, in ticks)",
                       "below 2^52 (4503599627370496)", lp.sq);
  if (r.limit > p52) return bound_error("limit", "limit", "at most 2^52 (4503599627370496)", r.limit);
  return std::nullopt;
}

/// The report bound K (report_debt_bound over `most`, S·W or Q·W − 1) as
/// a mixed number modulo L (L ≥ 1): kq < 2^52 whenever the plan's checks
/// hold (most/L < 2^52, L ≤ 2^52).
void report_bound(leaf_plan& lp, rate r, i128 most) {
  const i128 k = report_debt_bound(r.limit, most);
  lp.kq = k / r.limit;
  lp.kr = k % r.limit;
}

/// A limit of 0 never admits, but keeps what a reconfiguration carries to
/// it (a deficit of up to S·W, reconfigure.hpp): S·W below 2^52.
std::optional<error> deficit(leaf_plan& lp, rate r, std::int64_t capacity, const char* capacity_field) {
  const i128 sw = static_cast<i128>(capacity) * r.window;
  lp.sq = p52 - 1;  // the bound the library checks a stored deficit against
  if (sw >= p52)
    return bound_error(capacity_field, std::string(capacity_field) + "·window (with a limit of 0)",
                       "below 2^52 (4503599627370496)", sw);
  return std::nullopt;
}

/// The leaf plan of a stateful algorithm, or an error naming the field.
result<leaf_plan> leaf_of(const any_policy& p) {
  leaf_plan lp;
  lp.policy = &p;
  std::optional<error> bad;
  std::visit(
      [&](const auto& pol) {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (!holds_no_leaf_state<T>) lp.letter = portable::of<T>::letter;
        if constexpr (std::is_same_v<T, gcra> || std::is_same_v<T, token_bucket>) {
          if (pol.limit().limit > 0) {
            bad = mixed(lp, pol.limit(), pol.burst(), "burst");
            report_bound(lp, pol.limit(), static_cast<i128>(pol.burst()) * pol.limit().window);
          } else {
            bad = deficit(lp, pol.limit(), pol.burst(), "burst");
          }
        } else if constexpr (std::is_same_v<T, leaky_queue>) {
          if (pol.limit().limit > 0) {
            bad = mixed(lp, pol.limit(), pol.queue(), "queue");
            report_bound(lp, pol.limit(), static_cast<i128>(pol.queue()) * pol.limit().window - 1);
          } else {
            bad = deficit(lp, pol.limit(), pol.queue(), "queue");
          }
        } else if constexpr (std::is_same_v<T, fixed_window> || std::is_same_v<T, sliding_counter> ||
                             std::is_same_v<T, sliding_log> || std::is_same_v<T, sliding_buckets>) {
          bad = below53("limit", pol.limit().limit);
          if (!bad) bad = below53("window", pol.limit().window);
        } else if constexpr (std::is_same_v<T, quota>) {
          bad = below53("quota", pol.units());
        } else if constexpr (std::is_same_v<T, concurrency>) {
          // Each call reads and writes the whole value, 40 bytes a lease
          // (semantics.md, "Leases in a Redis store").
          if (pol.units() > max_redis_concurrency)
            bad =
                error{"concurrency", "must be at most 65536 for the Redis store, whose value holds every lease (got " +
                                         std::to_string(pol.units()) + ")"};
        } else {
          static_assert(holds_no_leaf_state<T>,
                        "a new algorithm: handle it here (docs/architecture.md, \"Adding an algorithm\")");
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

void put(std::string& out, i128 v) { put_number(out, static_cast<std::int64_t>(v)); }

/// The window index (as limbs) and offset of `t` in windows of `w` from `origin`.
void put_window(std::string& out, tick t, tick w, tick origin) {
  const i128 k = detail::floor_div(static_cast<i128>(t) - origin, w);
  const i128 o = static_cast<i128>(t) - origin - k * w;
  put_limbs(out, static_cast<std::int64_t>(k));
  put(out, o);
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
  // A report (mode 2) sends a cost saturated just past the library's bound,
  // so every sum stays below 2^53 and the saturation is the core's.
  const auto most = [&](i128 v, i128 bound) { return v > bound + 1 ? bound + 1 : v; };
  std::visit(
      [&](const auto& pol) {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<T, gcra> || std::is_same_v<T, token_bucket>) {
          const std::int64_t l = pol.limit().limit;
          const bool charge = report && l > 0 && cost >= 1;
          const bool can = charge || (l > 0 && cost >= 1 && cost <= pol.burst());
          i128 cw = can ? static_cast<i128>(cost) * pol.limit().window : 0;
          if (charge) cw = most(cw, lp.kq * l + lp.kr);
          put_number(out, charge ? 2 : can ? 1 : 0);
          put_number(out, l > 0 ? l : 1);
          put(out, can ? cw / l : 0);
          put(out, can ? cw % l : 0);
          put(out, lp.sq);
          put(out, lp.sr);
          put(out, lp.kq);
          put(out, lp.kr);
        } else if constexpr (std::is_same_v<T, leaky_queue>) {
          const std::int64_t l = pol.limit().limit;
          const bool charge = report && l > 0 && cost >= 1;
          const bool fits = l > 0 && cost >= 1 && cost <= pol.queue();
          const bool can = charge || fits;
          // A cost past Q never fits: X below every backlog the library reads.
          const i128 x = fits ? static_cast<i128>(pol.queue() - cost) * pol.limit().window : -(p52 + 2) * l;
          i128 y = can ? static_cast<i128>(cost - 1) * pol.limit().window : 0;
          if (charge) y = most(y, lp.kq * l + lp.kr);
          put_number(out, charge ? 2 : can ? 1 : 0);
          put_number(out, l > 0 ? l : 1);
          put(out, lp.wq);
          put(out, lp.wr);
          put(out, can ? x / l : 0);
          put(out, can ? x % l : 0);
          put(out, can ? y / l : 0);
          put(out, can ? y % l : 0);
          put(out, lp.kq);
          put(out, lp.kr);
        } else if constexpr (std::is_same_v<T, fixed_window>) {
          const rate r = pol.limit();
          const bool charge = report && r.limit > 0 && cost >= 1;
          const bool can = cost >= 1 && cost <= r.limit;
          put_number(out, charge ? 2 : can ? 1 : 0);
          put_window(out, now, r.window, pol.origin());
          put_number(out, r.limit);
          put(out, charge ? most(cost, r.limit) : can ? cost : 0);
          put_number(out, r.window);
        } else if constexpr (std::is_same_v<T, sliding_counter>) {
          const rate r = pol.limit();
          const bool charge = report && r.limit > 0 && cost >= 1;
          const bool can = cost >= 1 && cost <= r.limit;
          put_number(out, charge ? 2 : can ? 1 : 0);
          put_window(out, now, r.window, 0);
          put_number(out, r.limit);
          put_number(out, r.window);
          put(out, charge ? most(cost, report_count_bound(r)) : can ? cost : 0);
        } else if constexpr (std::is_same_v<T, sliding_log>) {
          const rate r = pol.limit();
          const bool charge = report && r.limit > 0 && cost >= 1;
          const bool can = cost >= 1 && cost <= r.limit;
          put_number(out, charge ? 2 : can ? 1 : 0);
          put_number(out, r.limit);
          put(out, charge ? most(cost, r.limit) : can ? cost : 0);
          put_number(out, r.window);
        } else if constexpr (std::is_same_v<T, sliding_buckets>) {
          const rate r = pol.limit();
          const bool charge = report && r.limit > 0 && cost >= 1;
          const bool can = cost >= 1 && cost <= r.limit;
          put_number(out, charge ? 2 : can ? 1 : 0);
          put_window(out, now, r.window / pol.buckets(), 0);
          put_number(out, r.limit);
          put(out, charge ? most(cost, r.limit) : can ? cost : 0);
          put_number(out, pol.buckets());
          put_number(out, r.window);
        } else if constexpr (std::is_same_v<T, quota>) {
          const bool charge = report && pol.units() > 0 && cost >= 1;
          const bool can = cost >= 1 && cost <= pol.units();
          put_number(out, charge ? 2 : can ? 1 : 0);
          put_number(out, pol.units());
          put(out, charge ? most(cost, pol.units()) : can ? cost : 0);
        } else if constexpr (std::is_same_v<T, concurrency>) {
          // The nonce is the request's (its lease_scope: semantics.md,
          // "Leases"); a report charges nothing (mode 2: fits or not).
          const bool can = cost >= 1 && cost <= pol.units();
          const std::uint64_t nonce = detail::lease_ctx.nonce;
          put_number(out, report ? 2 : can ? 1 : 0);
          put_number(out, pol.units());
          put_number(out, can ? cost : 0);
          put_limbs(out, pol.lease_length());
          put_number(out, static_cast<std::int64_t>(nonce >> 32));
          put_number(out, static_cast<std::int64_t>(nonce & 0xFFFFFFFFULL));
        } else {
          static_assert(holds_no_leaf_state<T>,
                        "a new algorithm: handle it here (docs/architecture.md, \"Adding an algorithm\")");
        }
      },
      *lp.policy);
}

any_state plan::assemble(std::span<any_state> leaf_states) const {
  std::size_t next = 0;
  return walk_assemble(*policy_, leaf_states, next);
}

void plan::leaf_states(const any_state& s, std::vector<const any_state*>& out) const { walk_leaves(*policy_, s, out); }

}  // namespace sluice::redis
