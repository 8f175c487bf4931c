// apply_url_query: a redis:// or rediss:// URL's query into its TLS settings
// and its WAIT settings.
#include "redis/client/url_query.hpp"

#include <array>
#include <charconv>

namespace sluice::redis {

namespace {

// A decimal integer in [lo, hi], the whole of `s`.
bool whole_int(std::string_view s, std::int64_t lo, std::int64_t hi, std::int64_t& v) {
  if (s.empty() || s.size() > 9) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && p == s.data() + s.size() && v >= lo && v <= hi;
}

constexpr std::size_t first_wait = 5;  // names[5..] are for either scheme (WAIT, module), the rest TLS

}  // namespace

std::optional<error> apply_url_query(std::string_view query, url& u) {
  if (query.empty()) return error{"query", "is empty after '?'"};
  std::array<bool, 8> seen{};
  constexpr std::array<std::string_view, 8> names{"ca_file", "cert_file",     "key_file",     "server_name",
                                                  "verify",  "wait_replicas", "wait_timeout", "module"};
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
                                "\" is not understood (ca_file, cert_file, key_file, server_name, verify, "
                                "wait_replicas, wait_timeout, module)"};
    const std::string n(name);
    if (!u.tls.on && which < first_wait) return error{n, "is a TLS setting: it needs a rediss:// URL"};
    if (seen[which]) return error{n, "is given twice"};
    seen[which] = true;
    std::string value;
    if (eq == std::string_view::npos || !percent_decode(item.substr(eq + 1), value))
      return error{n, "needs a value (" + n + "=...), %-escaped"};
    if (value.empty()) return error{n, "is empty"};
    std::int64_t v = 0;
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
      case 5:
        if (!whole_int(value, 0, 1000, v))
          return error{n, "must be a number of replicas from 0 to 1000, not \"" + value + "\""};
        u.wait_replicas = static_cast<std::int32_t>(v);
        break;
      case 6: {
        const std::string_view digits =
            std::string_view(value).ends_with("ms") ? std::string_view(value).substr(0, value.size() - 2) : value;
        if (!whole_int(digits, 1, 60'000, v))
          return error{n, "must be milliseconds from 1 to 60000 (\"50ms\" or \"50\"), not \"" + value + "\""};
        u.wait_timeout_ms = v;
        break;
      }
      case 7:
        if (auto m = module_use_of(value)) {
          u.module = *m;
          break;
        }
        return error{n, "must be auto, on or off, not \"" + value + "\""};
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
  if (seen[first_wait + 1] && u.wait_replicas == 0)
    return error{"wait_timeout", "is WAIT's timeout: it needs wait_replicas=N (N >= 1)"};
  return std::nullopt;
}

}  // namespace sluice::redis
