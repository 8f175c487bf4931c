// The Redis store's stored values: each leaf's state as the Lua library
// writes it (its tag, then its fields as doubles), read back into core
// states with exactly the library's checks, and written from core states
// when the client decides a request itself (a state carried over from an
// earlier configuration). See protocol.hpp and docs/redis.md, "State values".
#include <algorithm>
#include <type_traits>
#include <utility>

#include "redis/client/binary.hpp"
#include "redis/store/protocol.hpp"
#include "redis/store/value_codec.hpp"
#include "sluice/detail/log_rebuild.hpp"
#include "sluice/report.hpp"

namespace sluice::redis {
namespace {

using detail::i128;

constexpr std::int64_t p32 = std::int64_t{1} << 32;
constexpr std::int64_t p52 = std::int64_t{1} << 52;

/// The fields of a value after its tag: `n` doubles, each an integer below
/// 2^53 in magnitude; false otherwise (or when the length is not 9 + 8n).
bool fields(std::string_view v, std::size_t n, std::int64_t* out) {
  if (v.size() != tag_size + 8 * n) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (!get_number(v.data() + tag_size + 8 * i, out[i])) return false;
  return true;
}

bool limbs_ok(std::int64_t h, std::int64_t l) { return h >= -(p32 / 2) && h < p32 / 2 && l >= 0 && l < p32; }

std::int64_t join(std::int64_t h, std::int64_t l) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(h) << 32 | static_cast<std::uint64_t>(l));
}

bool before(std::int64_t ah, std::int64_t al, std::int64_t bh, std::int64_t bl) {
  return ah < bh || (ah == bh && al < bl);
}

bool in(std::int64_t x, i128 lo, i128 hi) { return x >= lo && x <= hi; }

error corrupt(const leaf_plan& lp, std::string_view why) {
  return error{"state", "corrupt state at a " + std::string(name_of(algorithm_of(*lp.policy))) + " key (" +
                            std::string(why) + ")"};
}

/// Whether every number is below 2^53 in magnitude (the library holds it).
bool holdable(std::initializer_list<i128> xs) {
  return std::all_of(xs.begin(), xs.end(), [](i128 x) { return x < p53 && x > -p53; });
}

}  // namespace

