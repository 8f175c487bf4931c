// Reading the service's TOML configuration (config.hpp) with toml++, every
// error placed at FILE:LINE:COLUMN.
#include "config.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>

#include "sluice/policy_expr.hpp"
#include "sluice/rate.hpp"

namespace sluice::serve {

/// Reads `[grpc]` and `[[envoy]]` of `doc` into `c` (envoy_rules.cpp); the
/// policies must be read already.
std::optional<error> read_envoy_sections(const std::string& file, const toml::table& doc, config& c);

namespace {

// An error at a place in the file.
struct located {
  toml::source_position at;
  std::string message;
};

error at_place(const std::string& file, toml::source_position p, const std::string& message) {
  return error{file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column), message};
}

bool parse_int(std::string_view s, std::int64_t& out) {
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && ptr == s.data() + s.size();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// A header name is an RFC 9110 token.
bool valid_token(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) != 0 || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

// Reads one table's values, each with its position, and refuses keys it does
// not know (a typo must not silently do nothing).
class reader {
 public:
  reader(const std::string& file, const toml::table& t, std::string_view where) : file_(file), t_(t), where_(where) {}

  // Every key of the table must be one of `known`.
  [[nodiscard]] std::optional<error> only(std::initializer_list<std::string_view> known) const {
    for (auto&& [k, v] : t_) {
      if (std::find(known.begin(), known.end(), k.str()) == known.end()) {
        std::string list;
        for (auto n : known) list += (list.empty() ? "" : ", ") + std::string(n);
        return at_place(
            file_, k.source().begin,
            "unknown key '" + std::string(k.str()) + "' in " + std::string(where_) + " (known: " + list + ")");
      }
    }
    return std::nullopt;
  }

  [[nodiscard]] const toml::node* get(std::string_view key) const { return t_.get(key); }

  [[nodiscard]] error wrong(const toml::node& n, std::string_view key, std::string_view what) const {
    return at_place(file_, n.source().begin, std::string(where_) + "." + std::string(key) + ": " + std::string(what));
  }

  // A string value, if present.
  [[nodiscard]] std::optional<error> str(std::string_view key, std::string& out) const {
    const toml::node* n = get(key);
    if (n == nullptr) return std::nullopt;
    const auto* s = n->as_string();
    if (s == nullptr) return wrong(*n, key, "must be a string");
    out = s->get();
    return std::nullopt;
  }

  [[nodiscard]] std::optional<error> boolean(std::string_view key, bool& out) const {
    const toml::node* n = get(key);
    if (n == nullptr) return std::nullopt;
    const auto* b = n->as_boolean();
    if (b == nullptr) return wrong(*n, key, "must be true or false");
    out = b->get();
    return std::nullopt;
  }

  template <typename Int>
  [[nodiscard]] std::optional<error> integer(std::string_view key, Int& out, std::int64_t lo, std::int64_t hi) const {
    const toml::node* n = get(key);
    if (n == nullptr) return std::nullopt;
    const auto* i = n->as_integer();
    if (i == nullptr) return wrong(*n, key, "must be a whole number");
    const std::int64_t v = i->get();
    if (v < lo || v > hi)
      return wrong(
          *n, key,
          "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + " (got " + std::to_string(v) + ")");
    out = static_cast<Int>(v);
    return std::nullopt;
  }

  // A duration: a string as parse_duration reads it ("10s", "250ms").
  [[nodiscard]] std::optional<error> duration(std::string_view key, tick& out, bool allow_zero = false) const {
    const toml::node* n = get(key);
    if (n == nullptr) return std::nullopt;
    const auto* s = n->as_string();
    if (s == nullptr) return wrong(*n, key, "must be a duration string such as \"10s\" or \"250ms\"");
    if (allow_zero && (s->get() == "0" || s->get() == "0s")) {
      out = 0;
      return std::nullopt;
    }
    auto d = parse_duration(s->get(), key);
    if (!d) return wrong(*n, key, d.err().message);
    out = *d;
    return std::nullopt;
  }

  // A string or an array of strings.
  [[nodiscard]] std::optional<error> strings(std::string_view key, std::vector<std::string>& out) const {
    const toml::node* n = get(key);
    if (n == nullptr) return std::nullopt;
    if (const auto* s = n->as_string()) {
      out.push_back(s->get());
      return std::nullopt;
    }
    const auto* a = n->as_array();
    if (a == nullptr) return wrong(*n, key, "must be a string or an array of strings");
    for (const toml::node& e : *a) {
      const auto* s = e.as_string();
      if (s == nullptr) return wrong(e, key, "every element must be a string");
      out.push_back(s->get());
    }
    return std::nullopt;
  }

  const std::string& file_;
  const toml::table& t_;
  std::string_view where_;
};

#define SLUICE_TRY(expr)                            \
  do {                                              \
    if (auto sluice_e_ = (expr)) return *sluice_e_; \
  } while (false)

std::optional<error> read_listen(const reader& r, std::string_view key, std::vector<listen_address>& out) {
  std::vector<std::string> texts;
  SLUICE_TRY(r.strings(key, texts));
  if (r.get(key) == nullptr) return std::nullopt;
  out.clear();
  for (const auto& t : texts) {
    auto a = parse_listen(t);
    if (!a) return r.wrong(*r.get(key), key, a.err().message);
    out.push_back(*a);
  }
  if (out.empty()) return r.wrong(*r.get(key), key, "must name at least one address");
  return std::nullopt;
}

std::optional<error> read_server(const std::string& file, const toml::table& t, config& c) {
  const reader r(file, t, "server");
  SLUICE_TRY(r.only({"listen", "admin", "threads", "token", "token_file", "client_time", "trusted_proxies",
                     "forwarded_header", "max_header_bytes", "max_body_bytes", "max_key_bytes", "max_connections",
                     "idle_timeout", "request_timeout", "drain_timeout"}));
  SLUICE_TRY(read_listen(r, "listen", c.listen));
  if (const toml::node* n = r.get("admin")) {
    std::string text;
    SLUICE_TRY(r.str("admin", text));
    auto a = parse_listen(text);
    if (!a) return r.wrong(*n, "admin", a.err().message);
    c.admin = *a;
  }
  SLUICE_TRY(r.integer("threads", c.threads, 0, 1024));
  SLUICE_TRY(r.str("token", c.token));
  std::string token_file;
  SLUICE_TRY(r.str("token_file", token_file));
  if (!token_file.empty()) {
    if (!c.token.empty()) return r.wrong(*r.get("token_file"), "token_file", "give token or token_file, not both");
    std::ifstream in(token_file, std::ios::binary);
    if (!in) return r.wrong(*r.get("token_file"), "token_file", "cannot read '" + token_file + "'");
    std::ostringstream s;
    s << in.rdbuf();
    c.token = s.str();
    while (!c.token.empty() && (c.token.back() == '\n' || c.token.back() == '\r')) c.token.pop_back();
    if (c.token.empty()) return r.wrong(*r.get("token_file"), "token_file", "'" + token_file + "' is empty");
  }
  if (const toml::node* n = r.get("token"); n != nullptr && c.token.empty())
    return r.wrong(*n, "token", "must not be empty (leave it out for no token)");
  SLUICE_TRY(r.boolean("client_time", c.client_time));
  SLUICE_TRY(r.strings("trusted_proxies", c.trusted_proxies));
  for (const auto& p : c.trusted_proxies) {
    unsigned char buf[16];
    if (inet_pton(AF_INET, p.c_str(), buf) != 1 && inet_pton(AF_INET6, p.c_str(), buf) != 1)
      return r.wrong(*r.get("trusted_proxies"), "trusted_proxies", "'" + p + "' is not an IP address");
  }
  SLUICE_TRY(r.str("forwarded_header", c.forwarded_header));
  if (const toml::node* n = r.get("forwarded_header"); n != nullptr && !valid_token(c.forwarded_header))
    return r.wrong(*n, "forwarded_header", "must be a header name");
  SLUICE_TRY(r.integer("max_header_bytes", c.lim.header_bytes, 256, 1 << 20));
  SLUICE_TRY(r.integer("max_body_bytes", c.lim.body_bytes, 0, 64 << 20));
  SLUICE_TRY(r.integer("max_key_bytes", c.lim.key_bytes, 1, 64 * 1024));
  SLUICE_TRY(r.integer("max_connections", c.lim.max_connections, 1, 1'000'000));
  SLUICE_TRY(r.duration("idle_timeout", c.lim.idle_timeout));
  SLUICE_TRY(r.duration("request_timeout", c.lim.request_timeout));
  SLUICE_TRY(r.duration("drain_timeout", c.lim.drain_timeout));
  return std::nullopt;
}

std::optional<error> read_store(const std::string& file, const toml::table& t, store_config& s) {
  const reader r(file, t, "store");
  SLUICE_TRY(
      r.only({"url", "snapshot", "snapshot_interval", "connect_timeout", "command_timeout", "pool_size", "on_failure",
              "fail_closed_retry_after", "deny_cache", "key_prefix", "max_keys", "purge_interval"}));
  SLUICE_TRY(r.str("url", s.url));
  const bool remote = s.url.rfind("redis://", 0) == 0 || s.url.rfind("rediss://", 0) == 0 ||
                      s.url.rfind("unix://", 0) == 0 || s.url.rfind("redis+cluster://", 0) == 0;
  if (!s.is_memory() && !remote)
    return r.wrong(*r.get("url"), "url",
                   "must be \"memory\", a redis://host:port[/db] or unix:///path URL, or "
                   "redis+cluster://host:port[,host:port...] (got '" +
                       s.url + "')");
  SLUICE_TRY(r.str("snapshot", s.snapshot));
  SLUICE_TRY(r.duration("snapshot_interval", s.snapshot_interval, true));
  SLUICE_TRY(r.integer("max_keys", s.max_keys, 0, std::numeric_limits<std::int64_t>::max()));
  s.max_keys_given = r.get("max_keys") != nullptr;
  SLUICE_TRY(r.duration("purge_interval", s.purge_interval, true));
  if (remote && r.get("max_keys") != nullptr)
    return r.wrong(*r.get("max_keys"), "max_keys", "only the memory store is bounded here (Redis: maxmemory)");
  if (remote && r.get("purge_interval") != nullptr)
    return r.wrong(*r.get("purge_interval"), "purge_interval", "only the memory store purges (Redis: TTLs)");
  if (remote && r.get("snapshot") != nullptr)
    return r.wrong(*r.get("snapshot"), "snapshot", "only the memory store keeps a snapshot (Redis persists itself)");
  SLUICE_TRY(r.duration("connect_timeout", s.connect_timeout));
  SLUICE_TRY(r.duration("command_timeout", s.command_timeout));
  SLUICE_TRY(r.integer("pool_size", s.pool_size, 0, 4096));
  std::string mode;
  SLUICE_TRY(r.str("on_failure", mode));
  if (!mode.empty()) {
    if (mode == "fail-open") {
      s.on_failure = failure_mode::fail_open;
    } else if (mode == "fail-closed") {
      s.on_failure = failure_mode::fail_closed;
    } else if (mode == "local") {
      s.on_failure = failure_mode::local;
    } else {
      return r.wrong(*r.get("on_failure"), "on_failure",
                     "must be \"fail-open\", \"fail-closed\" or \"local\" (got '" + mode + "')");
    }
  }
  SLUICE_TRY(r.duration("fail_closed_retry_after", s.fail_closed_retry_after));
  SLUICE_TRY(r.boolean("deny_cache", s.deny_cache));
  SLUICE_TRY(r.str("key_prefix", s.key_prefix));
  return std::nullopt;
}

// The column of a policy expression's error inside the file: the string's
// opening quote is at `p`; parse_policy's message says "at column N".
toml::source_position error_column(const toml::node& n, std::string_view message) {
  toml::source_position p = n.source().begin;
  const auto k = message.rfind("at column ");
  if (k == std::string_view::npos) return p;
  std::int64_t col = 0;
  std::string_view rest = message.substr(k + 10);
  std::size_t len = 0;
  while (len < rest.size() && std::isdigit(static_cast<unsigned char>(rest[len])) != 0) ++len;
  if (!parse_int(rest.substr(0, len), col) || col < 1) return p;
  p.column = static_cast<toml::source_index>(p.column + static_cast<toml::source_index>(col));  // +1 quote, -1 base
  return p;
}

std::optional<error> read_policies(const std::string& file, const toml::table& t, config& c) {
  for (auto&& [k, v] : t) {
    const std::string name(k.str());
    if (!valid_policy_name(name))
      return at_place(file, k.source().begin,
                      "policy name '" + name + "' must be 1 to 64 of the characters A-Z a-z 0-9 _ . -");
    const auto* s = v.as_string();
    if (s == nullptr)
      return at_place(file, v.source().begin, "policies." + name + ": must be a policy expression string");
    auto p = parse_policy(s->get());
    if (!p) return at_place(file, error_column(v, p.err().message), "policies." + name + ": " + p.err().message);
    c.policies.push_back(named_policy{name, s->get(), *p});
  }
  return std::nullopt;
}

std::optional<error> read_rule(const std::string& file, const toml::table& t, std::size_t index, config& c) {
  rule ru;
  ru.name = "rule " + std::to_string(index + 1);
  const std::string where = "rules[" + std::to_string(index) + "]";
  const reader r(file, t, where);
  SLUICE_TRY(r.only({"name", "policy", "key", "cost", "shadow", "method", "path_prefix", "host", "header"}));
  SLUICE_TRY(r.str("name", ru.name));
  const toml::node* pn = r.get("policy");
  if (pn == nullptr) return at_place(file, t.source().begin, where + ": every rule needs a policy");
  SLUICE_TRY(r.str("policy", ru.policy));
  if (c.find_policy(ru.policy) == nullptr) {
    std::string known;
    for (const auto& p : c.policies) known += (known.empty() ? "" : ", ") + p.name;
    return r.wrong(*pn, "policy",
                   "unknown policy '" + ru.policy + "' (defined: " + (known.empty() ? "none" : known) + ")");
  }
  std::string key_text = "client";
  SLUICE_TRY(r.str("key", key_text));
  auto key = parse_key(key_text);
  if (!key) return r.wrong(r.get("key") != nullptr ? *r.get("key") : t, "key", key.err().message);
  ru.key = std::move(*key);
  if (const toml::node* cn = r.get("cost")) {
    if (const auto* i = cn->as_integer()) {
      if (i->get() < 1) return r.wrong(*cn, "cost", "must be at least 1 (got " + std::to_string(i->get()) + ")");
      ru.cost.fixed = i->get();
    } else if (const auto* s = cn->as_string()) {
      const std::string& text = s->get();
      if (text.rfind("header:", 0) != 0 || !valid_token(std::string_view(text).substr(7)))
        return r.wrong(*cn, "cost", "must be a whole number or \"header:NAME\" (got '" + text + "')");
      ru.cost.header = text.substr(7);
    } else {
      return r.wrong(*cn, "cost", "must be a whole number or \"header:NAME\"");
    }
  }
  SLUICE_TRY(r.boolean("shadow", ru.shadow));
  std::vector<std::string> methods;
  SLUICE_TRY(r.strings("method", methods));
  for (auto& m : methods) {
    if (!valid_token(m)) return r.wrong(*r.get("method"), "method", "'" + m + "' is not a method name");
    ru.match.methods.push_back(upper(m));
  }
  SLUICE_TRY(r.str("path_prefix", ru.match.path_prefix));
  if (r.get("path_prefix") != nullptr && (ru.match.path_prefix.empty() || ru.match.path_prefix[0] != '/'))
    return r.wrong(*r.get("path_prefix"), "path_prefix", "must start with '/'");
  SLUICE_TRY(r.str("host", ru.match.host));
  ru.match.host = lower(ru.match.host);
  if (const toml::node* hn = r.get("header")) {
    const auto* ht = hn->as_table();
    if (ht == nullptr)
      return r.wrong(*hn, "header", "must be a table of NAME = \"value\" (exact) or NAME = true (present)");
    for (auto&& [hk, hv] : *ht) {
      if (!valid_token(hk.str())) return at_place(file, hk.source().begin, where + ".header: not a header name");
      if (const auto* s = hv.as_string()) {
        ru.match.headers.emplace_back(std::string(hk.str()), s->get());
      } else if (const auto* b = hv.as_boolean(); b != nullptr && b->get()) {
        ru.match.headers.emplace_back(std::string(hk.str()), std::nullopt);
      } else {
        return at_place(
            file, hv.source().begin,
            where + ".header." + std::string(hk.str()) + ": must be a string (exact value) or true (present)");
      }
    }
  }
  c.rules.push_back(std::move(ru));
  return std::nullopt;
}

// What the store section takes from the server's: the default max_keys
// (from the longest key) and the time order (client_time).
void finish_store(config& c) {
  if (!c.store.max_keys_given) c.store.max_keys = default_max_keys(c.lim.key_bytes);
  c.store.in_time_order = !c.client_time;
}

std::optional<error> read_document(const std::string& file, const toml::table& doc, config& c) {
  for (auto&& [k, v] : doc) {
    const std::string_view key = k.str();
    if (key != "server" && key != "store" && key != "policies" && key != "rules" && key != "grpc" && key != "envoy")
      return at_place(
          file, k.source().begin,
          "unknown section '" + std::string(key) + "' (known: server, store, policies, rules, grpc, envoy)");
  }
  if (const toml::node* n = doc.get("server")) {
    if (!n->is_table()) return at_place(file, n->source().begin, "server must be a table ([server])");
    SLUICE_TRY(read_server(file, *n->as_table(), c));
  }
  if (const toml::node* n = doc.get("store")) {
    if (!n->is_table()) return at_place(file, n->source().begin, "store must be a table ([store])");
    SLUICE_TRY(read_store(file, *n->as_table(), c.store));
  }
  if (const toml::node* n = doc.get("policies")) {
    if (!n->is_table()) return at_place(file, n->source().begin, "policies must be a table ([policies])");
    SLUICE_TRY(read_policies(file, *n->as_table(), c));
  }
  if (c.policies.empty())
    return at_place(file, {1, 1}, "no policies: add a [policies] table, e.g. api = \"gcra 100/1m\"");
  if (const toml::node* n = doc.get("rules")) {
    const auto* a = n->as_array();
    if (a == nullptr || !a->is_array_of_tables())
      return at_place(file, n->source().begin, "rules must be an array of tables ([[rules]])");
    std::size_t i = 0;
    for (const toml::node& e : *a) SLUICE_TRY(read_rule(file, *e.as_table(), i++, c));
  }
  SLUICE_TRY(read_envoy_sections(file, doc, c));
  finish_store(c);
  return std::nullopt;
}

}  // namespace

std::string_view name_of(failure_mode m) noexcept {
  switch (m) {
    case failure_mode::fail_open:
      return "fail-open";
    case failure_mode::fail_closed:
      return "fail-closed";
    case failure_mode::local:
      return "local";
  }
  return "fail-closed";
}

bool valid_policy_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    const auto u = static_cast<unsigned char>(ch);
    return std::isalnum(u) != 0 || ch == '_' || ch == '.' || ch == '-';
  });
}

