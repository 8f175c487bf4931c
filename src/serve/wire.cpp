// Seconds, RateLimit fields and JSON strings for the wire (wire.hpp).
#include "wire.hpp"

#include <algorithm>
#include <type_traits>
#include <variant>

namespace sluice::serve {

std::int64_t ceil_seconds(tick ns) noexcept {
  constexpr tick second = 1'000'000'000;
  if (ns <= 0) return 0;
  return ns / second + (ns % second != 0 ? 1 : 0);
}

std::optional<advertised> advertised_of(const any_policy& p) {
  return std::visit(
      [](const auto& pol) -> std::optional<advertised> {
        using P = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          return pol.parts().empty() ? std::nullopt : advertised_of(pol.parts().front());
        } else if constexpr (std::is_same_v<P, quota>) {
          return advertised{pol.units(), std::nullopt};
        } else if constexpr (std::is_same_v<P, always_allow> || std::is_same_v<P, always_deny>) {
          return std::nullopt;
        } else {
          return advertised{pol.limit().limit, pol.limit().window};
        }
      },
      p);
}

std::string policy_member(std::string_view name, const any_policy& p) {
  const auto a = advertised_of(p);
  if (!a) return {};
  std::string out;
  out += '"';
  out += name;
  out += "\";q=";
  out += std::to_string(std::min(a->quota, sf_integer_max));
  if (a->window) {
    out += ";w=";
    out += std::to_string(std::min(std::max<std::int64_t>(ceil_seconds(*a->window), 1), sf_integer_max));
  }
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