result<any_state> decode_value(const leaf_plan& lp, std::optional<std::string_view> value, tick& latest) {
  if (!value) return fresh_state(*lp.policy);
  const std::string_view v = *value;
  if (v.size() < tag_size || v.substr(0, tag_size) != lp.tag_view()) {
    if (has_tag_shape(v)) return corrupt(lp, "written for another configuration of this policy name");
    return corrupt(lp, "a value this store did not write");
  }
  std::optional<any_state> st;
  std::visit(
      [&](const auto& pol) {
        using T = std::decay_t<decltype(pol)>;
        std::int64_t x[5] = {};
        if constexpr (std::is_same_v<T, gcra> || std::is_same_v<T, token_bucket> || std::is_same_v<T, leaky_queue>) {
          const std::int64_t l = pol.limit().limit;
          if (!fields(v, 4, x) || !limbs_ok(x[2], x[3]) || !in(x[1], 0, std::max<std::int64_t>(l, 1) - 1) || x[0] < 0)
            return;
          const std::int64_t last = join(x[2], x[3]);
          if (l == 0) {
            // A limit of 0 never admits, so such a value is only written when a
            // state is carried over to it (reconfigure.hpp: it keeps what it
            // needs to change back): GCRA's deficit, the token bucket's spent
            // units, the leaky queue's release instant after `last`, in dq.
            if (x[0] >= p52) return;
            if constexpr (std::is_same_v<T, gcra>) {
              st = gcra::state{x[0], last};
            } else if constexpr (std::is_same_v<T, token_bucket>) {
              st = token_bucket::state{x[0], last};
            } else {
              st = leaky_queue::state{static_cast<i128>(last) + x[0], last};
            }
            latest = std::max(latest, last);
            return;
          }
          const i128 debt = static_cast<i128>(x[0]) * l + x[1];  // in 1/L tick
          if constexpr (std::is_same_v<T, leaky_queue>) {
            if (x[0] >= p52) return;
            leaky_queue::state s;
            s.release = debt + static_cast<i128>(last) * l;
            s.last = last;
            st = s;
          } else {
            if (x[0] >= p52) return;  // an admit leaves at most S·W; a carried state may hold more
            if constexpr (std::is_same_v<T, gcra>) {
              gcra::state s;
              s.u = static_cast<i128>(last) * l + debt;
              s.last = last;
              st = s;
            } else {
              token_bucket::state s;
              s.spent = debt;
              s.last = last;
              st = s;
            }
          }
          latest = std::max(latest, last);
        } else if constexpr (std::is_same_v<T, fixed_window>) {
          const rate r = pol.limit();
          // A count past L: a larger limit's units carried over (an
          // override, a redefinition).
          if (!fields(v, 4, x) || !limbs_ok(x[0], x[1]) || !in(x[2], 0, r.window - 1) || !in(x[3], 1, p53 - 1)) return;
          fixed_window::state s;
          s.window = join(x[0], x[1]);
          s.count = x[3];
          const i128 at = pol.start_of(s.window) + x[2];
          if (at < detail::i64_min || at > detail::i64_max) return;
          latest = std::max(latest, static_cast<tick>(at));
          st = s;
        } else if constexpr (std::is_same_v<T, sliding_counter>) {
          const rate r = pol.limit();
          if (!fields(v, 5, x) || !limbs_ok(x[0], x[1]) || !in(x[2], 0, r.window - 1) || !in(x[3], 0, p53 - 1) ||
              !in(x[4], 1, report_count_bound(r)))  // a report may leave more than L
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
          // Past N: a larger quota's units carried over (a redefinition,
          // an override's removal).
          if (!fields(v, 1, x) || !in(x[0], 1, p53 - 1)) return;
          quota::state s;
          s.used = x[0];
          st = s;
        } else if constexpr (std::is_same_v<T, sliding_log>) {
          const rate r = pol.limit();
          const std::size_t n = (v.size() - tag_size) / 8;
          if (n < 3 || n % 3 != 0) return;
          std::vector<std::int64_t> f(n);
          if (!fields(v, n, f.data())) return;
          std::vector<sliding_log::entry> entries;
          entries.reserve(n / 3);
          i128 rest = 0;  // the units after the first run: under L (admits and reports)
          for (std::size_t k = 0; k < n; k += 3) {
            if (!limbs_ok(f[k], f[k + 1]) || !in(f[k + 2], 1, r.limit)) return;
            if (k > 0 && !before(f[k - 3], f[k - 2], f[k], f[k + 1])) return;
            if (k > 0) rest += f[k + 2];
            if (rest > r.limit - 1) return;
            entries.push_back({join(f[k], f[k + 1]), f[k + 2]});
          }
          latest = std::max(latest, entries.back().at);
          st = detail::rebuild_log(r.window, entries);
        } else if constexpr (std::is_same_v<T, sliding_buckets>) {
          const rate r = pol.limit();
          const std::int64_t n = pol.buckets();
          const tick width = r.window / n;
          std::vector<std::int64_t> f(static_cast<std::size_t>(n) + 3);
          if (!fields(v, f.size(), f.data()) || !limbs_ok(f[0], f[1]) || !in(f[2], 0, width - 1) || f.back() < 1)
            return;
          i128 rest = -1;  // the units after the oldest non-empty sub-window: under L
          for (std::size_t k = 3; k < f.size(); ++k) {
            if (!in(f[k], 0, r.limit)) return;
            if (rest >= 0) {
              rest += f[k];
            } else if (f[k] > 0) {
              rest = 0;
            }
          }
          if (rest > r.limit - 1) return;
          const std::int64_t newest = join(f[0], f[1]);
          const i128 at = static_cast<i128>(newest) * width + f[2];
          if (at < detail::i64_min || at > detail::i64_max) return;
          // The ring, rebuilt the only way its interface allows: by admitting
          // each sub-window's count at its first instant, oldest first,
          // through a policy of the same window and buckets and no limit.
          const sliding_buckets big = sliding_buckets::make(rate{max_quantity, r.window}, n).value();
          sliding_buckets::state s;
          for (std::int64_t k = 0; k < n; ++k) {
            const std::int64_t c = f[static_cast<std::size_t>(3 + k)];
            if (c == 0) continue;
            const i128 sub = static_cast<i128>(newest) - (n - 1 - k);
            i128 t = sub * width;
            if (t < detail::i64_min) t = detail::i64_min;
            if (detail::floor_div(t, width) != sub) return;  // a sub-window before the start of time
            (void)big.decide(s, static_cast<tick>(t), c);
          }
          latest = std::max(latest, static_cast<tick>(at));
          st = s;
        } else if constexpr (std::is_same_v<T, concurrency>) {
          // latest (limbs), then per lease: expiry (limbs), nonce (two
          // 32-bit halves), units; by expiry, every lease at or after latest.
          const std::size_t n = (v.size() - tag_size) / 8;
          if (n < 2 || (n - 2) % 5 != 0) return;
          std::vector<std::int64_t> f(n);
          if (!fields(v, n, f.data()) || !limbs_ok(f[0], f[1])) return;
          concurrency::state s;
          s.latest = join(f[0], f[1]);
          s.leases.reserve((n - 2) / 5);
          for (std::size_t k = 2; k < n; k += 5) {
            if (!limbs_ok(f[k], f[k + 1]) || !in(f[k + 2], 0, p32 - 1) || !in(f[k + 3], 0, p32 - 1) ||
                !in(f[k + 4], 1, p53 - 1))
              return;
            concurrency::lease l;
            l.expiry = join(f[k], f[k + 1]);
            l.nonce = static_cast<std::uint64_t>(f[k + 2]) << 32 | static_cast<std::uint64_t>(f[k + 3]);
            l.units = f[k + 4];
            if (l.expiry < s.latest || (!s.leases.empty() && l.expiry < s.leases.back().expiry)) return;
            s.units += l.units;
            if (s.units >= p53) return;
            s.leases.push_back(l);
          }
          latest = std::max(latest, s.latest);
          st = std::move(s);
        } else {
          static_assert(holds_no_leaf_state<T>,
                        "a new algorithm: handle it here (docs/architecture.md, \"Adding an algorithm\")");
        }
      },
      *lp.policy);
  if (!st) return corrupt(lp, "fields");
  return std::move(*st);
}

