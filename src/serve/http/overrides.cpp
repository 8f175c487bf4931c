// The admin API of overrides (docs/serve.md, "Overrides"; semantics.md
// "Overrides"): PUT, GET and DELETE /admin/v1/overrides/POLICY/KEY and the
// paginated GET /admin/v1/overrides?policy=NAME. On the admin listener only,
// as /admin/reload; routed on the raw target (a key may hold any byte, '/'
// too, percent-encoded) and, on a remote store, run on the HTTP front
// end's blocking pool (http_api::offload), never on an event loop. The changes
// go through the service (service::set_override, ...), which counts them.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "http_api.hpp"
#include "json_body.hpp"
#include "sluice/core/policy_expr.hpp"
#include "target.hpp"
#include "wire.hpp"

namespace sluice::serve {

namespace {

constexpr std::string_view prefix = "/admin/v1/overrides";
constexpr std::size_t default_page = 100;
constexpr std::size_t max_page = 1000;

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// A key from its path segment: every "%XX" is the byte XX; any other byte
/// stands for itself, except '%' without two hex digits, '/', '?', '#', a
/// control byte or a space, which make it invalid (nullopt).
std::optional<std::string> decode_key(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = hex_digit(s[i + 1]);
      const int lo = hex_digit(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c <= 0x20 || c == 0x7F || c == '/' || c == '?' || c == '#') {
      return std::nullopt;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string encode_key(std::string_view key) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : key) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '.' || c == '_' || c == '~' || c == ':';
    if (unreserved) {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 0xF];
    }
  }
  return out;
}

bool is_overrides_path(std::string_view raw_path) noexcept {
  return raw_path == prefix || (raw_path.size() > prefix.size() && raw_path.substr(0, prefix.size()) == prefix &&
                                raw_path[prefix.size()] == '/');
}

