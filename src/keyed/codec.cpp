// The snapshot's byte encodings: policies, states with times relative to a
// moment, and CRC-32C. Little-endian, fixed width; see
// docs/snapshot-format.md.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "codec.hpp"
#include "sluice/portable.hpp"
#include "sluice/report.hpp"
#include "sluice/snapshot.hpp"

namespace sluice {

namespace {

using detail::i128;
constexpr tick t_min = std::numeric_limits<tick>::min();
constexpr tick t_max = std::numeric_limits<tick>::max();

tick clamp_tick(i128 v) noexcept {
  if (v < t_min) return t_min;
  if (v > t_max) return t_max;
  return static_cast<tick>(v);
}

// ---- policies ----

// The policy's tag on disk: an algorithm's is in its description
// (portable.hpp), the composites' are these (they came before concurrency's
// 12, which was added after them; so a file written before it reads the
// same).
constexpr std::uint8_t all_of_tag = 10;
constexpr std::uint8_t any_of_tag = 11;

template <typename P>
constexpr std::uint8_t tag_of_alternative() noexcept {
  if constexpr (std::is_same_v<P, all_of>) {
    return all_of_tag;
  } else if constexpr (std::is_same_v<P, any_of>) {
    return any_of_tag;
  } else {
    return portable::of<P>::tag;
  }
}

/// Every alternative's tag, by its index in any_policy.
template <std::size_t... I>
constexpr std::array<std::uint8_t, sizeof...(I)> tags_of(std::index_sequence<I...>) noexcept {
  return {tag_of_alternative<std::variant_alternative_t<I, any_policy>>()...};
}
constexpr auto tags = tags_of(std::make_index_sequence<std::variant_size_v<any_policy>>{});

constexpr bool tags_distinct() noexcept {
  for (std::size_t i = 0; i < tags.size(); ++i)
    for (std::size_t j = i + 1; j < tags.size(); ++j)
      if (tags[i] == tags[j]) return false;
  return true;
}
static_assert(tags_distinct(), "two algorithms' descriptions declare the same tag on disk (portable::of<P>::tag)");

std::uint8_t tag_of(std::size_t index) noexcept { return tags[index]; }
/// The index in any_policy of the tag's alternative; none: not a tag.
std::optional<std::size_t> index_of_tag(std::uint8_t tag) noexcept {
  for (std::size_t i = 0; i < tags.size(); ++i)
    if (tags[i] == tag) return i;
  return std::nullopt;
}

void put_policy(codec::writer& w, const any_policy& p) {
  w.u8(tag_of(p.index()));
  std::visit(
      [&](const auto& pol) {
        using P = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          w.u32(static_cast<std::uint32_t>(pol.parts().size()));
          for (const auto& part : pol.parts()) put_policy(w, part);
        } else {
          for (const auto& param : portable::of<P>::params) w.i64(param.get(pol));
        }
      },
      p);
}

template <typename T>
result<any_policy> widen(result<T> r) {
  if (!r) return r.err();
  return any_policy{std::move(r).value()};
}

/// The policy of alternative I from its parameters, in the description's
/// order (portable.hpp).
template <std::size_t I>
result<any_policy> get_params(codec::reader& r) {
  using P = std::variant_alternative_t<I, any_policy>;
  std::array<std::int64_t, portable::of<P>::params.size()> v{};
  for (auto& x : v) x = r.i64();
  if (!r.ok()) return error{"policy", "ends early"};
  return widen(portable::of<P>::make(v));
}

// The composites come last: every alternative before them is an algorithm
// with a description.
static_assert(static_cast<std::size_t>(algorithm::all_of) + 2 == std::variant_size_v<any_policy> &&
              static_cast<std::size_t>(algorithm::any_of) + 1 == std::variant_size_v<any_policy>);

/// The policy of alternative `index` (an algorithm, not a composite).
template <std::size_t... I>
result<any_policy> get_params_of(std::size_t index, codec::reader& r, std::index_sequence<I...>) {
  using get = result<any_policy> (*)(codec::reader&);
  static constexpr get table[] = {&get_params<I>...};
  return table[index](r);
}

result<any_policy> get_policy(codec::reader& r, int depth) {
  if (depth > 64) return error{"policy", "nested too deeply"};
  const std::uint8_t tag = r.u8();
  if (!r.ok()) return error{"policy", "ends early"};
  // Bytes from a file: a tag of no algorithm is checked here.
  const auto index = index_of_tag(tag);
  if (!index) return error{"policy", "unknown algorithm " + std::to_string(tag)};
  const auto a = static_cast<algorithm>(*index);
  if (a == algorithm::all_of || a == algorithm::any_of) {
    const std::uint32_t n = r.u32();
    if (!r.ok() || n == 0 || n > r.left()) return error{"policy", "bad number of parts"};
    std::vector<any_policy> parts;
    parts.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      auto part = get_policy(r, depth + 1);
      if (!part) return part.err();
      parts.push_back(std::move(part).value());
    }
    return a == algorithm::all_of ? widen(all_of::make(std::move(parts))) : widen(any_of::make(std::move(parts)));
  }
  return get_params_of(static_cast<std::size_t>(a), r,
                       std::make_index_sequence<static_cast<std::size_t>(algorithm::all_of)>{});
}

