// apply_url_query: a redis:// or rediss:// URL's query into its TLS settings.
#include "redis/url_query.hpp"

#include <array>

namespace sluice::redis {

std::optional<error> apply_url_query(std::string_view query, url& u) {
  if (query.empty()) return error{"query", "is empty after '?'"};
  std::array<bool, 5> seen{};
  constexpr std::array<std::string_view, 5> names{"ca_file", "cert_file", "key_file", "server_name", "verify"};
  while (true) {
    const auto amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    const auto eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    std::size_t which = names.size();
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) which = i;
    if (which == names.size())
      return error{"query", "\"" + std::string(name) +
                                "\" is not understood (ca_file, cert_file, key_file, server_name, verify)"};
    const std::string n(name);
    if (!u.tls.on) return error{n, "is a TLS setting: it needs a rediss:// URL"};
    if (seen[which]) return error{n, "is given twice"};
    seen[which] = true;
    std::string value;
    if (eq == std::string_view::npos || !percent_decode(item.substr(eq + 1), value))
      return error{n, "needs a value (" + n + "=...), %-escaped"};
    if (value.empty()) return error{n, "is empty"};
    switch (which) {
      case 0:
        u.tls.ca_file = std::move(value);
        break;
      case 1:
        u.tls.cert_file = std::move(value);
        break;
      case 2:
        u.tls.key_file = std::move(value);
        break;
      case 3:
        u.tls.server_name = std::move(value);
        break;
      default:
        if (value != "yes" && value != "no") return error{n, "must be yes or no, not \"" + value + "\""};
        u.tls.verify = value == "yes";
        break;
    }
    if (amp == std::string_view::npos) break;
    query = query.substr(amp + 1);
  }
  if (u.tls.cert_file.empty() != u.tls.key_file.empty())
    return error{u.tls.cert_file.empty() ? "cert_file" : "key_file",
                 "a client certificate needs both cert_file and key_file"};
  return std::nullopt;
}

}  // namespace sluice::redis
