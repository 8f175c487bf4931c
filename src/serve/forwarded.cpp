// The client's address behind proxies (forwarded.hpp).
#include "forwarded.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "rules.hpp"

namespace sluice::serve {
namespace {

// RFC 9110 5.6.2: a token's characters.
bool tchar(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool all_digits(std::string_view s) noexcept {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Splits `s` at `sep` outside quoted strings (a backslash escapes the next
// byte inside one), appending the pieces to `out`. False on an unterminated
// quoted string.
bool split_outside_quotes(std::string_view s, char sep, std::vector<std::string_view>& out) {
  bool quoted = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (quoted) return false;
  out.push_back(s.substr(start));
  return true;
}

// A Forwarded element's `for=` node (RFC 7239 6): an IPv4 address or a
// bracketed IPv6 one, with an optional port; `unknown` and obfuscated
// identifiers name no address. Nullopt with `why` set otherwise.
std::optional<ip_address> forwarded_node(std::string_view element, std::string& why) {
  std::vector<std::string_view> pairs;
  if (!split_outside_quotes(element, ';', pairs)) {
    why = "an unterminated quoted string";
    return std::nullopt;
  }
  std::optional<std::string> node;
  for (std::string_view p : pairs) {
    p = trim_ows(p);
    if (p.empty()) continue;
    const auto eq = p.find('=');
    if (eq == std::string_view::npos || eq == 0 ||
        !std::all_of(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(eq), tchar)) {
      why = "'" + std::string(p) + "' is no name=value pair";
      return std::nullopt;
    }
    if (!iequals(p.substr(0, eq), "for")) continue;
    if (node) {
      why = "an element with two for= parameters";
      return std::nullopt;
    }
    std::string_view v = p.substr(eq + 1);
    std::string text;
    if (!v.empty() && v.front() == '"') {
      if (v.size() < 2 || v.back() != '"') {
        why = "a bad quoted string";
        return std::nullopt;
      }
      v = v.substr(1, v.size() - 2);
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '\\' && i + 1 < v.size()) ++i;
        text += v[i];
      }
    } else {
      if (v.empty() || !std::all_of(v.begin(), v.end(), tchar)) {
        why = "for=" + std::string(v) + " must be a token or a quoted string";
        return std::nullopt;
      }
      text = v;
    }
    node = std::move(text);
  }
  if (!node) {
    why = "an element without for=";
    return std::nullopt;
  }
  std::string_view n = *node;
  if (iequals(n, "unknown") || (!n.empty() && n.front() == '_')) {
    why = "for=" + *node + " names no address";
    return std::nullopt;
  }
  std::string_view host = n;
  std::string_view port;
  if (!n.empty() && n.front() == '[') {
    const auto close = n.find(']');
    if (close == std::string_view::npos) {
      why = "for=" + *node + " is no address";
      return std::nullopt;
    }
    host = n.substr(1, close - 1);
    const std::string_view rest = n.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        why = "for=" + *node + " is no address";
        return std::nullopt;
      }
      port = rest.substr(1);
      if (port.empty()) port = "x";  // "[...]:" has no port: refused below
    }
    if (host.find(':') == std::string_view::npos) host = {};  // brackets hold IPv6 only
  } else {
    const auto colon = n.find(':');
    if (colon != std::string_view::npos) {
      host = n.substr(0, colon);
      port = n.substr(colon + 1);
      if (port.empty()) port = "x";
    }
    if (host.find(':') != std::string_view::npos) host = {};  // IPv6 must be bracketed
  }
  // A port is a number up to 65535 or an obfuscated one (`_abc`); it is dropped.
  const bool port_ok = port.empty() || (all_digits(port) && port.size() <= 5) ||
                       (port.size() > 1 && port.front() == '_' && std::all_of(port.begin() + 1, port.end(), [](char c) {
                          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                                 c == '.' || c == '_' || c == '-';
                        }));
  const auto a = port_ok ? parse_ip(host) : std::nullopt;
  if (!a || a->v6 != (!n.empty() && n.front() == '[')) {
    why = "for=" + *node + " is no address";
    return std::nullopt;
  }
  return a;
}

}  // namespace

std::optional<ip_address> parse_ip(std::string_view text) {
  char buf[INET6_ADDRSTRLEN + 1];
  if (text.empty() || text.size() >= sizeof buf) return std::nullopt;
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  ip_address a;
  a.v6 = text.find(':') != std::string_view::npos;
  if (inet_pton(a.v6 ? AF_INET6 : AF_INET, buf, a.bytes.data()) != 1) return std::nullopt;
  return a;
}

std::string ip_text(const ip_address& a) {
  char buf[INET6_ADDRSTRLEN];
  if (inet_ntop(a.v6 ? AF_INET6 : AF_INET, a.bytes.data(), buf, sizeof buf) == nullptr) return {};
  return buf;
}

forwarded_reader::forwarded_reader(const std::vector<std::string>& trusted, std::string header)
    : header_(std::move(header)) {
  for (const auto& t : trusted)
    if (auto a = parse_ip(t)) trusted_.push_back(*a);
  if (iequals(header_, "X-Forwarded-For")) kind_ = kind::x_forwarded_for;
  if (iequals(header_, "Forwarded")) kind_ = kind::forwarded;
}

bool forwarded_reader::trusted(const ip_address& a) const noexcept {
  return std::find(trusted_.begin(), trusted_.end(), a) != trusted_.end();
}

std::optional<std::string> forwarded_reader::client(std::span<const header_view> headers, std::string_view peer,
                                                    std::string& out) const {
  out.assign(peer);
  if (header_.empty()) return std::nullopt;
  const auto p = parse_ip(peer);
  if (!p || !trusted(*p)) return std::nullopt;
  // Every line of the header, in order: one list (RFC 9110 5.3).
  std::vector<std::string_view> entries;
  std::size_t lines = 0;
  for (const auto& h : headers) {
    if (!iequals(h.name, header_)) continue;
    ++lines;
    if (kind_ == kind::single) {
      entries.push_back(h.value);
    } else if (!split_outside_quotes(h.value, ',', entries)) {
      return header_ + ": an unterminated quoted string";
    }
  }
  if (kind_ == kind::single && lines > 1) return header_ + " given more than once";
  std::optional<ip_address> client;
  // From the right: the proxies' own entries first, the client's last.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const std::string_view e = trim_ows(*it);
    if (e.empty()) continue;  // RFC 9110 5.6.1
    std::optional<ip_address> a;
    if (kind_ == kind::forwarded) {
      std::string why;
      a = forwarded_node(e, why);
      if (!a) return header_ + ": " + why;
    } else {
      std::string_view text = e;
      if (kind_ == kind::x_forwarded_for && text.size() > 2 && text.front() == '[' && text.back() == ']') {
        text = text.substr(1, text.size() - 2);
        if (text.find(':') == std::string_view::npos) text = {};
      }
      a = parse_ip(text);
      if (!a) return header_ + ": '" + std::string(e) + "' is not an IP address";
    }
    client = a;
    if (!trusted(*a)) break;
  }
  if (client) out = ip_text(*client);
  return std::nullopt;
}

}  // namespace sluice::serve
