// Matching requests to rules and building their keys (rules.hpp).
#include "rules.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "sluice/core/store.hpp"
#include "target.hpp"

namespace sluice::serve {

namespace {

char lower_ascii(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// The host of a Host header, without a port, compared lower-case.
std::string_view host_only(std::string_view h) noexcept {
  h = trim_ows(h);
  if (!h.empty() && h.front() == '[') {
    const auto close = h.find(']');
    return close == std::string_view::npos ? h : h.substr(0, close + 1);
  }
  const auto colon = h.find(':');
  return colon == std::string_view::npos ? h : h.substr(0, colon);
}

bool iequals_host(std::string_view a, std::string_view lower_b) noexcept { return iequals(a, lower_b); }

}  // namespace

std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower_ascii(a[i]) != lower_ascii(b[i])) return false;
  return true;
}

std::optional<std::string_view> request_view::header(std::string_view name) const noexcept {
  for (const auto& h : headers)
    if (iequals(h.name, name)) return h.value;
  return std::nullopt;
}

void append_key_part(std::string& key, std::string_view value) {
  for (const char c : value) {
    if (c == ':') {
      key += "%3A";
    } else if (c == '%') {
      key += "%25";
    } else {
      key += c;
    }
  }
}

std::string_view path_of(std::string_view target) noexcept {
  const auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

std::optional<std::string_view> path_segment(std::string_view path, std::size_t n) noexcept {
  std::size_t seen = 0;
  while (!path.empty()) {
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    if (path.empty()) break;
    const auto slash = path.find('/');
    const std::string_view seg = path.substr(0, slash);
    if (++seen == n) return seg;
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash);
  }
  return std::nullopt;
}

rule_set::rule_set(const config& c) : forwarded_(c.trusted_proxies, c.forwarded_header), key_bytes_(c.lim.key_bytes) {
  for (const auto& r : c.rules) {
    compiled_rule cr;
    cr.match = r.match;
    for (std::size_t i = 0; i < c.policies.size(); ++i)
      if (c.policies[i].name == r.policy) cr.policy = i;
    cr.key = r.key;
    cr.cost = r.cost;
    cr.shadow = r.shadow;
    cr.name = r.name;
    rules_.push_back(std::move(cr));
  }
}

