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
#include "sluice/core/detail/log_rebuild.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/report.hpp"

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

// ---- states of fixed shape: one loop over the description (portable.hpp) ----

/// How many numbers a field of kind `k` takes in a value.
constexpr std::size_t numbers_of(portable::kind k) noexcept {
  switch (k) {
    case portable::kind::count:
      return 1;
    case portable::kind::instant:
    case portable::kind::debt:
      return 2;
    case portable::kind::window:
    case portable::kind::windowed:
      return 3;
  }
  return 0;
}

template <typename P>
constexpr std::size_t numbers_in() noexcept {
  std::size_t n = 0;
  for (const auto& field : portable::of<P>::layout) n += numbers_of(field.how);
  return n;
}

/// What a debt counts in: 1/max(L, 1) tick (the library's unit).
template <typename P>
std::int64_t debt_unit(const P& p) noexcept {
  if constexpr (requires { p.limit(); }) {
    return std::max<std::int64_t>(p.limit().limit, 1);
  } else {
    return 1;
  }
}

/// A state of fixed shape from a value (its tag checked), each field as its
/// kind is stored and checked against its range; `latest` raised to the
/// latest instant it holds.
template <typename P>
requires portable::has_layout<P> std::optional<any_state> read_state(const P& p, std::string_view v, tick& latest) {
  using D = portable::of<P>;
  // At least 3 numbers, the most one field takes: GCC 12's -O3 checks each
  // case of the switch below against the array, even one this policy's
  // fields never reach (-Warray-bounds, an error in the release preset).
  std::int64_t x[std::max<std::size_t>(numbers_in<P>(), 3)] = {};
  if (!fields(v, numbers_in<P>(), x)) return std::nullopt;
  typename D::fields f{};
  const std::int64_t* at = x;
  tick newest = detail::i64_min;
  for (const std::size_t i : D::redis_order) {
    const auto& field = D::layout[i];
    i128& val = f.*field.member;
    switch (field.how) {
      case portable::kind::instant:
        if (!limbs_ok(at[0], at[1])) return std::nullopt;
        val = join(at[0], at[1]);
        newest = std::max(newest, join(at[0], at[1]));
        break;
      case portable::kind::count:
        val = at[0];
        break;
      case portable::kind::debt: {
        const std::int64_t unit = debt_unit(p);
        if (at[0] < 0 || at[0] >= p52 || at[1] < 0 || at[1] >= unit) return std::nullopt;
        val = static_cast<i128>(at[0]) * unit + at[1];
        break;
      }
      case portable::kind::window:
      case portable::kind::windowed: {
        const tick w = portable::window_length(p);
        if (!limbs_ok(at[0], at[1]) || !in(at[2], 0, w - 1)) return std::nullopt;
        const std::int64_t k = join(at[0], at[1]);
        const i128 t =
            (field.how == portable::kind::window ? portable::window_start(p, k) : static_cast<i128>(k) * w) + at[2];
        if (t < detail::i64_min || t > detail::i64_max) return std::nullopt;
        newest = std::max(newest, static_cast<tick>(t));
        val = field.how == portable::kind::window ? i128{k} : t;
        break;
      }
    }
    at += numbers_of(field.how);
    if (field.holds != nullptr) {
      // A carried field may hold more than its range's top: as much as
      // its numbers hold.
      const portable::range r = field.holds(p);
      if (val < r.lo || (!field.carried && val > r.hi)) return std::nullopt;
    }
  }
  latest = std::max(latest, newest);
  return any_state{D::from(p, f, portable::encoding::redis)};
}

/// Appends a state of fixed shape's fields to `v`, as the library stores
/// them, written at `at`; false when a number is past what it holds.
template <typename P>
requires portable::has_layout<P>
bool write_state(const P& p, const typename P::state& s, tick at, std::string& v) {
  using D = portable::of<P>;
  const typename D::fields f = D::to(p, s, portable::encoding::redis);
  for (const std::size_t i : D::redis_order) {
    const auto& field = D::layout[i];
    const i128 val = f.*field.member;
    switch (field.how) {
      case portable::kind::instant:
        put_limbs(v, static_cast<std::int64_t>(val));
        break;
      case portable::kind::count:
        if (!holdable({val})) return false;
        put_number(v, static_cast<std::int64_t>(val));
        break;
      case portable::kind::debt: {
        const std::int64_t unit = debt_unit(p);
        if (val < 0 || !holdable({val / unit})) return false;
        put_number(v, static_cast<std::int64_t>(val / unit));
        put_number(v, static_cast<std::int64_t>(val % unit));
        break;
      }
      case portable::kind::window: {  // the offset of `at` in the window
        const i128 o =
            std::clamp<i128>(static_cast<i128>(at) - portable::window_start(p, val), 0, portable::window_length(p) - 1);
        put_limbs(v, static_cast<std::int64_t>(val));
        put_number(v, static_cast<std::int64_t>(o));
        break;
      }
      case portable::kind::windowed: {
        const i128 k = detail::floor_div(val, portable::window_length(p));
        const i128 o = val - k * portable::window_length(p);
        if (!holdable({o})) return false;
        put_limbs(v, static_cast<std::int64_t>(k));
        put_number(v, static_cast<std::int64_t>(o));
        break;
      }
    }
  }
  return true;
}

