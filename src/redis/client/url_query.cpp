// A Redis URL's query: one table of parameters, each one entry (its name,
// the URLs it may stand on, what it sets), read by every scheme's parser.
#include "redis/client/url_query.hpp"

#include <charconv>
#include <iterator>

#include "redis/client/cluster.hpp"
#include "redis/client/sentinel.hpp"

namespace sluice::redis {

namespace {

// A decimal integer in [lo, hi], the whole of `s`.
bool whole_int(std::string_view s, std::int64_t lo, std::int64_t hi, std::int64_t& v) {
  if (s.empty() || s.size() > 9) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && p == s.data() + s.size() && v >= lo && v <= hi;
}

// Milliseconds in [lo, hi], written "50ms" or "50".
bool whole_ms(const std::string& value, std::int64_t lo, std::int64_t hi, std::int64_t& v) {
  const std::string_view s = value;
  return whole_int(s.ends_with("ms") ? s.substr(0, s.size() - 2) : s, lo, hi, v);
}

// The URLs a parameter may stand on.
enum class on { tls, tcp, every };  // rediss:// only; redis:// and rediss://; every scheme

using setter = std::optional<error> (*)(const std::string& name, std::string value, url& u);

struct parameter {
  std::string_view name;
  on where;
  setter set;
};

std::optional<error> ok() { return std::nullopt; }

// Every parameter of a Redis URL's query (docs/redis.md, "URLs,
// passwords"): a new one is one entry here.
constexpr parameter parameters[] = {
    {"ca_file", on::tls, [](const std::string&, std::string v, url& u) { return u.tls.ca_file = std::move(v), ok(); }},
    {"cert_file", on::tls,
     [](const std::string&, std::string v, url& u) { return u.tls.cert_file = std::move(v), ok(); }},
    {"key_file", on::tls,
     [](const std::string&, std::string v, url& u) { return u.tls.key_file = std::move(v), ok(); }},
    {"server_name", on::tls,
     [](const std::string&, std::string v, url& u) { return u.tls.server_name = std::move(v), ok(); }},
    {"verify", on::tls,
     [](const std::string& n, std::string v, url& u) -> std::optional<error> {
       if (v != "yes" && v != "no") return error{n, "must be yes or no, not \"" + v + "\""};
       u.tls.verify = v == "yes";
       return std::nullopt;
     }},
    // Not on redis+cluster://: its nodes' clients are made from the slot
    // map, not from the seeds, so a WAIT setting there would be dropped.
    {"wait_replicas", on::tcp,
     [](const std::string& n, std::string v, url& u) -> std::optional<error> {
       std::int64_t x = 0;
       if (!whole_int(v, 0, 1000, x)) return error{n, "must be a number of replicas from 0 to 1000, not \"" + v + "\""};
       u.wait_replicas = static_cast<std::int32_t>(x);
       return std::nullopt;
     }},
    {"wait_timeout", on::tcp,
     [](const std::string& n, std::string v, url& u) -> std::optional<error> {
       if (!whole_ms(v, 1, 60'000, u.wait_timeout_ms))
         return error{n, "must be milliseconds from 1 to 60000 (\"50ms\" or \"50\"), not \"" + v + "\""};
       return std::nullopt;
     }},
    {"eviction_poll", on::every,
     [](const std::string& n, std::string v, url& u) -> std::optional<error> {
       if (!whole_ms(v, 0, 86'400'000, u.store.eviction_poll_ms))
         return error{n, "must be milliseconds from 0 to 86400000 (\"1000ms\" or \"1000\"), not \"" + v + "\""};
       return std::nullopt;
     }},
    // Every scheme: whether calls go to sluice's Redis module (module.hpp).
    {"module", on::every,
     [](const std::string& n, std::string v, url& u) -> std::optional<error> {
       const auto m = module_use_of(v);
       if (!m) return error{n, "must be auto, on or off, not \"" + v + "\""};
       u.module = *m;
       return std::nullopt;
     }},
    // Every scheme: the batches an event loop's own connection keeps out.
    {"batches_in_flight", on::every,
     [](const std::string& n, std::string v, url& u) -> std::optional<error> {
       std::int64_t x = 0;
       if (!whole_int(v, 0, 4, x)) return error{n, "must be a number of batches from 0 to 4, not \"" + v + "\""};
       u.batches_in_flight = static_cast<std::int32_t>(x);
       return std::nullopt;
     }},
};
static_assert(std::size(parameters) <= sizeof(query_seen) * 8, "query_seen holds a bit per parameter");

constexpr std::size_t index_of(std::string_view name) {
  std::size_t i = 0;
  while (parameters[i].name != name) ++i;
  return i;
}

bool stands_on(on where, url_kind kind) { return where == on::every || kind == url_kind::tcp; }

// The names a query on `kind` may hold, for an unknown name's message.
std::string names_on(url_kind kind) {
  std::string out = kind == url_kind::unix_socket ? "db" : "";
  for (const parameter& p : parameters)
    if (stands_on(p.where, kind)) out.append(out.empty() ? "" : ", ").append(p.name);
  return out;
}

std::string_view scheme_name(url_kind kind) {
  return kind == url_kind::cluster ? "a redis+cluster:// URL" : kind == url_kind::unix_socket ? "a unix:// URL" : "";
}

}  // namespace

std::optional<error> apply_url_parameter(std::string_view item, url& u, url_kind kind, query_seen& seen) {
  const auto eq = item.find('=');
  const std::string_view name = item.substr(0, eq);
  std::size_t which = std::size(parameters);
  for (std::size_t i = 0; i < std::size(parameters); ++i)
    if (parameters[i].name == name) which = i;
  if (which == std::size(parameters) || !stands_on(parameters[which].where, kind)) {
    std::string shown;  // a name as typed may hold anything: only its plain characters are echoed
    for (char c : name) shown += (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ? c : '?';
    const std::string where =
        which == std::size(parameters) ? "" : std::string(" on ") + std::string(scheme_name(kind));
    return error{"query", "\"" + shown + "\" is not understood" + where + " (" + names_on(kind) + ")"};
  }
  const parameter& p = parameters[which];
  const std::string n(name);
  if (p.where == on::tls && !u.tls.on) return error{n, "is a TLS setting: it needs a rediss:// URL"};
  if ((seen >> which & 1U) != 0) return error{n, "is given twice"};
  seen |= query_seen{1} << which;
  std::string value;
  if (eq == std::string_view::npos || !percent_decode(item.substr(eq + 1), value))
    return error{n, "needs a value (" + n + "=...), %-escaped"};
  if (value.empty()) return error{n, "is empty"};
  return p.set(n, std::move(value), u);
}

std::optional<error> apply_url_query(std::string_view query, url& u, url_kind kind) {
  if (query.empty()) return error{"query", "is empty after '?'"};
  query_seen seen = 0;
  while (true) {
    const auto amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    if (auto e = apply_url_parameter(item, u, kind, seen)) return e;
    if (amp == std::string_view::npos) break;
    query = query.substr(amp + 1);
  }
  if (u.tls.cert_file.empty() != u.tls.key_file.empty())
    return error{u.tls.cert_file.empty() ? "cert_file" : "key_file",
                 "a client certificate needs both cert_file and key_file"};
  if ((seen >> index_of("wait_timeout") & 1U) != 0 && u.wait_replicas == 0)
    return error{"wait_timeout", "is WAIT's timeout: it needs wait_replicas=N (N >= 1)"};
  return std::nullopt;
}

result<url_store_settings> store_settings_of(std::string_view text) {
  if (is_cluster_url(text)) {
    auto seeds = parse_cluster_url(text);
    if (!seeds) return seeds.err();
    return seeds.value().front().store;
  }
  if (is_sentinel_url(text)) {
    auto where = parse_sentinel_url(text);
    if (!where) return where.err();
    return where.value().login.store;
  }
  auto u = parse_url(text);
  if (!u) return u.err();
  return u.value().store;
}

}  // namespace sluice::redis
