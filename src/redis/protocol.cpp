// The Redis store's wire protocol: plans, arguments, and stored values back
// into core states (protocol.hpp).
#include "redis/protocol.hpp"

#include <charconv>
#include <cstdio>
#include <numeric>
#include <type_traits>
#include <utility>

#include "detail/log_rebuild.hpp"
#include "sluice/snapshot.hpp"

namespace sluice::redis {
namespace {

using detail::i128;

constexpr i128 p52 = i128{1} << 52;
constexpr i128 p53 = i128{1} << 53;
constexpr std::int64_t p32 = std::int64_t{1} << 32;

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

/// The reduced L', W' of a rate (L ≥ 1) and the checks on them.
std::optional<error> reduce(leaf_plan& lp, rate r, std::int64_t capacity, const char* capacity_field) {
  const std::int64_t g = std::gcd(r.limit, r.window);
  lp.g = g;
  lp.l1 = r.limit / g;
  lp.w1 = r.window / g;
  const i128 sw = static_cast<i128>(capacity) * lp.w1;
  lp.sq = sw / lp.l1;
  lp.sr = sw % lp.l1;
  lp.wq = lp.w1 / lp.l1;
  lp.wr = lp.w1 % lp.l1;
  if (lp.sq >= p52)
    return bound_error(capacity_field, std::string(capacity_field) + "·window/limit (the tolerance, in ticks)",
                       "below 2^52 (4503599627370496)", lp.sq);
  if (lp.l1 > p52) return bound_error("limit", "limit/gcd(limit, window)", "at most 2^52 (4503599627370496)", lp.l1);
  return std::nullopt;
}

std::string tag_of(char letter, const any_policy& p) {
  const std::string bytes = encode_policy(p);
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", crc32c(bytes.data(), bytes.size()));
  return std::string(1, letter) + hex;
}

/// The leaf plan of a stateful algorithm, or an error naming the field.
result<leaf_plan> leaf_of(const any_policy& p) {
  leaf_plan lp;
  lp.policy = &p;
  std::optional<error> bad;
  std::visit(
      [&](const auto& pol) {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<T, gcra> || std::is_same_v<T, token_bucket>) {
          lp.letter = 'g';
          if (pol.limit().limit > 0) bad = reduce(lp, pol.limit(), pol.burst(), "burst");
        } else if constexpr (std::is_same_v<T, leaky_queue>) {
          lp.letter = 'q';
          if (pol.limit().limit > 0) bad = reduce(lp, pol.limit(), pol.queue(), "queue");
        } else if constexpr (std::is_same_v<T, fixed_window> || std::is_same_v<T, sliding_counter> ||
                             std::is_same_v<T, sliding_log> || std::is_same_v<T, sliding_buckets>) {
          lp.letter = std::is_same_v<T, fixed_window>      ? 'f'
                      : std::is_same_v<T, sliding_counter> ? 'c'
                      : std::is_same_v<T, sliding_log>     ? 's'
                                                           : 'b';
          bad = below53("limit", pol.limit().limit);
          if (!bad) bad = below53("window", pol.limit().window);
        } else if constexpr (std::is_same_v<T, quota>) {
          lp.letter = 'u';
          bad = below53("quota", pol.units());
        }
      },
      p);
  if (bad) return *bad;
  lp.tag = tag_of(lp.letter, p);
  return lp;
}

std::optional<error> walk_make(const any_policy& p, const std::string& path, std::vector<leaf_plan>& out) {
  if (const auto* a = std::get_if<all_of>(&p)) {
    for (std::size_t i = 0; i < a->parts().size(); ++i)
      if (auto e = walk_make(a->parts()[i], path + (path.empty() ? ":" : ".") + std::to_string(i), out)) return e;
    return std::nullopt;
  }
  if (const auto* o = std::get_if<any_of>(&p)) {
    for (std::size_t i = 0; i < o->parts().size(); ++i)
      if (auto e = walk_make(o->parts()[i], path + (path.empty() ? ":" : ".") + std::to_string(i), out)) return e;
    return std::nullopt;
  }
  if (std::holds_alternative<always_allow>(p) || std::holds_alternative<always_deny>(p)) return std::nullopt;
  auto lp = leaf_of(p);
  if (!lp) return lp.err();
  lp.value().suffix = path;
  out.push_back(std::move(lp).value());
  return std::nullopt;
}

void put(std::vector<std::string>& out, i128 v) { out.push_back(text(v)); }

void put_limbs(std::vector<std::string>& out, std::int64_t v) {
  std::int64_t h = 0;
  std::int64_t l = 0;
  split_limbs(v, h, l);
  out.push_back(std::to_string(h));
  out.push_back(std::to_string(l));
}

/// The window index and offset of `t` in windows of `w` from `origin`.
void put_window(std::vector<std::string>& out, tick t, tick w, tick origin) {
  const i128 k = detail::floor_div(static_cast<i128>(t) - origin, w);
  const i128 o = static_cast<i128>(t) - origin - k * w;
  put_limbs(out, static_cast<std::int64_t>(k));
  put(out, o);
}

void append_leaf(const leaf_plan& lp, tick now, std::int64_t cost, std::vector<std::string>& out) {
  out.push_back(lp.tag);
  std::visit(
      [&](const auto& pol) {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<T, gcra> || std::is_same_v<T, token_bucket>) {
          const bool can = pol.limit().limit > 0 && cost >= 1 && cost <= pol.burst();
          const i128 cw = can ? static_cast<i128>(cost) * lp.w1 : 0;
          out.push_back(can ? "1" : "0");
          put(out, lp.l1);
          put(out, cw / lp.l1);
          put(out, cw % lp.l1);
          put(out, lp.sq);
          put(out, lp.sr);
        } else if constexpr (std::is_same_v<T, leaky_queue>) {
          const bool can = pol.limit().limit > 0 && cost >= 1 && cost <= pol.queue();
          const i128 x = can ? static_cast<i128>(pol.queue() - cost) * lp.w1 : 0;
          const i128 y = can ? static_cast<i128>(cost - 1) * lp.w1 : 0;
          out.push_back(can ? "1" : "0");
          put(out, lp.l1);
          put(out, lp.wq);
          put(out, lp.wr);
          put(out, x / lp.l1);
          put(out, x % lp.l1);
          put(out, y / lp.l1);
          put(out, y % lp.l1);
        } else if constexpr (std::is_same_v<T, fixed_window>) {
          const rate r = pol.limit();
          const bool can = cost >= 1 && cost <= r.limit;
          out.push_back(can ? "1" : "0");
          put_window(out, now, r.window, pol.origin());
          put(out, r.limit);
          put(out, can ? cost : 0);
          put(out, r.window);
        } else if constexpr (std::is_same_v<T, sliding_counter>) {
          const rate r = pol.limit();
          const bool can = cost >= 1 && cost <= r.limit;
          out.push_back(can ? "1" : "0");
          put_window(out, now, r.window, 0);
          put(out, r.limit);
          put(out, r.window);
          put(out, can ? cost : 0);
        } else if constexpr (std::is_same_v<T, sliding_log>) {
          const rate r = pol.limit();
          const bool can = cost >= 1 && cost <= r.limit;
          out.push_back(can ? "1" : "0");
          put(out, r.limit);
          put(out, can ? cost : 0);
          put(out, r.window);
        } else if constexpr (std::is_same_v<T, sliding_buckets>) {
          const rate r = pol.limit();
          const bool can = cost >= 1 && cost <= r.limit;
          out.push_back(can ? "1" : "0");
          put_window(out, now, r.window / pol.buckets(), 0);
          put(out, r.limit);
          put(out, can ? cost : 0);
          put(out, pol.buckets());
          put(out, r.window);
        } else if constexpr (std::is_same_v<T, quota>) {
          const bool can = cost >= 1 && cost <= pol.units();
          out.push_back(can ? "1" : "0");
          put(out, pol.units());
          put(out, can ? cost : 0);
        }
      },
      *lp.policy);
}