// ---- states ----
// Each state: one kind byte (0 = fresh, nothing follows; 1 = the fields).

struct state_encoder {
  codec::writer& w;
  i128 m;  // the moment

  void rel(i128 t) { w.i128v(t - m); }

  /// A state of fixed shape: a loop over its description (portable.hpp).
  template <typename P>
  requires portable::has_layout<P>
  void operator()(const P& p, const typename P::state& s) {
    using D = portable::of<P>;
    if (D::empty(s)) return w.u8(0);
    w.u8(1);
    const typename D::fields f = D::to(p, s, portable::encoding::snapshot);
    for (const auto& field : D::layout) {
      const i128 v = f.*field.member;
      switch (field.how) {
        case portable::kind::instant:
        case portable::kind::windowed:
          rel(v);
          break;
        case portable::kind::count:
          w.i64(static_cast<std::int64_t>(v));
          break;
        case portable::kind::debt:
          w.i128v(v);
          break;
        case portable::kind::window:
          rel(portable::window_start(p, v + 1) - 1);  // the window's last instant
          break;
      }
    }
  }
  /// A state of variable size: its hook.
  template <typename P>
  requires(!portable::has_layout<P>) void operator()(const P& p, const typename P::state& s) { variable_state(p, s); }

  void variable_state(const sliding_log&, const sliding_log::state& s) {
    if (s.empty()) return w.u8(0);
    w.u8(1);
    w.u32(static_cast<std::uint32_t>(s.size()));
    for (std::size_t i = 0; i < s.size(); ++i) {
      rel(s.at(i).at);
      w.i64(s.at(i).units);
    }
  }
  void variable_state(const sliding_buckets& p, const sliding_buckets::state& s) {
    if (s.total() == 0) return w.u8(0);
    const std::vector<std::int64_t>& counts = s.counts();
    const std::int64_t newest = s.newest();
    const std::int64_t n = p.buckets();
    const i128 width = p.limit().window / n;
    w.u8(1);
    rel((static_cast<i128>(newest) + 1) * width - 1);  // the newest sub-window's last instant
    w.u32(static_cast<std::uint32_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {  // sub-windows newest − N + 1 … newest, oldest first
      const i128 sub = static_cast<i128>(newest) - n + 1 + k;
      w.i64(counts[static_cast<std::size_t>(detail::floor_mod(sub, n))]);
    }
  }
  void variable_state(const concurrency&, const concurrency::state& s) {
    if (s == concurrency::state{}) return w.u8(0);
    w.u8(1);
    rel(s.latest);
    w.u32(static_cast<std::uint32_t>(s.leases.size()));
    for (const auto& l : s.leases) {
      rel(l.expiry);
      w.u64(l.nonce);
      w.i64(l.units);
    }
  }
  void operator()(const always_allow&, const always_allow::state&) { w.u8(0); }
  void operator()(const always_deny&, const always_deny::state&) { w.u8(0); }
  template <typename Composite, typename State>
  void parts(const Composite& p, const State& s) {
    w.u8(1);
    w.u32(static_cast<std::uint32_t>(p.parts().size()));
    for (std::size_t i = 0; i < p.parts().size(); ++i) any(p.parts()[i], s.parts[i]);
  }
  void operator()(const all_of& p, const all_of_state& s) { parts(p, s); }
  void operator()(const any_of& p, const any_of_state& s) { parts(p, s); }

  void any(const any_policy& p, const any_state& s) {
    std::visit(
        [&](const auto& pol) {
          using P = std::decay_t<decltype(pol)>;
          (*this)(pol, *std::get_if<typename P::state>(&s));
        },
        p);
  }
};

error corrupt(const std::string& what) { return error{"state", what}; }

struct state_decoder {
  codec::reader& r;
  i128 m;

