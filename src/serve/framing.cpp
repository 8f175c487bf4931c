// HTTP/1.1 framing and Host checks (framing.hpp).
#include "framing.hpp"

namespace sluice::serve {

namespace {

bool digits(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (const char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// RFC 3986 reg-name / IPv4 characters (unreserved, sub-delims, pct-encoded).
bool name_char(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("-._~!$&'()*+,;=%").find(c) != std::string_view::npos;
}

// host [ ":" port ], host an IP-literal in brackets or a reg-name (RFC 9110
// 7.2, RFC 3986 3.2.2). Empty is allowed (RFC 9112 3.2).
bool valid_host(std::string_view h) noexcept {
  std::string_view port;
  if (!h.empty() && h.front() == '[') {
    const auto close = h.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    for (const char c : h.substr(1, close - 1))
      if (!name_char(c) && c != ':') return false;
    h.remove_prefix(close + 1);
    if (!h.empty()) {
      if (h.front() != ':') return false;
      port = h.substr(1);
      return port.empty() || digits(port);
    }
    return true;
  }
  const auto colon = h.find(':');
  if (colon != std::string_view::npos) {
    port = h.substr(colon + 1);
    h = h.substr(0, colon);
    if (!port.empty() && !digits(port)) return false;
  }
  for (const char c : h)
    if (!name_char(c)) return false;
  return true;
}

}  // namespace

std::optional<std::string_view> framing_error(std::span<const header_view> headers, unsigned version) noexcept {
  std::size_t te = 0, cl = 0, host = 0;
  std::string_view te_value, cl_value, host_value;
  for (const auto& h : headers) {
    if (iequals(h.name, "Transfer-Encoding")) {
      ++te;
      te_value = h.value;
    } else if (iequals(h.name, "Content-Length")) {
      ++cl;
      cl_value = h.value;
    } else if (iequals(h.name, "Host")) {
      ++host;
      host_value = h.value;
    }
  }
  if (te > 0) {
    if (te > 1) return "more than one Transfer-Encoding field";
    if (!iequals(trim_ows(te_value), "chunked")) return "a Transfer-Encoding other than chunked";
    if (version < 11) return "Transfer-Encoding on an HTTP/1.0 request";
    if (cl > 0) return "both Content-Length and Transfer-Encoding";
  }
  if (cl > 1) return "more than one Content-Length field";
  if (cl == 1 && !digits(trim_ows(cl_value))) return "a Content-Length that is not one decimal number";
  if (host > 1) return "more than one Host field";
  if (host == 0 && version >= 11) return "an HTTP/1.1 request without Host";
  if (host == 1 && !valid_host(trim_ows(host_value))) return "a Host that is not host[:port]";
  return std::nullopt;
}

}  // namespace sluice::serve