void walk_args(const any_policy& p, const std::vector<leaf_plan>& leaves, std::size_t& next, tick now,
               std::int64_t cost, std::vector<std::string>& out) {
  if (const auto* a = std::get_if<all_of>(&p)) {
    out.emplace_back("A");
    out.push_back(std::to_string(a->parts().size()));
    for (const auto& part : a->parts()) walk_args(part, leaves, next, now, cost, out);
  } else if (const auto* o = std::get_if<any_of>(&p)) {
    out.emplace_back("O");
    out.push_back(std::to_string(o->parts().size()));
    for (const auto& part : o->parts()) walk_args(part, leaves, next, now, cost, out);
  } else if (std::holds_alternative<always_allow>(p)) {
    out.emplace_back("Y");
  } else if (std::holds_alternative<always_deny>(p)) {
    out.emplace_back("N");
  } else {
    append_leaf(leaves[next++], now, cost, out);
  }
}

// ---- reading stored values ----

/// The integers of a stored value after "tag ", each canonical and below 2^53
/// in magnitude (as the Lua library checks them); nullopt otherwise.
std::optional<std::vector<std::int64_t>> fields(std::string_view v, std::string_view tag) {
  if (v.size() < tag.size() + 1 || v.substr(0, tag.size()) != tag || v[tag.size()] != ' ') return std::nullopt;
  std::vector<std::int64_t> out;
  std::size_t pos = tag.size() + 1;
  while (pos <= v.size()) {
    std::size_t end = v.find(' ', pos);
    if (end == std::string_view::npos) end = v.size();
    const std::string_view tok = v.substr(pos, end - pos);
    std::int64_t x = 0;
    const auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), x);
    if (tok.empty() || ec != std::errc{} || ptr != tok.data() + tok.size()) return std::nullopt;
    if (std::to_string(x) != tok || x >= (std::int64_t{1} << 53) || x <= -(std::int64_t{1} << 53)) return std::nullopt;
    out.push_back(x);
    pos = end + 1;
  }
  return out;
}