const named_policy* config::find_policy(std::string_view name) const noexcept {
  for (const auto& p : policies)
    if (p.name == name) return &p;
  return nullptr;
}

result<listen_address> parse_listen(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return error{"listen",
                 "'" + std::string(text) + "': " + why + " (write HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080)"};
  };
  std::string host;
  std::string_view port;
  if (!text.empty() && text[0] == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return bad("an IPv6 address must be in brackets, followed by :PORT");
    host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
    unsigned char buf[16];
    if (inet_pton(AF_INET6, host.c_str(), buf) != 1) return bad("'" + host + "' is not an IPv6 address");
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("no port");
    host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
    unsigned char buf[4];
    if (inet_pton(AF_INET, host.c_str(), buf) != 1) return bad("'" + host + "' is not an IPv4 address");
  }
  std::int64_t p = 0;
  if (!parse_int(port, p) || p < 0 || p > 65535) return bad("the port must be a number from 0 to 65535");
  return listen_address{host, static_cast<std::uint16_t>(p)};
}

result<key_part> parse_key_part(std::string_view text) {
  const auto colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  const std::string_view arg = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  const bool has_arg = colon != std::string_view::npos;
  const auto bad = [&](const std::string& why) {
    return error{"key",
                 "'" + std::string(text) + "': " + why +
                     " (parts: client, header:NAME, path:N, query:NAME, literal:TEXT, method, host; join with '+')"};
  };
  if (kind == "client" || kind == "method" || kind == "host") {
    if (has_arg) return bad("takes no argument");
    return key_part{kind == "client"   ? key_source::client
                    : kind == "method" ? key_source::method
                                       : key_source::host,
                    "", 0};
  }
  if (kind == "header") {
    if (!valid_token(arg)) return bad("needs a header name");
    return key_part{key_source::header, std::string(arg), 0};
  }
  if (kind == "query") {
    if (arg.empty()) return bad("needs a parameter name");
    return key_part{key_source::query, std::string(arg), 0};
  }
  if (kind == "literal") {
    if (arg.empty()) return bad("needs a text");
    return key_part{key_source::literal, std::string(arg), 0};
  }
  if (kind == "path") {
    std::int64_t n = 0;
    if (!parse_int(arg, n) || n < 1 || n > 64) return bad("needs a segment number from 1 to 64");
    return key_part{key_source::path, "", static_cast<std::size_t>(n)};
  }
  return bad("unknown key part");
}