bool encode_value(const leaf_plan& lp, const any_state& s, tick at, std::string& out) {
  std::string v(lp.tag, tag_size);
  bool ok = false;
  std::visit(
      [&](const auto& pol) {
        using T = std::decay_t<decltype(pol)>;
        const auto* st = std::get_if<typename T::state>(&s);
        if (st == nullptr) return;
        if constexpr (std::is_same_v<T, gcra> || std::is_same_v<T, token_bucket> || std::is_same_v<T, leaky_queue>) {
          const std::int64_t l = pol.limit().limit;
          i128 debt = 0;  // in 1/L tick (L = 0: as decode_leaf reads it)
          if constexpr (std::is_same_v<T, gcra>) {
            debt = st->u - static_cast<i128>(st->last) * l;
          } else if constexpr (std::is_same_v<T, token_bucket>) {
            debt = st->spent;
          } else {
            debt = st->release - static_cast<i128>(st->last) * std::max<std::int64_t>(l, 1);
          }
          const std::int64_t unit = std::max<std::int64_t>(l, 1);
          if (debt < 0 || !holdable({debt / unit})) return;
          put_number(v, static_cast<std::int64_t>(debt / unit));
          put_number(v, static_cast<std::int64_t>(debt % unit));
          put_limbs(v, st->last);
          ok = true;
        } else if constexpr (std::is_same_v<T, fixed_window>) {
          const i128 start = pol.start_of(st->window);
          const i128 o = std::clamp<i128>(static_cast<i128>(at) - start, 0, pol.limit().window - 1);
          if (!holdable({st->count})) return;
          put_limbs(v, st->window);
          put_number(v, static_cast<std::int64_t>(o));
          put_number(v, st->count);
          ok = true;
        } else if constexpr (std::is_same_v<T, sliding_counter>) {
          const i128 o = static_cast<i128>(st->last) - static_cast<i128>(st->window) * pol.limit().window;
          if (!holdable({o, st->prev, st->curr})) return;
          put_limbs(v, st->window);
          put_number(v, static_cast<std::int64_t>(o));
          put_number(v, st->prev);
          put_number(v, st->curr);
          ok = true;
        } else if constexpr (std::is_same_v<T, quota>) {
          if (!holdable({st->used})) return;
          put_number(v, st->used);
          ok = true;
        } else if constexpr (std::is_same_v<T, sliding_log>) {
          // The runs still in the window at `at`, as the library keeps them.
          const i128 horizon = static_cast<i128>(std::max(at, st->last())) - pol.limit().window;
          for (std::size_t k = 0; k < st->size(); ++k) {
            const sliding_log::entry& e = st->at(k);
            if (e.at <= horizon) continue;
            if (!holdable({e.units})) return;
            put_limbs(v, e.at);
            put_number(v, e.units);
          }
          ok = v.size() > tag_size;
        } else if constexpr (std::is_same_v<T, sliding_buckets>) {
          const std::int64_t n = pol.buckets();
          const tick width = pol.limit().window / n;
          if (st->counts().size() != static_cast<std::size_t>(n)) return;
          const i128 o =
              std::clamp<i128>(static_cast<i128>(at) - static_cast<i128>(st->newest()) * width, 0, width - 1);
          put_limbs(v, st->newest());
          put_number(v, static_cast<std::int64_t>(o));
          for (std::int64_t k = n - 1; k >= 0; --k) {
            const i128 sub = static_cast<i128>(st->newest()) - k;  // may be before the start of time: count 0
            const auto slot = static_cast<std::int64_t>(((sub % n) + n) % n);
            const std::int64_t c = st->counts()[static_cast<std::size_t>(slot)];
            if (!holdable({c})) return;
            put_number(v, c);
          }
          ok = true;
        } else if constexpr (std::is_same_v<T, concurrency>) {
          put_limbs(v, st->latest);
          for (const concurrency::lease& l : st->leases) {
            if (!holdable({l.units})) return;
            put_limbs(v, l.expiry);
            put_number(v, static_cast<std::int64_t>(l.nonce >> 32));
            put_number(v, static_cast<std::int64_t>(l.nonce & 0xFFFFFFFFULL));
            put_number(v, l.units);
          }
          ok = true;
        } else {
          static_assert(holds_no_leaf_state<T>,
                        "a new algorithm: handle it here (docs/architecture.md, \"Adding an algorithm\")");
        }
      },
      *lp.policy);
  if (!ok) return false;
  // The library must read back exactly this state: a state it would refuse
  // (out of its ranges) is never written.
  tick ignored = detail::i64_min;
  auto back = decode_value(lp, std::string_view(v), ignored);
  if (!back || !(back.value() == s)) return false;
  out.append(v);
  return true;
}