bool limbs_ok(std::int64_t h, std::int64_t l) { return h >= -(p32 / 2) && h < p32 / 2 && l >= 0 && l < p32; }

std::int64_t join(std::int64_t h, std::int64_t l) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(h) << 32 | static_cast<std::uint64_t>(l));
}

bool before(std::int64_t ah, std::int64_t al, std::int64_t bh, std::int64_t bl) {
  return ah < bh || (ah == bh && al < bl);
}

error corrupt(const leaf_plan& lp, std::string_view why) {
  return error{"state", "corrupt state at a " + std::string(name_of(algorithm_of(*lp.policy))) + " key (" +
                            std::string(why) + ")"};
}

}  // namespace

result<plan> plan::make(const any_policy& p) {
  plan out;
  out.policy_ = std::make_shared<const any_policy>(p);
  if (auto e = walk_make(*out.policy_, "", out.leaves_)) return *e;
  return out;
}

void plan::append_args(tick now, std::int64_t cost, std::vector<std::string>& out) const {
  std::size_t next = 0;
  walk_args(*policy_, leaves_, next, now, cost, out);
}

result<any_state> plan::decode_leaf(std::size_t i, std::optional<std::string_view> value, tick& latest) const {
  const leaf_plan& lp = leaves_[i];
  if (!value) return fresh_state(*lp.policy);
  const auto f = fields(*value, lp.tag);
  if (!f) {
    if (!value->empty() && value->front() == lp.letter && value->size() > lp.tag.size() &&
        (*value)[lp.tag.size()] == ' ')
      return corrupt(lp, "written for another configuration of this policy name, or malformed");
    return corrupt(lp, "a value this store did not write");
  }
  const std::vector<std::int64_t>& x = *f;
  std::optional<any_state> st;
  std::string_view why = "fields";
  std::visit(
      [&](const auto& pol) {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<T, gcra> || std::is_same_v<T, token_bucket> || std::is_same_v<T, leaky_queue>) {
          if (x.size() != 4 || !limbs_ok(x[2], x[3]) || pol.limit().limit == 0) return;
          const i128 dq = x[0];
          const i128 dr = x[1];
          if (dq < 0 || dr < 0 || dr >= lp.l1) return;
          const std::int64_t last = join(x[2], x[3]);
          const i128 debt = dq * lp.l1 + dr;  // in 1/L' tick
          if constexpr (std::is_same_v<T, leaky_queue>) {
            if (dq >= p52) return;
            leaky_queue::state s;
            s.release = lp.g * debt + static_cast<i128>(last) * pol.limit().limit;
            s.last = last;
            st = s;
          } else {
            if (dq > lp.sq || (dq == lp.sq && dr > lp.sr)) return;
            if constexpr (std::is_same_v<T, gcra>) {
              gcra::state s;
              s.u = static_cast<i128>(last) * pol.limit().limit + lp.g * debt;
              s.last = last;
              st = s;
            } else {
              token_bucket::state s;
              s.spent = lp.g * debt;
              s.last = last;
              st = s;
            }
          }
          latest = std::max(latest, last);
        } else if constexpr (std::is_same_v<T, fixed_window>) {
          const rate r = pol.limit();
          if (x.size() != 4 || !limbs_ok(x[0], x[1]) || x[2] < 0 || x[2] >= r.window || x[3] < 1 || x[3] > r.limit)
            return;
          fixed_window::state s;
          s.window = join(x[0], x[1]);
          s.count = x[3];
          const i128 at = pol.start_of(s.window) + x[2];
          if (at < detail::i64_min || at > detail::i64_max) return;
          latest = std::max(latest, static_cast<tick>(at));
          st = s;
        } else if constexpr (std::is_same_v<T, sliding_counter>) {
          const rate r = pol.limit();
          if (x.size() != 5 || !limbs_ok(x[0], x[1]) || x[2] < 0 || x[2] >= r.window || x[3] < 0 || x[3] > r.limit ||
              x[4] < 1 || x[4] > r.limit)
            return;
          sliding_counter::state s;
          s.window = join(x[0], x[1]);
          s.prev = x[3];
          s.curr = x[4];
          const i128 at = static_cast<i128>(s.window) * r.window + x[2];
          if (at < detail::i64_min || at > detail::i64_max) return;
          s.last = static_cast<tick>(at);
          latest = std::max(latest, s.last);
          st = s;
        } else if constexpr (std::is_same_v<T, quota>) {
          if (x.size() != 1 || x[0] < 1 || x[0] > pol.units()) return;
          quota::state s;
          s.used = x[0];
          st = s;
        } else if constexpr (std::is_same_v<T, sliding_log>) {
          const rate r = pol.limit();
          if (x.size() < 3 || x.size() % 3 != 0) return;
          std::vector<sliding_log::entry> entries;
          i128 total = 0;
          for (std::size_t k = 0; k < x.size(); k += 3) {
            if (!limbs_ok(x[k], x[k + 1]) || x[k + 2] < 1) return;
            if (k > 0 && !before(x[k - 3], x[k - 2], x[k], x[k + 1])) return;
            total += x[k + 2];
            if (total > r.limit) return;
            entries.push_back({join(x[k], x[k + 1]), x[k + 2]});
          }
          latest = std::max(latest, entries.back().at);
          st = detail::rebuild_log(r.window, entries);
        } else if constexpr (std::is_same_v<T, sliding_buckets>) {
          const rate r = pol.limit();
          const std::int64_t n = pol.buckets();
          const tick width = r.window / n;
          if (x.size() != static_cast<std::size_t>(n) + 3 || !limbs_ok(x[0], x[1]) || x[2] < 0 || x[2] >= width ||
              x.back() < 1)
            return;
          i128 total = 0;
          for (std::size_t k = 3; k < x.size(); ++k) {
            if (x[k] < 0) return;
            total += x[k];
          }
          if (total > r.limit) return;
          const std::int64_t newest = join(x[0], x[1]);
          const i128 at = static_cast<i128>(newest) * width + x[2];
          if (at < detail::i64_min || at > detail::i64_max) return;
          // The ring, rebuilt the only way its interface allows: by admitting
          // each sub-window's count at its first instant, oldest first,
          // through a policy of the same window and buckets and no limit.
          const sliding_buckets big = sliding_buckets::make(rate{max_quantity, r.window}, n).value();
          sliding_buckets::state s;
          for (std::int64_t k = 0; k < n; ++k) {
            const std::int64_t c = x[static_cast<std::size_t>(3 + k)];
            if (c == 0) continue;
            const i128 sub = static_cast<i128>(newest) - (n - 1 - k);
            i128 t = sub * width;
            if (t < detail::i64_min) t = detail::i64_min;
            if (detail::floor_div(t, width) != sub) return;  // a sub-window before the start of time
            (void)big.decide(s, static_cast<tick>(t), c);
          }
          latest = std::max(latest, static_cast<tick>(at));
          st = s;
        }
      },
      *lp.policy);
  if (!st) return corrupt(lp, why);
  return std::move(*st);
}

