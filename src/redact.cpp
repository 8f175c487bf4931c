// redact_url (redact.hpp): lexical, so it holds for text that is not a URL.
#include "sluice/redact.hpp"

namespace sluice {
namespace {

// Hides the value of every `password=` parameter of a query-like tail.
std::string hide_password_params(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    const bool at_param = i == 0 ? false : (text[i - 1] == '?' || text[i - 1] == '&');
    constexpr std::string_view key = "password=";
    if (at_param && text.substr(i, key.size()) == key) {
      out += key;
      out += redacted_password;
      i += key.size();
      while (i < text.size() && text[i] != '&' && text[i] != '#') ++i;
      continue;
    }
    out.push_back(text[start]);
    ++i;
  }
  return out;
}

}  // namespace

std::string redact_url(std::string_view text) {
  const auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos) return hide_password_params(text);
  const std::size_t from = scheme_end + 3;
  const auto at = text.rfind('@');
  if (at == std::string_view::npos || at < from) return hide_password_params(text);
  const std::string_view userinfo = text.substr(from, at - from);
  std::string out(text.substr(0, from));
  const auto colon = userinfo.find(':');
  out += userinfo.substr(0, colon);
  if (colon != std::string_view::npos) {
    out += ':';
    out += redacted_password;
  }
  out += hide_password_params(text.substr(at));
  return out;
}

bool url_gives_password(std::string_view text) { return redact_url(text) != text; }

}  // namespace sluice