result<std::vector<key_part>> parse_key(std::string_view text) {
  std::vector<key_part> parts;
  if (text.empty()) return error{"key", "must not be empty"};
  std::size_t start = 0;
  while (true) {
    const auto plus = text.find('+', start);
    auto part = parse_key_part(text.substr(start, plus == std::string_view::npos ? text.npos : plus - start));
    if (!part) return part.err();
    parts.push_back(*part);
    if (plus == std::string_view::npos) break;
    start = plus + 1;
  }
  if (parts.size() > 8) return error{"key", "at most 8 parts"};
  return parts;
}

result<config> parse_config(std::string_view text, const std::string& name) {
  toml::table doc;
  try {
    doc = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    return at_place(name, e.source().begin, std::string(e.description()));
  }
  config c;
  c.file = name;
  if (auto e = read_document(name, doc, c)) return *e;
  return c;
}

result<config> load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error{path, "cannot read the configuration file"};
  std::ostringstream s;
  s << in.rdbuf();
  return parse_config(s.str(), path);
}

std::size_t default_max_keys(std::size_t key_bytes) noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  const auto memory = static_cast<unsigned long long>(pages) * static_cast<unsigned long long>(page);
  return static_cast<std::size_t>(memory / 4 / (48 + key_bytes));
}

result<config> simple_config(std::string_view policy, std::string_view key) {
  auto p = parse_policy(policy);
  if (!p) return error{"--policy", p.err().message};
  auto k = parse_key(key);
  if (!k) return error{"--key", k.err().message};
  config c;
  c.policies.push_back(named_policy{"default", std::string(policy), *p});
  rule ru;
  ru.name = "default";
  ru.policy = "default";
  ru.key = std::move(*k);
  c.rules.push_back(std::move(ru));
  finish_store(c);
  return c;
}

}  // namespace sluice::serve