// ---- states of variable size: the hooks ----

std::optional<any_state> variable_state(const sliding_log& p, std::string_view v, tick& latest) {
  const rate r = p.limit();
  const std::size_t n = (v.size() - tag_size) / 8;
  if (n < 3 || n % 3 != 0) return std::nullopt;
  std::vector<std::int64_t> f(n);
  if (!fields(v, n, f.data())) return std::nullopt;
  std::vector<sliding_log::entry> entries;
  entries.reserve(n / 3);
  i128 rest = 0;  // the units after the first run: under L (admits and reports)
  for (std::size_t k = 0; k < n; k += 3) {
    if (!limbs_ok(f[k], f[k + 1]) || !in(f[k + 2], 1, r.limit)) return std::nullopt;
    if (k > 0 && !before(f[k - 3], f[k - 2], f[k], f[k + 1])) return std::nullopt;
    if (k > 0) rest += f[k + 2];
    if (rest > r.limit - 1) return std::nullopt;
    entries.push_back({join(f[k], f[k + 1]), f[k + 2]});
  }
  latest = std::max(latest, entries.back().at);
  return any_state{detail::rebuild_log(r.window, entries)};
}

bool variable_state(const sliding_log& p, const sliding_log::state& s, tick at, std::string& v) {
  // The runs still in the window at `at`, as the library keeps them.
  const i128 horizon = static_cast<i128>(std::max(at, s.last())) - p.limit().window;
  for (std::size_t k = 0; k < s.size(); ++k) {
    const sliding_log::entry& e = s.at(k);
    if (e.at <= horizon) continue;
    if (!holdable({e.units})) return false;
    put_limbs(v, e.at);
    put_number(v, e.units);
  }
  return v.size() > tag_size;
}

std::optional<any_state> variable_state(const sliding_buckets& p, std::string_view v, tick& latest) {
  const rate r = p.limit();
  const std::int64_t n = p.buckets();
  const tick width = r.window / n;
  std::vector<std::int64_t> f(static_cast<std::size_t>(n) + 3);
  if (!fields(v, f.size(), f.data()) || !limbs_ok(f[0], f[1]) || !in(f[2], 0, width - 1) || f.back() < 1)
    return std::nullopt;
  i128 rest = -1;  // the units after the oldest non-empty sub-window: under L
  for (std::size_t k = 3; k < f.size(); ++k) {
    if (!in(f[k], 0, r.limit)) return std::nullopt;
    if (rest >= 0) {
      rest += f[k];
    } else if (f[k] > 0) {
      rest = 0;
    }
  }
  if (rest > r.limit - 1) return std::nullopt;
  const std::int64_t newest = join(f[0], f[1]);
  const i128 at = static_cast<i128>(newest) * width + f[2];
  if (at < detail::i64_min || at > detail::i64_max) return std::nullopt;
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
    if (detail::floor_div(t, width) != sub) return std::nullopt;  // a sub-window before the start of time
    (void)big.decide(s, static_cast<tick>(t), c);
  }
  latest = std::max(latest, static_cast<tick>(at));
  return any_state{std::move(s)};
}

bool variable_state(const sliding_buckets& p, const sliding_buckets::state& s, tick at, std::string& v) {
  const std::int64_t n = p.buckets();
  const tick width = p.limit().window / n;
  if (s.counts().size() != static_cast<std::size_t>(n)) return false;
  const i128 o = std::clamp<i128>(static_cast<i128>(at) - static_cast<i128>(s.newest()) * width, 0, width - 1);
  put_limbs(v, s.newest());
  put_number(v, static_cast<std::int64_t>(o));
  for (std::int64_t k = n - 1; k >= 0; --k) {
    const i128 sub = static_cast<i128>(s.newest()) - k;  // may be before the start of time: count 0
    const auto slot = static_cast<std::int64_t>(((sub % n) + n) % n);
    const std::int64_t c = s.counts()[static_cast<std::size_t>(slot)];
    if (!holdable({c})) return false;
    put_number(v, c);
  }
  return true;
}

