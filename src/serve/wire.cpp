// Seconds, RateLimit fields and JSON strings for the wire (wire.hpp).
#include "wire.hpp"

#include <algorithm>
#include <string>
#include <type_traits>
#include <variant>

#include "sluice/core/algorithm.hpp"
#include "sluice/core/detail/arith.hpp"

namespace sluice::serve {

std::int64_t ceil_seconds(tick ns) noexcept {
  constexpr tick second = 1'000'000'000;
  if (ns <= 0) return 0;
  return ns / second + (ns % second != 0 ? 1 : 0);
}

std::optional<current_limit> current_limit_of(const any_policy& p) {
  // A composite's first part's (one limit is all Envoy's message holds).
  if (const auto* a = std::get_if<all_of>(&p))
    return a->parts().empty() ? std::nullopt : current_limit_of(a->parts().front());
  if (const auto* o = std::get_if<any_of>(&p))
    return o->parts().empty() ? std::nullopt : current_limit_of(o->parts().front());
  const limit_figures f = *limit_of(p);  // the algorithm's own (src/<name>.cpp)
  if (!f.counted) return std::nullopt;
  if (f.per) return current_limit{f.per->limit, f.per->window};
  return current_limit{f.units, std::nullopt};
}

namespace {

using detail::u128;

constexpr u128 ns_per_second = 1'000'000'000;
constexpr auto sf_max = static_cast<u128>(sf_integer_max);

std::int64_t capped(u128 v) noexcept { return static_cast<std::int64_t>(v < sf_max ? v : sf_max); }

// The item of a limiter of rate L per W ns and capacity C (semantics.md):
// with L·10⁹ / W = a / b reduced, the pair (k·a, k·b) for the smallest k
// with k·a ≥ C; past an SF Integer, w = ceil(C·W / (L·10⁹)) and
// q = floor(w·a / b), each capped. Every quantity fits 128 bits: L, W and
// C are at most 2^62, so a < 2^92, b ≤ 2^62 and k·a < C + a.
advertised rate_item(rate r, std::int64_t capacity) noexcept {
  const auto w_ns = static_cast<u128>(r.window);
  if (r.limit <= 0) return {0, capped(std::max<u128>(1, (w_ns + ns_per_second - 1) / ns_per_second))};
  const u128 l_ns = static_cast<u128>(r.limit) * ns_per_second;
  const auto c = static_cast<u128>(std::max<std::int64_t>(capacity, 1));
  const u128 g = sluice::detail::gcd(l_ns, w_ns);
  const u128 a = l_ns / g;
  const u128 b = w_ns / g;
  const u128 k = (c + a - 1) / a;
  if (k * a <= sf_max && k * b <= sf_max) return {static_cast<std::int64_t>(k * a), static_cast<std::int64_t>(k * b)};
  const u128 w = std::clamp<u128>((c * w_ns + l_ns - 1) / l_ns, 1, sf_max);
  // floor(w·a / b) = w·floor(a / b) + floor(w·(a mod b) / b), saturating.
  const u128 whole = a / b;
  if (whole != 0 && whole > sf_max / w) return {sf_integer_max, static_cast<std::int64_t>(w)};
  return {capped(w * whole + w * (a % b) / b), static_cast<std::int64_t>(w)};
}

void append_item(std::string& out, std::string_view name, const advertised& a) {
  if (!out.empty()) out += ", ";
  out += '"';
  out += name;
  out += "\";q=";
  out += std::to_string(a.quota);
  if (a.window) {
    out += ";w=";
    out += std::to_string(*a.window);
  }
  if (a.concurrent) out += ";qu=\"concurrent-requests\"";
}

void append_items(std::string& out, std::string& name, const any_policy& p) {
  const auto parts = [&](const auto& pol) {
    const std::size_t at = name.size();
    for (std::size_t i = 0; i < pol.parts().size(); ++i) {
      name.resize(at);
      name += '/';
      name += std::to_string(i + 1);
      append_items(out, name, pol.parts()[i]);
    }
    name.resize(at);
  };
  if (const auto* all = std::get_if<all_of>(&p)) {
    parts(*all);
  } else if (const auto* any = std::get_if<any_of>(&p)) {
    parts(*any);
  } else if (const auto a = advertised_of(p)) {
    append_item(out, name, *a);
  }
}

}  // namespace

std::optional<advertised> advertised_of(const any_policy& p) {
  const std::optional<limit_figures> f = limit_of(p);  // the algorithm's own (src/<name>.cpp)
  if (!f || f->unbounded) return std::nullopt;         // a composite's parts advertise
  if (!f->counted) return advertised{0, std::nullopt};
  if (f->per) return rate_item(*f->per, f->units);
  return advertised{std::min(f->units, sf_integer_max), std::nullopt, f->concurrent};
}

std::string policy_member(std::string_view name, const any_policy& p) {
  std::string out;
  std::string path(name);
  append_items(out, path, p);
  return out;
}

std::string ratelimit_member(std::string_view name, std::int64_t remaining, std::optional<tick> t_ns) {
  std::string out;
  out.reserve(name.size() + 32);
  out += '"';
  out += name;
  out += "\";r=";
  out += std::to_string(std::clamp<std::int64_t>(remaining, 0, sf_integer_max));
  if (t_ns && *t_ns != never) {
    out += ";t=";
    out += std::to_string(std::min(ceil_seconds(*t_ns), sf_integer_max));
  }
  return out;
}

namespace {

// The length of the valid UTF-8 sequence at s[i], or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) noexcept {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  std::uint32_t cp = 0;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
    cp = b & 0x1Fu;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    cp = b & 0x0Fu;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    cp = b & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (c & 0x3Fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 0xF];
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t n = utf8_length(s, i); n != 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out += '"';
}

}  // namespace sluice::serve