  tick time() { return clamp_tick(m + r.i128v()); }

  /// A state of fixed shape: a loop over its description (portable.hpp),
  /// each field checked against the range it may hold.
  template <typename P>
  requires portable::has_layout<P> result<any_state>
  operator()(const P& p) {
    using D = portable::of<P>;
    typename D::fields f{};
    for (const auto& field : D::layout) {
      i128& v = f.*field.member;
      switch (field.how) {
        case portable::kind::instant:
        case portable::kind::windowed:
          v = time();
          break;
        case portable::kind::count:
          v = r.i64();
          break;
        case portable::kind::debt:
          v = r.i128v();
          break;
        case portable::kind::window:
          v = detail::floor_div(static_cast<i128>(time()) - portable::window_start(p, 0), portable::window_length(p));
          break;
      }
    }
    if (!r.ok()) return corrupt("ends early");
    for (const auto& field : D::layout) {
      if (field.holds == nullptr) continue;
      const portable::range in = field.holds(p);
      const i128 v = f.*field.member;
      if (v < in.lo || v > in.hi) return corrupt(std::string(field.name) + " out of range");
    }
    return any_state{D::from(p, f, portable::encoding::snapshot)};
  }
  /// A state of variable size: its hook.
  template <typename P>
  requires(!portable::has_layout<P>) result<any_state>
  operator()(const P& p) { return variable_state(p); }
  result<any_state> variable_state(const sliding_log& p) {
    const std::uint32_t n = r.u32();
    if (!r.ok() || n == 0 || n > r.left() / 24) return corrupt("bad sliding-log length");
    sliding_log::state s;
    i128 first = 0;
    i128 prev = 0;
    i128 rest = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      const i128 at_rel = r.i128v();
      const std::int64_t units = r.i64();
      if (!r.ok()) return corrupt("ends early");
      if (units < 1 || (i > 0 && at_rel <= prev)) return corrupt("sliding-log entries out of order");
      if (i == 0) first = at_rel;
      prev = at_rel;
      if (at_rel - first >= p.limit().window) return corrupt("sliding-log entries span more than a window");
      // Each entry at most L units and the entries after the first under L
      // (what admits and reports leave: semantics.md, "Reports"); charged
      // as a report, which then keeps every entry as it is.
      if (units > p.limit().limit || (i > 0 && (rest += units) > p.limit().limit - 1))
        return corrupt("sliding-log units over the limit");
      p.charge(s, clamp_tick(m + at_rel), units);
    }
    return any_state{std::move(s)};
  }
  result<any_state> variable_state(const sliding_buckets& p) {
    const tick end = time();
    const std::uint32_t n = r.u32();
    if (!r.ok() || n != p.buckets()) return corrupt("sliding-buckets count of sub-windows differs");
    const i128 width = p.limit().window / p.buckets();
    const i128 newest = detail::floor_div(end, width);
    std::vector<std::int64_t> counts(n);
    i128 rest = -1;  // the units after the oldest non-empty sub-window
    for (auto& c : counts) {
      c = r.i64();
      if (c < 0 || c > p.limit().limit) return corrupt("sliding-buckets count out of range");
      if (rest >= 0) {
        rest += c;
      } else if (c > 0) {
        rest = 0;
      }
    }
    if (!r.ok()) return corrupt("ends early");
    // The sub-windows after the oldest non-empty one under L (what admits
    // and reports leave: semantics.md, "Reports"); charged as reports,
    // which then keep every count as it is.
    if (rest < 0 || rest > p.limit().limit - 1 || counts.back() < 1)
      return corrupt("sliding-buckets counts out of range");
    sliding_buckets::state s;
    for (std::uint32_t k = 0; k < n; ++k) {
      if (counts[k] == 0) continue;
      const i128 sub = newest - n + 1 + k;
      p.charge(s, clamp_tick(sub * width), counts[k]);
    }
    return any_state{std::move(s)};
  }
  result<any_state> variable_state(const concurrency&) {
    concurrency::state s;
    s.latest = time();
    const std::uint32_t n = r.u32();
    if (!r.ok()) return corrupt("ends early");
    if (n > r.left() / 24) return corrupt("concurrency lease count out of range");
    s.leases.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      concurrency::lease l;
      l.expiry = time();
      l.nonce = r.u64();
      l.units = r.i64();
      if (!r.ok()) return corrupt("ends early");
      // Every lease kept is held after the latest admit, by expiry, of 1 to 2^62 units.
      if (l.units < 1 || l.units > max_quantity - s.units) return corrupt("concurrency lease units out of range");
      if (l.expiry < s.latest || (!s.leases.empty() && l.expiry < s.leases.back().expiry))
        return corrupt("concurrency leases out of order");
      s.units += l.units;
      s.leases.push_back(l);
    }
    return any_state{std::move(s)};
  }
  result<any_state> operator()(const always_allow&) { return corrupt("always-allow has no state"); }
  result<any_state> operator()(const always_deny&) { return corrupt("always-deny has no state"); }
  template <typename Composite>
  result<any_state> parts(const Composite& p, int depth) {
    const std::uint32_t n = r.u32();
    if (!r.ok() || n != p.parts().size()) return corrupt("composite count of parts differs");
    typename Composite::state s;
    s.parts.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      auto part = any(p.parts()[i], depth + 1);
      if (!part) return part.err();
      s.parts.push_back(std::move(part).value());
    }
    return any_state{std::move(s)};
  }

  result<any_state> any(const any_policy& p, int depth) {
    if (depth > 64) return corrupt("nested too deeply");
    const std::uint8_t kind = r.u8();
    if (!r.ok()) return corrupt("ends early");
    if (kind == 0) {
      if (std::holds_alternative<all_of>(p) || std::holds_alternative<any_of>(p))
        return corrupt("a composite without parts");
      return fresh_state(p);
    }
    if (kind != 1) return corrupt("unknown state kind " + std::to_string(kind));
    return std::visit(
        [&](const auto& pol) -> result<any_state> {
          using P = std::decay_t<decltype(pol)>;
          if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
            return parts(pol, depth);
          } else {
            return (*this)(pol);
          }
        },
        p);
  }
};

