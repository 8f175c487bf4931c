// parse_sentinel_url: redis+sentinel:// and rediss+sentinel:// URLs into the
// sentinels and the master's login, each part read by parse_url.
#include <string>
#include <string_view>

#include "redis/client/sentinel.hpp"

namespace sluice::redis {
namespace {

constexpr std::string_view plain_scheme = "redis+sentinel://";
constexpr std::string_view tls_scheme = "rediss+sentinel://";
constexpr std::size_t max_sentinels = 64;

}  // namespace

bool is_sentinel_url(std::string_view text) noexcept {
  return text.starts_with(plain_scheme) || text.starts_with(tls_scheme);
}

result<sentinel_url> parse_sentinel_url(std::string_view text) {
  if (!is_sentinel_url(text))
    return error{"scheme", "must be redis+sentinel:// or rediss+sentinel:// for Redis behind Sentinel"};
  const bool tls = text.starts_with(tls_scheme);
  const std::string base = tls ? "rediss://" : "redis://";
  std::string_view rest = text.substr(tls ? tls_scheme.size() : plain_scheme.size());
  std::string query;
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    query = "?" + std::string(rest.substr(q + 1));
    rest = rest.substr(0, q);
  }
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos)
    return error{"master", "is missing: redis+sentinel://host:port[,host:port...]/MASTER[/db]"};
  const std::string_view authority = rest.substr(0, slash);
  std::string_view path = rest.substr(slash + 1);
  std::string_view db;
  if (const auto s2 = path.find('/'); s2 != std::string_view::npos) {
    db = path.substr(s2 + 1);
    path = path.substr(0, s2);
  }
  if (path.empty()) return error{"master", "is empty: redis+sentinel://host:port/MASTER[/db]"};
  for (char c : path)
    if (static_cast<unsigned char>(c) <= ' ' || c == '%')
      return error{"master", "has a character a master's name may not hold: \"" + std::string(path) + "\""};
  std::string_view userinfo;
  std::string_view hosts = authority;
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    userinfo = authority.substr(0, at + 1);
    hosts = authority.substr(at + 1);
  }
  sentinel_url out;
  out.master = std::string(path);
  if (hosts.empty()) return error{"sentinel", "none given (redis+sentinel://host:port[,host:port...]/MASTER)"};
  std::size_t n = 0;
  while (true) {
    const auto comma = hosts.find(',');
    const std::string_view one = hosts.substr(0, comma);
    ++n;
    if (one.empty()) return error{"sentinel", "sentinel " + std::to_string(n) + " is empty"};
    if (n > max_sentinels) return error{"sentinel", "more than " + std::to_string(max_sentinels) + " sentinels"};
    // The sentinels are asked without AUTH; the TLS settings apply to them too.
    auto u = parse_url(base + std::string(one) + query);
    if (!u) {
      error e = u.err();
      e.message = "sentinel " + std::to_string(n) + " (\"" + std::string(one) + "\"): " + e.message;
      return e;
    }
    if (n == 1) {
      auto login = parse_url(base + std::string(userinfo) + std::string(one) +
                             (db.empty() ? std::string() : "/" + std::string(db)) + query);
      if (!login) return login.err();
      out.login = std::move(login).value();
    }
    url sentinel = std::move(u).value();
    sentinel.module = module_use::off;  // a sentinel decides nothing: its connections are not probed
    out.sentinels.push_back(std::move(sentinel));
    if (comma == std::string_view::npos) break;
    hosts = hosts.substr(comma + 1);
  }
  return out;
}

}  // namespace sluice::redis