std::optional<error> rule_set::plan(const request_view& r, std::vector<planned_check>& out) const {
  out.clear();
  // Each part of the request is worked out once, when a rule first reads it.
  enum class got : unsigned char { unread, ok, invalid };
  const std::optional<target_parts> parts = split_target(r.target);
  got path_state = got::unread;
  std::string path_buf;
  std::string_view path;
  const auto read_path = [&]() -> bool {
    if (path_state == got::unread) {
      path_state = got::invalid;
      if (parts) {
        switch (normalise_path(parts->path, path_buf)) {
          case path_form::normal:
            path = parts->path;
            path_state = got::ok;
            break;
          case path_form::rewritten:
            path = path_buf;
            path_state = got::ok;
            break;
          case path_form::invalid:
            break;
        }
      }
    }
    return path_state == got::ok;
  };
  // A header a rule reads must be there at most once: servers disagree about
  // which of two counts.
  enum class hdr : unsigned char { absent, one, twice };
  const auto read_header = [&](std::string_view name, std::string_view& value) -> hdr {
    std::size_t n = 0;
    for (const auto& h : r.headers) {
      if (!iequals(h.name, name)) continue;
      if (++n > 1) return hdr::twice;
      value = h.value;
    }
    return n == 0 ? hdr::absent : hdr::one;
  };
  std::string_view host;
  got host_state = got::unread;
  bool has_host = false;
  const auto read_host = [&]() -> bool {
    if (host_state == got::unread) {
      host_state = got::ok;
      if (parts && parts->authority) {
        host = host_only(*parts->authority);
        has_host = true;
      } else {
        std::string_view h;
        const hdr n = read_header("Host", h);
        if (n == hdr::twice) host_state = got::invalid;
        if (n == hdr::one) {
          host = host_only(h);
          has_host = true;
        }
      }
    }
    return host_state == got::ok;
  };
  std::string query_buf;
  std::string client_buf;
  std::size_t enforced = 0;
  for (std::size_t ri = 0; ri < rules_.size(); ++ri) {
    const compiled_rule& ru = rules_[ri];
    const match_spec& m = ru.match;
    // Whether the rule applies; on an unreadable request, `bad` says why.
    std::optional<error> bad;
    const auto invalid = [&](std::string_view field, std::string message) {
      bad = error{std::string(field), "rule '" + ru.name + "': " + std::move(message)};
      return false;
    };
    std::string key;
    std::int64_t cost = ru.cost.fixed;
    const auto applies = [&]() -> bool {
      if (!m.methods.empty() && std::find(m.methods.begin(), m.methods.end(), r.method) == m.methods.end())
        return false;
      if (!m.path_prefix.empty()) {
        if (!read_path()) return invalid("path", "the path cannot be normalised safely");
        if (path.substr(0, m.path_prefix.size()) != m.path_prefix) return false;
      }
      if (!m.host.empty()) {
        if (!read_host()) return invalid("header", "more than one Host");
        if (!has_host || !iequals_host(host, m.host)) return false;
      }
      for (const auto& [name, value] : m.headers) {
        std::string_view h;
        const hdr n = read_header(name, h);
        if (n == hdr::twice) return invalid("header", "more than one " + name);
        if (n == hdr::absent || (value && h != *value)) return false;
      }
      for (std::size_t pi = 0; pi < ru.key.size(); ++pi) {
        if (pi > 0) key += ':';
        const key_part& part = ru.key[pi];
        std::string_view v;
        switch (part.from) {
          case key_source::client:
            if (auto why = forwarded_.client(r.headers, r.peer, client_buf)) return invalid("header", *why);
            v = client_buf;
            break;
          case key_source::header: {
            const hdr n = read_header(part.arg, v);
            if (n == hdr::twice) return invalid("header", "more than one " + part.arg);
            if (n == hdr::absent) return false;
            break;
          }
          case key_source::path: {
            if (!read_path()) return invalid("path", "the path cannot be normalised safely");
            const auto seg = path_segment(path, part.segment);
            if (!seg) return false;
            v = *seg;
            break;
          }
          case key_source::query: {
            if (!parts) return invalid("path", "the target is neither origin-form nor absolute-form");
            // Some servers split pairs at ';' as at '&': no one reading is safe.
            if (parts->query.find(';') != std::string_view::npos)
              return invalid("query", "the query holds a ';' (a separator to some servers)");
            const query_form q = query_value(parts->query, part.arg, query_buf);
            if (q == query_form::invalid)
              return invalid("query", "parameter " + part.arg + " is given twice or badly escaped");
            if (q == query_form::absent) return false;
            v = query_buf;
            break;
          }
          case key_source::literal:
            v = part.arg;
            break;
          case key_source::method:
            v = r.method;
            break;
          case key_source::host:
            if (!read_host()) return invalid("header", "more than one Host");
            if (!has_host) return false;
            v = host;
            break;
        }
        if (part.from == key_source::host) {
          std::string lowered(v);
          for (char& c : lowered) c = lower_ascii(c);
          append_key_part(key, lowered);
        } else {
          append_key_part(key, v);
        }
        if (key.size() > key_bytes_)
          return invalid("key", "the key is longer than " + std::to_string(key_bytes_) + " bytes");
      }
      if (!ru.cost.header.empty()) {
        std::string_view h;
        const hdr n = read_header(ru.cost.header, h);
        if (n == hdr::twice) return invalid("cost", "more than one " + ru.cost.header);
        if (n == hdr::one) {
          const std::string_view t = trim_ows(h);
          std::int64_t v = 0;
          const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
          if (t.empty() || ec != std::errc{} || ptr != t.data() + t.size() || v < 1)
            return invalid("cost", "header " + ru.cost.header + " must be a whole number of at least 1");
          cost = v;
        }
      }
      return true;
    };
    const bool ok = applies();
    if (!ok && !bad) continue;
    if (ru.shadow) {
      // A shadow rule never fails the request: its check is counted as invalid.
      out.push_back(planned_check{ru.policy, bad ? std::string() : std::move(key), cost, true, ri, bad.has_value()});
      continue;
    }
    if (bad) return bad;
    if (enforced == max_checks)
      return error{"checks", "the request matches more than " + std::to_string(max_checks) + " rules"};
    ++enforced;
    out.push_back(planned_check{ru.policy, std::move(key), cost, false, ri, false});
  }
  return std::nullopt;
}

}  // namespace sluice::serve