std::int64_t value_ticks_to_fresh(const leaf_plan& lp, std::string_view value) {
  std::int64_t x[3] = {};
  std::int64_t w = 0;
  std::visit(
      [&](const auto& pol) {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<T, concurrency>)
          w = pol.lease_length();
        else if constexpr (!std::is_same_v<T, quota> && !std::is_same_v<T, always_allow> &&
                           !std::is_same_v<T, always_deny> && !std::is_same_v<T, all_of> && !std::is_same_v<T, any_of>)
          w = pol.limit().window;
      },
      *lp.policy);
  if (value.size() >= tag_size + 24)
    for (std::size_t k = 0; k < 3; ++k) (void)get_number(value.data() + tag_size + 8 * k, x[k]);
  if (lp.letter == 'l') {
    // Fresh once the latest expiry has passed: from latest to the last
    // lease's expiry, plus one.
    const std::size_t n = value.size() >= tag_size ? (value.size() - tag_size) / 8 : 0;
    std::int64_t f[4] = {};
    if (n < 7 || !get_number(value.data() + tag_size, f[0]) || !get_number(value.data() + tag_size + 8, f[1]) ||
        !get_number(value.data() + tag_size + 8 * (n - 5), f[2]) ||
        !get_number(value.data() + tag_size + 8 * (n - 4), f[3]))
      return 1;
    const i128 d = static_cast<i128>(join(f[2], f[3])) - join(f[0], f[1]) + 1;
    return static_cast<std::int64_t>(std::clamp<i128>(d, 1, detail::i64_max));
  }
  switch (lp.letter) {
    case 'g':
      return x[0] + 1;
    case 'q':
      return static_cast<std::int64_t>(x[0] + lp.wq + 2);
    case 'f':
    case 'b':  // fresh when the latest admit's sub-window leaves the window
      return w - x[2] + 1;
    case 'c':
      return 2 * w - x[2] + 2;
    case 'u':
      return -1;
    default:  // 's'
      return w + 1;
  }
}

result<any_state> plan::decode_leaf(std::size_t i, std::optional<std::string_view> value, tick& latest) const {
  return decode_value(leaves_[i], value, latest);
}

bool plan::encode_leaf(std::size_t i, const any_state& s, tick at, std::string& out) const {
  return encode_value(leaves_[i], s, at, out);
}

std::int64_t plan::ticks_to_fresh(std::size_t i, std::string_view value) const {
  return value_ticks_to_fresh(leaves_[i], value);
}

std::uint64_t plan::issued_nonce(std::size_t i, std::optional<std::string_view> before,
                                 std::optional<std::string_view> after) const {
  if (leaves_[i].letter != 'l' || !after) return 0;
  tick ignored = detail::i64_min;
  const auto a = decode_leaf(i, after, ignored);
  const auto b = decode_leaf(i, before, ignored);
  if (!a || !b) return 0;
  const auto* as = std::get_if<concurrency::state>(&a.value());
  const auto* bs = std::get_if<concurrency::state>(&b.value());
  if (as == nullptr || bs == nullptr) return 0;
  for (const concurrency::lease& l : as->leases) {
    const bool known = std::any_of(bs->leases.begin(), bs->leases.end(),
                                   [&](const concurrency::lease& o) { return o.nonce == l.nonce; });
    if (!known) return l.nonce;
  }
  return 0;
}

}  // namespace sluice::redis
