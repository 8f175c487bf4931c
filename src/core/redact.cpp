// redact_url (redact.hpp): lexical, so it holds for text that is not a URL.
#include "sluice/core/redact.hpp"

#include <algorithm>
#include <cctype>

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

// Where a mistyped URL's userinfo would start: after a leading scheme-like
// word and the ':' and '/' that follow it ("redis:/u:PW@h", "redis//u:PW@h",
// "rediss:u:PW@h"), or at the start of text without one.
std::size_t loose_userinfo_start(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[i])) != 0 || text[i] == '+' || text[i] == '-' || text[i] == '.'))
    ++i;
  const std::size_t word_end = i;
  while (i < text.size() && (text[i] == ':' || text[i] == '/')) ++i;
  return i > word_end ? i : 0;
}

}  // namespace

std::string redact_url(std::string_view text) {
  const auto at = text.rfind('@');
  const auto scheme_end = text.find("://");
  if (scheme_end != std::string_view::npos && at != std::string_view::npos && at > scheme_end + 3 &&
      text.substr(0, scheme_end).find_first_of(":/@") == std::string_view::npos) {
    // A well-formed "scheme://userinfo@...": the user name stays.
    const std::size_t from = scheme_end + 3;
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
  if (at == std::string_view::npos) return hide_password_params(text);
  // Anything else with an '@' may be a mistyped URL whose userinfo holds a
  // password: everything between the scheme-like start and the last '@' is
  // hidden, the user name too.
  const std::size_t from = std::min(loose_userinfo_start(text), at);
  std::string out(text.substr(0, from));
  out += redacted_password;
  out += hide_password_params(text.substr(at));
  return out;
}

bool url_gives_password(std::string_view text) { return redact_url(text) != text; }

}  // namespace sluice
