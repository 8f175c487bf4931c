// parse_url: redis:// and unix:// URLs into their parts, with errors that
// name the part at fault.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "redis/client/client.hpp"
#include "redis/client/url_query.hpp"
#include "sluice/redact.hpp"

namespace sluice::redis {
namespace {

error fail(std::string part, std::string message) { return error{std::move(part), std::move(message)}; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex_value(in[i + 1]);
    const int lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

namespace {

// A decimal integer in [lo, hi], the whole of `s`.
bool parse_int(std::string_view s, std::int64_t lo, std::int64_t hi, std::int64_t& v) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && p == s.data() + s.size() && v >= lo && v <= hi;
}

result<std::int32_t> parse_db(std::string_view s) {
  std::int64_t v = 0;
  if (!parse_int(s, 0, INT32_MAX, v))
    return fail("db", "must be a database index from 0 to 2147483647, not \"" + std::string(s) + "\"");
  return static_cast<std::int32_t>(v);
}

bool host_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

// "user[:password]" into `u`; the parts are percent-decoded. A user without
// a password is kept: the password may come from elsewhere
// (redis_store_options::password); the store refuses the URL if none does.
std::optional<error> parse_userinfo(std::string_view userinfo, url& u) {
  const auto colon = userinfo.find(':');
  if (!percent_decode(userinfo.substr(0, colon), u.user)) return fail("user", "has a malformed %-escape");
  if (colon == std::string_view::npos) return std::nullopt;
  if (!percent_decode(userinfo.substr(colon + 1), u.password)) return fail("password", "has a malformed %-escape");
  if (u.password.empty()) return fail("password", "is empty after ':' (leave out the ':' for none)");
  return std::nullopt;
}

result<url> parse_unix(std::string_view rest) {
  // rest follows "unix://": "[user[:password]@]/path[?db=N]". The userinfo
  // ends at the last "@/" (a path after a userinfo may not hold "@/").
  url u;
  if (!rest.empty() && rest.front() != '/') {
    const auto at = rest.rfind("@/");
    if (at == std::string_view::npos)
      return fail("path", "must be an absolute socket path (unix://[user:password@]/path/to/redis.sock)");
    if (auto e = parse_userinfo(rest.substr(0, at), u)) return *e;
    rest = rest.substr(at + 1);
  }
  std::string_view path = rest;
  std::string_view query;
  const bool has_query = rest.find('?') != std::string_view::npos;
  if (has_query) {
    path = rest.substr(0, rest.find('?'));
    query = rest.substr(rest.find('?') + 1);
  }
  if (path.empty() || path.front() != '/')
    return fail("path", "must be an absolute socket path (unix:///path/to/redis.sock)");
  if (path.find('\0') != std::string_view::npos) return fail("path", "must not contain a NUL byte");
  if (path.size() > 107) return fail("path", "is longer than a unix socket path may be (107 bytes)");
  if (!percent_decode(path, u.socket_path)) return fail("path", "has a malformed %-escape");
  if (has_query) {
    // Parameters "name=value" joined by '&'; db and module are understood.
    // A value is never echoed (a password may have been put there).
    bool seen_db = false, seen_module = false;
    while (true) {
      const auto amp = query.find('&');
      const std::string_view param = query.substr(0, amp);
      const auto eq = param.find('=');
      const std::string_view name = param.substr(0, eq);
      if (name == "password" || name == "user" || name == "username")
        return fail("query", "takes no " + std::string(name) +
                                 " (write unix://user:password@/path, or use store.password_file or "
                                 "SLUICE_REDIS_PASSWORD)");
      if (name == "module") {
        if (seen_module) return fail("module", "is given twice");
        seen_module = true;
        const auto m = module_use_of(eq == std::string_view::npos ? std::string_view{} : param.substr(eq + 1));
        if (!m) return fail("module", "must be auto, on or off");
        u.module = *m;
        if (amp == std::string_view::npos) break;
        query = query.substr(amp + 1);
        continue;
      }
      if (name != "db") {
        std::string shown;
        for (char c : name) shown += host_char_ok(c) ? c : '?';
        return fail("query", "unknown parameter \"" + shown + "\" (known: db, module)");
      }
      if (seen_db) return fail("query", "gives db twice");
      seen_db = true;
      auto db = parse_db(eq == std::string_view::npos ? std::string_view{} : param.substr(eq + 1));
      if (!db) return db.err();
      u.db = *db;
      if (amp == std::string_view::npos) break;
      query = query.substr(amp + 1);
    }
  }
  u.host.clear();
  u.port = 0;
  return u;
}

}  // namespace

std::string url::redacted() const {
  std::string s;
  const auto login = [&] {
    if (user.empty() && password.empty()) return std::string();
    return user + (password.empty() ? "" : ":" + std::string(redacted_password)) + "@";
  };
  if (is_unix()) {
    s = "unix://" + login() + socket_path;
    if (db != 0) s += "?db=" + std::to_string(db);
    return s;
  }
  s = (tls.on ? "rediss://" : "redis://") + login();
  s += host.find(':') != std::string::npos ? "[" + host + "]" : host;
  s += ':' + std::to_string(port);
  if (db != 0) s += '/' + std::to_string(db);
  return s;
}

result<url> parse_url(std::string_view text) {
  constexpr std::string_view redis_scheme = "redis://";
  constexpr std::string_view tls_scheme = "rediss://";
  constexpr std::string_view unix_scheme = "unix://";
  if (text.substr(0, unix_scheme.size()) == unix_scheme) return parse_unix(text.substr(unix_scheme.size()));
  const bool tls = text.substr(0, tls_scheme.size()) == tls_scheme;
  if (!tls && text.substr(0, redis_scheme.size()) != redis_scheme)
    return fail("scheme", "must be redis://, rediss:// (TLS) or unix://");
  std::string_view rest = text.substr(tls ? tls_scheme.size() : redis_scheme.size());
  url u;
  u.tls.on = tls;
  // [ userinfo "@" ] authority [ "/" db ] [ "?" query ]: the userinfo ends at
  // the last '@' (a password may hold an unescaped '@', '/', '?' or '#'; a
  // host, port, db or TLS setting never holds '@'), so nothing before it is
  // ever echoed in an error. The query (TLS settings) follows.
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    if (auto e = parse_userinfo(rest.substr(0, at), u)) return *e;
    rest = rest.substr(at + 1);
  }
  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    if (auto e = apply_url_query(rest.substr(q + 1), u)) return *e;
    rest = rest.substr(0, q);
  }
  std::string_view hostport = rest;
  std::string_view db_part;
  bool has_db = false;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    db_part = rest.substr(slash + 1);
    has_db = true;
  }
  if (rest.find('#') != std::string_view::npos)
    return fail("query", "a redis:// URL takes no fragment (redis://[user:password@]host[:port][/db][?query])");

  // host [ ":" port ], IPv6 in brackets
  std::string_view host;
  std::string_view port_part;
  bool has_port = false;
  if (!hostport.empty() && hostport.front() == '[') {
    const auto close = hostport.find(']');
    if (close == std::string_view::npos) return fail("host", "has '[' without a closing ']'");
    host = hostport.substr(1, close - 1);
    const std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return fail("host", "has junk after ']': \"" + std::string(after) + "\"");
      port_part = after.substr(1);
      has_port = true;
    }
    if (host.empty()) return fail("host", "is empty");
    for (char c : host)
      if (hex_value(c) < 0 && c != ':' && c != '.') return fail("host", "is not an IPv6 address in brackets");
  } else {
    const auto colon = hostport.find(':');
    host = hostport.substr(0, colon);
    if (colon != std::string_view::npos) {
      port_part = hostport.substr(colon + 1);
      has_port = true;
    }
    if (host.empty()) return fail("host", "is empty (redis://host[:port])");
    for (char c : host)
      if (!host_char_ok(c))
        return fail("host", "has a character a host name may not hold: \"" + std::string(host) + "\"");
  }
  u.host = std::string(host);
  if (has_port) {
    std::int64_t p = 0;
    if (!parse_int(port_part, 1, 65535, p))
      return fail("port", "must be a number from 1 to 65535, not \"" + std::string(port_part) + "\"");
    u.port = static_cast<std::uint16_t>(p);
  }
  if (has_db && !db_part.empty()) {
    auto db = parse_db(db_part);
    if (!db) return db.err();
    u.db = *db;
  }
  return u;
}

}  // namespace sluice::redis
