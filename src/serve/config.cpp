// Reading the service's TOML configuration (config.hpp) with toml++, every
// error placed at FILE:LINE:COLUMN.
#include "config.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>

#include "forwarded.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/redact.hpp"
#include "sluice/keyed/registry.hpp"
#include "target.hpp"

namespace sluice::serve {

/// Reads `[grpc]` and `[[envoy]]` of `doc` into `c` (envoy_rules.cpp), each
/// error into `errs` (an [[envoy]] rule's first); the policies must be read
/// already.
void read_envoy_sections(const std::string& file, const toml::table& doc, config& c, std::vector<error>& errs);

namespace {

// The request ids' settings (docs/serve.md, "Request ids"): a window from
// 1 ms (Redis's TTL unit) to 7 days, and room for a few of the largest ids
// (16 checks of 256-byte keys take about 14 KB).
constexpr tick min_idempotency_window = 1'000'000;
constexpr tick max_idempotency_window = tick{7} * 24 * 3600 * 1'000'000'000;
constexpr std::int64_t min_id_bytes = 65'536;

// An error at a place in the file.
struct located {
  toml::source_position at;
  std::string message;
};

std::string place_of(const std::string& file, toml::source_position p) {
  return file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
}

error at_place(const std::string& file, toml::source_position p, const std::string& message) {
  return error{place_of(file, p), message};
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

  // Every key of the table must be one of `known`: one error per other key.
  void only(std::initializer_list<std::string_view> known, std::vector<error>& errs) const {
    for (auto&& [k, v] : t_) {
      if (std::find(known.begin(), known.end(), k.str()) == known.end()) {
        std::string list;
        for (auto n : known) list += (list.empty() ? "" : ", ") + std::string(n);
        errs.push_back(at_place(
            file_, k.source().begin,
            "unknown key '" + std::string(k.str()) + "' in " + std::string(where_) + " (known: " + list + ")"));
      }
    }
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

// Reading goes on past an error, so that `serve --check` reports them all:
// each is added to `errs` (a variable of the function using it).
#define SLUICE_NOTE(expr)                                    \
  do {                                                       \
    if (auto sluice_e_ = (expr)) errs.push_back(*sluice_e_); \
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

void read_server(const std::string& file, const toml::table& t, config& c, std::vector<error>& errs) {
  const reader r(file, t, "server");
  r.only({"listen", "admin", "threads", "token", "token_file", "client_time", "trusted_proxies", "forwarded_header",
          "max_header_bytes", "max_body_bytes", "max_key_bytes", "max_connections", "idle_timeout", "request_timeout",
          "drain_timeout"},
         errs);
  SLUICE_NOTE(read_listen(r, "listen", c.listen));
  if (const toml::node* n = r.get("admin")) {
    std::string text;
    if (auto e = r.str("admin", text)) {
      errs.push_back(*e);
    } else if (auto a = parse_listen(text); !a) {
      errs.push_back(r.wrong(*n, "admin", a.err().message));
    } else {
      c.admin = *a;
    }
  }
  SLUICE_NOTE(r.integer("threads", c.threads, 0, 1024));
  SLUICE_NOTE(r.str("token", c.token));
  std::string token_file;
  SLUICE_NOTE(r.str("token_file", token_file));
  if (!token_file.empty()) {
    if (!c.token.empty()) {
      errs.push_back(r.wrong(*r.get("token_file"), "token_file", "give token or token_file, not both"));
    } else if (std::ifstream in(token_file, std::ios::binary); !in) {
      errs.push_back(r.wrong(*r.get("token_file"), "token_file", "cannot read '" + token_file + "'"));
    } else {
      std::ostringstream s;
      s << in.rdbuf();
      c.token = s.str();
      while (!c.token.empty() && (c.token.back() == '\n' || c.token.back() == '\r')) c.token.pop_back();
      if (c.token.empty()) errs.push_back(r.wrong(*r.get("token_file"), "token_file", "'" + token_file + "' is empty"));
    }
  }
  if (const toml::node* n = r.get("token"); n != nullptr && n->is_string() && c.token.empty())
    errs.push_back(r.wrong(*n, "token", "must not be empty (leave it out for no token)"));
  // A token no client can send as it is written (`Bearer abc ` loses its
  // space on the way): every request would be a 401.
  if (!c.token.empty()) {
    const bool edge_space =
        c.token.front() == ' ' || c.token.front() == '\t' || c.token.back() == ' ' || c.token.back() == '\t';
    const bool control = std::any_of(c.token.begin(), c.token.end(), [](char ch) {
      return static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) == 0x7F;
    });
    const std::string_view key = token_file.empty() ? "token" : "token_file";
    if (edge_space || control)
      errs.push_back(r.wrong(*r.get(key), key,
                             edge_space ? "the token must not begin or end with a space or tab"
                                        : "the token must not hold a control byte (a tab, a newline, ...)"));
  }
  SLUICE_NOTE(r.boolean("client_time", c.client_time));
  SLUICE_NOTE(r.strings("trusted_proxies", c.trusted_proxies));
  for (const auto& p : c.trusted_proxies) {
    if (!parse_ip(p))
      errs.push_back(r.wrong(*r.get("trusted_proxies"), "trusted_proxies", "'" + p + "' is not an IP address"));
  }
  if (auto e = r.str("forwarded_header", c.forwarded_header)) {
    errs.push_back(*e);
  } else if (const toml::node* n = r.get("forwarded_header"); n != nullptr && !valid_token(c.forwarded_header)) {
    errs.push_back(r.wrong(*n, "forwarded_header", "must be a header name"));
  }
  // At most 65,535: Boost.Beast keeps a field's length in 16 bits and throws
  // (out of the event loop: the process ends) for a longer one; a header
  // section within this bound cannot hold one.
  SLUICE_NOTE(r.integer("max_header_bytes", c.lim.header_bytes, 256, 65'535));
  SLUICE_NOTE(r.integer("max_body_bytes", c.lim.body_bytes, 0, 64 << 20));
  SLUICE_NOTE(r.integer("max_key_bytes", c.lim.key_bytes, 1, longest_key_bytes));
  SLUICE_NOTE(r.integer("max_connections", c.lim.max_connections, 1, 1'000'000));
  SLUICE_NOTE(r.duration("idle_timeout", c.lim.idle_timeout));
  SLUICE_NOTE(r.duration("request_timeout", c.lim.request_timeout));
  SLUICE_NOTE(r.duration("drain_timeout", c.lim.drain_timeout));
}

// The password's sources (docs/redis.md, "URLs, passwords"): the URL,
// store.password_file, $SLUICE_REDIS_PASSWORD; exactly one may give it.
std::optional<error> read_password(const reader& r, bool remote, store_config& s) {
  std::string path;
  SLUICE_TRY(r.str("password_file", path));
  const toml::node* file_node = r.get("password_file");
  const char* env = remote ? std::getenv(password_env) : nullptr;
  const bool from_env = env != nullptr && *env != '\0';
  const bool from_url = url_gives_password(s.url);
  if (file_node != nullptr) {
    if (!remote) return r.wrong(*file_node, "password_file", "only a remote store (Redis) takes a password");
    if (from_url)
      return r.wrong(*file_node, "password_file",
                     "the URL gives a password too: give it in one place (the URL or this file)");
    if (from_env)
      return r.wrong(*file_node, "password_file",
                     std::string(password_env) + " is set too: give the password in one place (this file or it)");
    std::ifstream in(path, std::ios::binary);
    if (path.empty() || !in) return r.wrong(*file_node, "password_file", "cannot read '" + path + "'");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return r.wrong(*file_node, "password_file", "cannot read '" + path + "'");
    s.password = text.str();
    if (!s.password.empty() && s.password.back() == '\n') s.password.pop_back();
    if (!s.password.empty() && s.password.back() == '\r') s.password.pop_back();
    if (s.password.empty())
      return r.wrong(*file_node, "password_file", "'" + path + "' holds no password (it is empty)");
    if (s.password.find_first_of("\r\n") != std::string::npos)
      return r.wrong(*file_node, "password_file", "'" + path + "' holds more than one line");
    return std::nullopt;
  }
  if (from_env) {
    if (from_url)
      return r.wrong(*r.get("url"), "url",
                     "gives a password and " + std::string(password_env) +
                         " is set too: give the password in one place (the URL or the variable)");
    s.password = env;
  }
  return std::nullopt;
}

void read_store(const std::string& file, const toml::table& t, store_config& s, bool client_time,
                std::vector<error>& errs) {
  const reader r(file, t, "store");
  r.only({"url", "password_file", "snapshot", "snapshot_interval", "connect_timeout", "command_timeout", "on_failure",
          "fail_closed_retry_after", "deny_cache", "key_prefix", "max_keys", "purge_interval", "clock",
          "max_clock_offset", "eviction", "idempotency_window", "max_id_bytes"},
         errs);
  SLUICE_NOTE(r.str("url", s.url));
  if (const toml::node* n = r.get("url")) s.url_place = place_of(file, n->source().begin);
  // The scheme only (store/registry.hpp): whether this build opens it is the
  // registry's to say, when the service opens the store.
  const store_scheme* scheme = scheme_of(s.url);
  const bool remote = scheme != nullptr && scheme->remote;
  if (scheme == nullptr) {
    std::string forms;
    for (const store_scheme& k : known_store_schemes) forms += (forms.empty() ? "" : ", ") + std::string(k.form);
    errs.push_back(
        r.wrong(*r.get("url"), "url", "must be one of " + forms + " (got '" + escape_bytes(redact_url(s.url)) + "')"));
  }
  SLUICE_NOTE(read_password(r, remote, s));
  SLUICE_NOTE(r.str("snapshot", s.snapshot));
  SLUICE_NOTE(r.duration("snapshot_interval", s.snapshot_interval, true));
  SLUICE_NOTE(r.integer("max_keys", s.max_keys, 0, std::numeric_limits<std::int64_t>::max()));
  s.max_keys_given = r.get("max_keys") != nullptr;
  SLUICE_NOTE(r.duration("purge_interval", s.purge_interval, true));
  if (const toml::node* n = r.get("idempotency_window")) {
    if (auto e = r.duration("idempotency_window", s.idempotency_window)) {
      errs.push_back(*e);
    } else if (s.idempotency_window < min_idempotency_window || s.idempotency_window > max_idempotency_window) {
      errs.push_back(r.wrong(*n, "idempotency_window", "must be from 1ms to 7d"));
    }
  }
  SLUICE_NOTE(r.integer("max_id_bytes", s.max_id_bytes, min_id_bytes, std::numeric_limits<std::int64_t>::max()));
  if (remote && r.get("max_id_bytes") != nullptr)
    errs.push_back(r.wrong(*r.get("max_id_bytes"), "max_id_bytes",
                           "only the memory store is bounded here (Redis: maxmemory; its ids expire by TTL)"));
  if (remote && r.get("max_keys") != nullptr)
    errs.push_back(r.wrong(*r.get("max_keys"), "max_keys", "only the memory store is bounded here (Redis: maxmemory)"));
  if (remote && r.get("purge_interval") != nullptr)
    errs.push_back(r.wrong(*r.get("purge_interval"), "purge_interval", "only the memory store purges (Redis: TTLs)"));
  if (remote && r.get("snapshot") != nullptr)
    errs.push_back(
        r.wrong(*r.get("snapshot"), "snapshot", "only the memory store keeps a snapshot (Redis persists itself)"));
  SLUICE_NOTE(r.duration("connect_timeout", s.connect_timeout));
  SLUICE_NOTE(r.duration("command_timeout", s.command_timeout));
  std::string mode;
  SLUICE_NOTE(r.str("on_failure", mode));
  if (!mode.empty()) {
    if (mode == "fail-open") {
      s.on_failure = failure_mode::fail_open;
    } else if (mode == "fail-closed") {
      s.on_failure = failure_mode::fail_closed;
    } else if (mode == "local") {
      s.on_failure = failure_mode::local;
    } else {
      errs.push_back(r.wrong(*r.get("on_failure"), "on_failure",
                             "must be \"fail-open\", \"fail-closed\" or \"local\" (got '" + mode + "')"));
    }
  }
  SLUICE_NOTE(r.duration("fail_closed_retry_after", s.fail_closed_retry_after));
  SLUICE_NOTE(r.boolean("deny_cache", s.deny_cache));
  SLUICE_NOTE(r.str("key_prefix", s.key_prefix));
  SLUICE_NOTE(r.duration("max_clock_offset", s.max_clock_offset, true));
  // The store's clock by default; the service's with client_time, whose
  // instants are the clients' (semantics.md, "Clocks of a fleet").
  s.clock = client_time ? store_clock::local : store_clock::store;
  std::string clock;
  SLUICE_NOTE(r.str("clock", clock));
  if (const toml::node* n = r.get("clock"); n != nullptr && n->is_string()) {
    if (clock == "local") {
      s.clock = store_clock::local;
    } else if (clock != "store") {
      errs.push_back(r.wrong(*n, "clock", "must be \"store\" or \"local\" (got '" + escape_bytes(clock) + "')"));
    } else if (client_time) {
      errs.push_back(r.wrong(*n, "clock",
                             "\"store\" decides at the store's clock, but server.client_time = true lets clients "
                             "give their own instants: set store.clock = \"local\" (or server.client_time = false)"));
    } else if (!remote && scheme != nullptr) {
      errs.push_back(r.wrong(*n, "clock",
                             "only a remote store has a clock of its own (the memory store decides at "
                             "the service's)"));
    }
  }
  std::string eviction;
  SLUICE_NOTE(r.str("eviction", eviction));
  if (!eviction.empty()) {
    if (eviction == "refuse" || eviction == "warn") {
      s.warn_on_eviction_policy = eviction == "warn";
    } else {
      errs.push_back(r.wrong(*r.get("eviction"), "eviction",
                             "must be \"refuse\" or \"warn\" (got '" + escape_bytes(eviction) + "')"));
    }
    if (!remote)
      errs.push_back(
          r.wrong(*r.get("eviction"), "eviction", "only a remote store evicts (the memory store: max_keys)"));
  }
}

// The place of a policy expression's error inside the file: the string's
// opening quote is at `n`'s place, the error's column (parse_policy's
// "at column N") is in the string.
toml::source_position error_column(const toml::node& n, const error& e) {
  toml::source_position p = n.source().begin;
  if (e.column < 1) return p;
  p.column = static_cast<toml::source_index>(p.column + e.column);  // +1 quote, -1 base
  return p;
}

// A policy with an error still gets a name in `c` (always-allow in its
// place), so that the rules naming it are not also reported; the errors
// keep the configuration from ever being used.
void read_policies(const std::string& file, const toml::table& t, config& c, std::vector<error>& errs) {
  for (auto&& [k, v] : t) {
    const std::string name(k.str());
    if (!valid_policy_name(name)) {
      errs.push_back(at_place(file, k.source().begin,
                              "policy name '" + name + "' must be 1 to 64 of the characters A-Z a-z 0-9 _ . -"));
      continue;
    }
    const auto* s = v.as_string();
    if (s == nullptr) {
      errs.push_back(at_place(file, v.source().begin, "policies." + name + ": must be a policy expression string"));
      c.policies.push_back(named_policy{name, "", always_allow{}});
      continue;
    }
    auto p = parse_policy(s->get());
    if (!p) {
      errs.push_back(at_place(file, error_column(v, p.err()), "policies." + name + ": " + p.err().message));
      c.policies.push_back(named_policy{name, s->get(), always_allow{}});
      continue;
    }
    c.policies.push_back(named_policy{name, s->get(), *p});
  }
}

// One rule; every bad key of it is an error. It joins `c.rules` only when
// it has none.
void read_rule(const std::string& file, const toml::table& t, std::size_t index, config& c, std::vector<error>& errs) {
  const std::size_t before = errs.size();
  rule ru;
  ru.name = "rule " + std::to_string(index + 1);
  const std::string where = "rules[" + std::to_string(index) + "]";
  const reader r(file, t, where);
  r.only({"name", "policy", "key", "cost", "shadow", "method", "path_prefix", "host", "header"}, errs);
  SLUICE_NOTE(r.str("name", ru.name));
  if (const toml::node* pn = r.get("policy"); pn == nullptr) {
    errs.push_back(at_place(file, t.source().begin, where + ": every rule needs a policy"));
  } else if (auto e = r.str("policy", ru.policy)) {
    errs.push_back(*e);
  } else if (c.find_policy(ru.policy) == nullptr) {
    std::string known;
    for (const auto& p : c.policies) known += (known.empty() ? "" : ", ") + p.name;
    errs.push_back(r.wrong(*pn, "policy",
                           "unknown policy '" + ru.policy + "' (defined: " + (known.empty() ? "none" : known) + ")"));
  }
  std::string key_text = "client";
  if (auto e = r.str("key", key_text)) {
    errs.push_back(*e);
  } else if (auto key = parse_key(key_text); !key) {
    errs.push_back(r.wrong(r.get("key") != nullptr ? *r.get("key") : t, "key", key.err().message));
  } else {
    ru.key = std::move(*key);
  }
  if (const toml::node* cn = r.get("cost")) {
    if (const auto* i = cn->as_integer()) {
      if (i->get() < 1)
        errs.push_back(r.wrong(*cn, "cost", "must be at least 1 (got " + std::to_string(i->get()) + ")"));
      ru.cost.fixed = i->get();
    } else if (const auto* s = cn->as_string()) {
      const std::string& text = s->get();
      if (text.rfind("header:", 0) != 0 || !valid_token(std::string_view(text).substr(7)))
        errs.push_back(r.wrong(*cn, "cost", "must be a whole number or \"header:NAME\" (got '" + text + "')"));
      else
        ru.cost.header = text.substr(7);
    } else {
      errs.push_back(r.wrong(*cn, "cost", "must be a whole number or \"header:NAME\""));
    }
  }
  SLUICE_NOTE(r.boolean("shadow", ru.shadow));
  std::vector<std::string> methods;
  SLUICE_NOTE(r.strings("method", methods));
  for (auto& m : methods) {
    if (!valid_token(m)) errs.push_back(r.wrong(*r.get("method"), "method", "'" + m + "' is not a method name"));
    ru.match.methods.push_back(upper(m));
  }
  SLUICE_NOTE(r.str("path_prefix", ru.match.path_prefix));
  if (r.get("path_prefix") != nullptr && r.get("path_prefix")->is_string()) {
    if (ru.match.path_prefix.empty() || ru.match.path_prefix[0] != '/') {
      errs.push_back(r.wrong(*r.get("path_prefix"), "path_prefix", "must start with '/'"));
    } else {
      // Rules match the normalised path (semantics.md): a prefix that is not
      // normalised itself would never match.
      std::string normal;
      const path_form f = normalise_path(ru.match.path_prefix, normal);
      if (f == path_form::invalid)
        errs.push_back(r.wrong(*r.get("path_prefix"), "path_prefix",
                               "is no path a request can have (see semantics.md, On the wire)"));
      else if (f == path_form::rewritten)
        errs.push_back(r.wrong(*r.get("path_prefix"), "path_prefix",
                               "rules match the normalised path: write it as '" + normal + "'"));
    }
  }
  SLUICE_NOTE(r.str("host", ru.match.host));
  ru.match.host = lower(ru.match.host);
  if (const toml::node* hn = r.get("header")) {
    if (const auto* ht = hn->as_table(); ht == nullptr) {
      errs.push_back(r.wrong(*hn, "header", "must be a table of NAME = \"value\" (exact) or NAME = true (present)"));
    } else {
      for (auto&& [hk, hv] : *ht) {
        if (!valid_token(hk.str())) {
          errs.push_back(at_place(file, hk.source().begin, where + ".header: not a header name"));
        } else if (const auto* s = hv.as_string()) {
          ru.match.headers.emplace_back(std::string(hk.str()), s->get());
        } else if (const auto* b = hv.as_boolean(); b != nullptr && b->get()) {
          ru.match.headers.emplace_back(std::string(hk.str()), std::nullopt);
        } else {
          errs.push_back(at_place(
              file, hv.source().begin,
              where + ".header." + std::string(hk.str()) + ": must be a string (exact value) or true (present)"));
        }
      }
    }
  }
  if (errs.size() == before) c.rules.push_back(std::move(ru));
}

// What the store section takes from the server's: the default max_keys
// (from the longest key) and the time order (client_time).
void finish_store(config& c) {
  if (!c.store.max_keys_given) c.store.max_keys = default_max_keys(c.lim.key_bytes);
  c.store.in_time_order = !c.client_time;
  if (c.client_time) c.store.clock = store_clock::local;  // a file without [store] too
}

void read_document(const std::string& file, const toml::table& doc, config& c, std::vector<error>& errs) {
  for (auto&& [k, v] : doc) {
    const std::string_view key = k.str();
    if (key != "server" && key != "store" && key != "policies" && key != "rules" && key != "grpc" && key != "envoy")
      errs.push_back(
          at_place(file, k.source().begin,
                   "unknown section '" + std::string(key) + "' (known: server, store, policies, rules, grpc, envoy)"));
  }
  if (const toml::node* n = doc.get("server")) {
    if (!n->is_table())
      errs.push_back(at_place(file, n->source().begin, "server must be a table ([server])"));
    else
      read_server(file, *n->as_table(), c, errs);
  }
  if (const toml::node* n = doc.get("store")) {
    if (!n->is_table())
      errs.push_back(at_place(file, n->source().begin, "store must be a table ([store])"));
    else
      read_store(file, *n->as_table(), c.store, c.client_time, errs);
  }
  const std::size_t before = errs.size();
  if (const toml::node* n = doc.get("policies")) {
    if (!n->is_table())
      errs.push_back(at_place(file, n->source().begin, "policies must be a table ([policies])"));
    else
      read_policies(file, *n->as_table(), c, errs);
  }
  if (const toml::node* n = doc.get("rules")) {
    const auto* a = n->as_array();
    if (a == nullptr || !a->is_array_of_tables()) {
      errs.push_back(at_place(file, n->source().begin, "rules must be an array of tables ([[rules]])"));
    } else {
      std::size_t i = 0;
      for (const toml::node& e : *a) read_rule(file, *e.as_table(), i++, c, errs);
    }
  }
  read_envoy_sections(file, doc, c, errs);
  finish_store(c);
  // After the Envoy sections: an envoyproxy/ratelimit file brings policies of
  // its own, or none (a domain with no descriptors, or only unlimited ones).
  if (c.policies.empty() && c.envoy_trees.empty() && errs.size() == before)
    errs.push_back(at_place(file, {1, 1}, "no policies: add a [policies] table, e.g. api = \"gcra 100/1m\""));
}

// The line and column of an error's "FILE:LINE:COLUMN" field, to put the
// errors in the file's order.
std::pair<std::int64_t, std::int64_t> place_of(const error& e) {
  const auto last = e.field.rfind(':');
  const auto mid = last == std::string::npos || last == 0 ? std::string::npos : e.field.rfind(':', last - 1);
  std::int64_t line = 0;
  std::int64_t column = 0;
  if (mid == std::string::npos || !parse_int(std::string_view(e.field).substr(mid + 1, last - mid - 1), line) ||
      !parse_int(std::string_view(e.field).substr(last + 1), column))
    return {0, 0};
  return {line, column};
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
  if (name.empty() || name.size() > longest_policy_name) return false;
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

result<config> parse_config(std::string_view text, const std::string& name, std::vector<error>* all) {
  toml::table doc;
  try {
    doc = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    error first = at_place(name, e.source().begin, std::string(e.description()));
    if (all != nullptr) *all = {first};
    return first;
  }
  config c;
  c.file = name;
  std::vector<error> errs;
  read_document(name, doc, c, errs);
  if (errs.empty()) return c;
  std::stable_sort(errs.begin(), errs.end(), [](const error& a, const error& b) { return place_of(a) < place_of(b); });
  error first = errs.front();
  if (all != nullptr) *all = std::move(errs);
  return first;
}

result<config> load_config(const std::string& path, std::vector<error>* all) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error e{path, "cannot read the configuration file"};
    if (all != nullptr) *all = {e};
    return e;
  }
  std::ostringstream s;
  s << in.rdbuf();
  return parse_config(s.str(), path, all);
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