void http_api::overrides_api(const config& c, std::span<const policy_id> ids, const http_request& req,
                             http_response& res) {
  using nlohmann::json;
  res.content_type = "application/json";
  const auto refuse = [&](unsigned status, std::string_view field, std::string_view message) {
    metrics_.bad_requests.fetch_add(1, std::memory_order_relaxed);
    res.status = status;
    std::string body = "{\"error\":{\"field\":";
    append_json_string(body, field);
    body += ",\"message\":";
    append_json_string(body, message);
    body += "}}\n";
    res.body = std::move(body);
  };
  const auto store_failed = [&](const error& e) {
    res.status = 503;
    std::string body = "{\"error\":{\"field\":\"store\",\"message\":";
    append_json_string(body, e.what());
    body += "}}\n";
    res.body = std::move(body);
  };
  const auto one = [](std::string_view name, std::string_view key, const any_policy& p) {
    std::string out = "{\"policy_name\":";
    append_json_string(out, name);
    out += ",\"key\":";
    append_json_string(out, encode_key(key));
    out += ",\"policy\":";
    append_json_string(out, format_policy(p));
    out += '}';
    return out;
  };
  const auto parts = split_target(req.target);
  if (!parts || !is_overrides_path(parts->path)) {
    refuse(404, "path", "no such admin endpoint");
    return;
  }
  const auto policy_of = [&](std::string_view name) -> std::optional<policy_id> {
    for (std::size_t i = 0; i < c.policies.size(); ++i)
      if (c.policies[i].name == name) return ids[i];
    return std::nullopt;
  };
  std::string_view rest = parts->path.substr(prefix.size());
  if (rest.empty()) {
    // GET /admin/v1/overrides?policy=NAME[&cursor=KEY][&limit=N]
    if (req.method != "GET") {
      refuse(405, "method", "GET /admin/v1/overrides?policy=NAME[&cursor=C][&limit=N]");
      res.fields.push_back({"Allow", "GET"});
      return;
    }
    std::string name, cursor, limit_text;
    if (query_value(parts->query, "policy", name) != query_form::found || name.empty()) {
      refuse(400, "policy", "give the policy: ?policy=NAME");
      return;
    }
    const std::optional<policy_id> id = policy_of(name);
    if (!id) {
      refuse(404, "policy", "no policy named '" + name + "' in the configuration");
      return;
    }
    if (query_value(parts->query, "cursor", cursor) == query_form::invalid) {
      refuse(400, "cursor", "a bad %-escape, or given twice");
      return;
    }
    std::size_t limit = default_page;
    if (const query_form f = query_value(parts->query, "limit", limit_text); f != query_form::absent) {
      std::size_t n = 0;
      bool ok = f == query_form::found && !limit_text.empty() && limit_text.size() <= 4;
      for (const char ch : limit_text) {
        ok = ok && ch >= '0' && ch <= '9';
        n = n * 10 + static_cast<std::size_t>(ch - '0');
      }
      if (!ok || n < 1 || n > max_page) {
        refuse(400, "limit", "a whole number from 1 to " + std::to_string(max_page));
        return;
      }
      limit = n;
    }
    auto page = svc_.list_overrides(*id, cursor, limit);
    if (!page) {
      store_failed(page.err());
      return;
    }
    std::string body = "{\"overrides\":[";
    for (std::size_t i = 0; i < page->overrides.size(); ++i) {
      if (i > 0) body += ',';
      body += one(name, page->overrides[i].key, page->overrides[i].policy);
    }
    body += "],\"next_cursor\":";
    if (page->next) {
      append_json_string(body, encode_key(*page->next));
    } else {
      body += "null";
    }
    body += "}\n";
    res.body = std::move(body);
    return;
  }
  // /admin/v1/overrides/POLICY/KEY
  rest.remove_prefix(1);
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) {
    refuse(404, "path", "/admin/v1/overrides/POLICY/KEY (the key percent-encoded)");
    return;
  }
  const std::string name(rest.substr(0, slash));
  const std::optional<std::string> key = decode_key(rest.substr(slash + 1));
  const std::optional<policy_id> id = policy_of(name);
  if (!id) {
    refuse(404, "policy", "no policy named '" + name + "' in the configuration");
    return;
  }
  if (!key || key->empty()) {
    refuse(400, "key",
           "the key's bytes, each either itself or %XX ('/', '%', '?', '#', a space and control bytes always as %XX); "
           "not empty");
    return;
  }
  if (key->size() > c.lim.key_bytes) {
    refuse(400, "key", "longer than server.max_key_bytes (" + std::to_string(c.lim.key_bytes) + ")");
    return;
  }
  if (key->starts_with("%shadow:")) {
    refuse(400, "key", "a shadow check's key space cannot be overridden (semantics.md, \"Overrides\")");
    return;
  }
  if (req.method == "GET") {
    auto got = svc_.override_of(*id, *key);
    if (!got) {
      store_failed(got.err());
    } else if (!*got) {
      refuse(404, "key", "this key has no override of policy '" + name + "'");
    } else {
      res.body = one(name, *key, **got) + "\n";
    }
    return;
  }
  if (req.method == "DELETE") {
    auto gone = svc_.delete_override(*id, *key);
    if (!gone && gone.err().code != error_code::store_failed) {
      // The Redis store: the key's state cannot be carried back exactly
      // yet (docs/redis.md, "Overrides"); nothing changed.
      refuse(400, gone.err().field, gone.err().message);
    } else if (!gone) {
      store_failed(gone.err());
    } else if (!*gone) {
      refuse(404, "key", "this key has no override of policy '" + name + "'");
    } else {
      res.body = "{\"deleted\":true}\n";
    }
    return;
  }
  if (req.method != "PUT") {
    refuse(405, "method", "GET, PUT or DELETE /admin/v1/overrides/POLICY/KEY");
    res.fields.push_back({"Allow", "GET, PUT, DELETE"});
    return;
  }
  auto parsed = parse_json_object(req.body, R"({"policy":"gcra 1000/1m burst=50"})");
  if (!parsed) {
    refuse(400, parsed.err().field, parsed.err().message);
    return;
  }
  json doc = std::move(parsed).value();
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (it.key() != "policy") {
      refuse(400, it.key(), "unknown field (the body is {\"policy\": EXPRESSION})");
      return;
    }
  const auto pit = doc.find("policy");
  if (pit == doc.end() || !pit->is_string()) {
    refuse(400, "policy", "a policy expression string is required");
    return;
  }
  auto limit = parse_policy(pit->get<std::string>());
  if (!limit) {
    refuse(400, "policy", limit.err().what());
    return;
  }
  auto set = svc_.set_override(*id, *key, *limit);
  if (!set) {
    if (set.err().code == error_code::store_failed) {
      store_failed(set.err());
    } else {
      refuse(set.err().code == error_code::store_full ? 409 : 400, set.err().field, set.err().message);
    }
    return;
  }
  res.status = *set == override_change::created ? 201 : 200;
  std::string body = one(name, *key, *limit);
  body.pop_back();
  body += ",\"change\":";
  append_json_string(body, *set == override_change::created    ? "created"
                           : *set == override_change::replaced ? "replaced"
                                                               : "unchanged");
  body += "}\n";
  res.body = std::move(body);
}

}  // namespace sluice::serve