namespace {
result<any_state> walk_decode(const any_policy& p, const plan& pl,
                              const std::vector<std::optional<std::string_view>>& values, std::size_t& next,
                              tick& latest) {
  if (const auto* a = std::get_if<all_of>(&p)) {
    all_of_state s;
    for (const auto& part : a->parts()) {
      auto r = walk_decode(part, pl, values, next, latest);
      if (!r) return r.err();
      s.parts.push_back(std::move(r).value());
    }
    return any_state{std::move(s)};
  }
  if (const auto* o = std::get_if<any_of>(&p)) {
    any_of_state s;
    for (const auto& part : o->parts()) {
      auto r = walk_decode(part, pl, values, next, latest);
      if (!r) return r.err();
      s.parts.push_back(std::move(r).value());
    }
    return any_state{std::move(s)};
  }
  if (std::holds_alternative<always_allow>(p)) return any_state{always_allow::state{}};
  if (std::holds_alternative<always_deny>(p)) return any_state{always_deny::state{}};
  const std::size_t i = next++;
  return pl.decode_leaf(i, values[i], latest);
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
}  // namespace

result<any_state> plan::decode(const std::vector<std::optional<std::string_view>>& values, tick& latest) const {
  std::size_t next = 0;
  return walk_decode(*policy_, *this, values, next, latest);
}

void plan::leaf_states(const any_state& s, std::vector<const any_state*>& out) const { walk_leaves(*policy_, s, out); }

}  // namespace sluice::redis