constexpr std::array<std::uint32_t, 256> crc_table = [] {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1U) != 0 ? (c >> 1) ^ 0x82F63B78U : c >> 1;
    t[i] = c;
  }
  return t;
}();

}  // namespace

std::string encode_policy(const any_policy& p) {
  std::string out;
  codec::writer w(out);
  put_policy(w, p);
  return out;
}

result<any_policy> decode_policy(std::string_view bytes) {
  codec::reader r(bytes);
  auto p = get_policy(r, 0);
  if (p && r.left() != 0) return error{"policy", "has trailing bytes"};
  return p;
}

std::string describe_policy(const any_policy& p) {
  return std::visit(
      [](const auto& pol) -> std::string {
        using P = std::decay_t<decltype(pol)>;
        std::string out(name_of(algorithm_of(any_policy{pol})));
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          out += "(";
          for (std::size_t i = 0; i < pol.parts().size(); ++i) out += (i ? ", " : "") + describe_policy(pol.parts()[i]);
          return out + ")";
        } else {
          const auto& params = portable::of<P>::params;
          for (std::size_t i = 0; i < params.size(); ++i)
            out += (i ? ", " : "(") + std::string(params[i].name) + "=" + std::to_string(params[i].get(pol));
          return params.empty() ? out : out + ")";
        }
      },
      p);
}

namespace codec {
void encode_state_to(writer& w, const any_policy& p, const any_state& s, tick moment) {
  state_encoder{w, moment}.any(p, s);
}
result<any_state> decode_state_from(reader& r, const any_policy& p, tick moment) {
  return state_decoder{r, moment}.any(p, 0);
}
}  // namespace codec

std::string encode_state(const any_policy& p, const any_state& s, tick moment) {
  std::string out;
  codec::writer w(out);
  codec::encode_state_to(w, p, s, moment);
  return out;
}

result<any_state> decode_state(const any_policy& p, std::string_view bytes, tick moment) {
  codec::reader r(bytes);
  auto s = codec::decode_state_from(r, p, moment);
  if (s && r.left() != 0) return corrupt("has trailing bytes");
  return s;
}

std::uint32_t crc32c(const void* data, std::size_t n, std::uint32_t crc) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i) crc = crc_table[(crc ^ p[i]) & 0xFFU] ^ (crc >> 8);
  return ~crc;
}

}  // namespace sluice