std::optional<any_state> variable_state(const concurrency&, std::string_view v, tick& latest) {
  // latest (limbs), then per lease: expiry (limbs), nonce (two
  // 32-bit halves), units; by expiry, every lease at or after latest.
  const std::size_t n = (v.size() - tag_size) / 8;
  if (n < 2 || (n - 2) % 5 != 0) return std::nullopt;
  std::vector<std::int64_t> f(n);
  if (!fields(v, n, f.data()) || !limbs_ok(f[0], f[1])) return std::nullopt;
  concurrency::state s;
  s.latest = join(f[0], f[1]);
  s.leases.reserve((n - 2) / 5);
  for (std::size_t k = 2; k < n; k += 5) {
    if (!limbs_ok(f[k], f[k + 1]) || !in(f[k + 2], 0, p32 - 1) || !in(f[k + 3], 0, p32 - 1) ||
        !in(f[k + 4], 1, p53 - 1))
      return std::nullopt;
    concurrency::lease l;
    l.expiry = join(f[k], f[k + 1]);
    l.nonce = static_cast<std::uint64_t>(f[k + 2]) << 32 | static_cast<std::uint64_t>(f[k + 3]);
    l.units = f[k + 4];
    if (l.expiry < s.latest || (!s.leases.empty() && l.expiry < s.leases.back().expiry)) return std::nullopt;
    s.units += l.units;
    if (s.units >= p53) return std::nullopt;
    s.leases.push_back(l);
  }
  latest = std::max(latest, s.latest);
  return any_state{std::move(s)};
}

bool variable_state(const concurrency&, const concurrency::state& s, tick, std::string& v) {
  put_limbs(v, s.latest);
  for (const concurrency::lease& l : s.leases) {
    if (!holdable({l.units})) return false;
    put_limbs(v, l.expiry);
    put_number(v, static_cast<std::int64_t>(l.nonce >> 32));
    put_number(v, static_cast<std::int64_t>(l.nonce & 0xFFFFFFFFULL));
    put_number(v, l.units);
  }
  return true;
}

}  // namespace

result<any_state> decode_value(const leaf_plan& lp, std::optional<std::string_view> value, tick& latest) {
  if (!value) return fresh_state(*lp.policy);
  const std::string_view v = *value;
  if (v.size() < tag_size || v.substr(0, tag_size) != lp.tag_view()) {
    if (has_tag_shape(v)) return corrupt(lp, "written for another configuration of this policy name");
    return corrupt(lp, "a value this store did not write");
  }
  std::optional<any_state> st = std::visit(
      [&](const auto& pol) -> std::optional<any_state> {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (holds_no_leaf_state<T>) {
          return std::nullopt;  // no leaf: never planned
        } else if constexpr (portable::has_layout<T>) {
          return read_state(pol, v, latest);
        } else {
          return variable_state(pol, v, latest);
        }
      },
      *lp.policy);
  if (!st) return corrupt(lp, "fields");
  return std::move(*st);
}

bool encode_value(const leaf_plan& lp, const any_state& s, tick at, std::string& out) {
  std::string v(lp.tag, tag_size);
  const bool ok = std::visit(
      [&](const auto& pol) {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (holds_no_leaf_state<T>) {
          return false;  // no leaf: never planned
        } else {
          const auto* st = std::get_if<typename T::state>(&s);
          if (st == nullptr) return false;
          if constexpr (portable::has_layout<T>) {
            return write_state(pol, *st, at, v);
          } else {
            return variable_state(pol, *st, at, v);
          }
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
  if (value.size() >= tag_size + 24)
    for (std::size_t k = 0; k < 3; ++k) (void)get_number(value.data() + tag_size + 8 * k, x[k]);
  return std::visit(
      [&](const auto& pol) -> std::int64_t {
        using T = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<T, gcra> || std::is_same_v<T, token_bucket>) {
          return x[0] + 1;
        } else if constexpr (std::is_same_v<T, leaky_queue>) {
          return static_cast<std::int64_t>(x[0] + lp.wq + 2);
        } else if constexpr (std::is_same_v<T, fixed_window> || std::is_same_v<T, sliding_buckets>) {
          return pol.limit().window - x[2] + 1;  // when the latest admit's (sub-)window leaves the window
        } else if constexpr (std::is_same_v<T, sliding_counter>) {
          return 2 * pol.limit().window - x[2] + 2;
        } else if constexpr (std::is_same_v<T, sliding_log>) {
          return pol.limit().window + 1;
        } else if constexpr (std::is_same_v<T, quota>) {
          return -1;
        } else if constexpr (std::is_same_v<T, concurrency>) {
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
        } else if constexpr (holds_no_leaf_state<T>) {
          return -1;  // no leaf: never planned
        } else {
          static_assert(unhandled_algorithm<T>,
                        "a new algorithm: handle it here (docs/architecture.md, \"Adding an algorithm\")");
        }
      },
      *lp.policy);
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
  if (leaves_[i].letter != portable::of<concurrency>::letter || !after) return 0;
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
