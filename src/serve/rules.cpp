// Matching requests to rules and building their keys (rules.hpp).
#include "rules.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "sluice/store.hpp"

namespace sluice::serve {

namespace {

char lower_ascii(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The host of a Host header, without a port, compared lower-case.
std::string_view host_only(std::string_view h) noexcept {
  h = trim(h);
  if (!h.empty() && h.front() == '[') {
    const auto close = h.find(']');
    return close == std::string_view::npos ? h : h.substr(0, close + 1);
  }
  const auto colon = h.find(':');
  return colon == std::string_view::npos ? h : h.substr(0, colon);
}

bool iequals_host(std::string_view a, std::string_view lower_b) noexcept { return iequals(a, lower_b); }

}  // namespace

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

std::optional<std::string_view> query_param(std::string_view target, std::string_view name) noexcept {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = target.substr(q + 1);
  const auto hash = rest.find('#');
  if (hash != std::string_view::npos) rest = rest.substr(0, hash);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == name) return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return std::nullopt;
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

rule_set::rule_set(const config& c)
    : trusted_(c.trusted_proxies), forwarded_(c.forwarded_header), key_bytes_(c.lim.key_bytes) {
  forwarded_is_list_ = iequals(forwarded_, "X-Forwarded-For");
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

std::string_view rule_set::client_of(const request_view& r) const noexcept {
  if (forwarded_.empty()) return r.peer;
  if (std::find(trusted_.begin(), trusted_.end(), r.peer) == trusted_.end()) return r.peer;
  const auto h = r.header(forwarded_);
  if (!h) return r.peer;
  std::string_view v = *h;
  if (forwarded_is_list_) {
    const auto comma = v.rfind(',');
    if (comma != std::string_view::npos) v = v.substr(comma + 1);
  }
  v = trim(v);
  return v.empty() ? r.peer : v;
}

std::optional<error> rule_set::plan(const request_view& r, std::vector<planned_check>& out) const {
  out.clear();
  const std::string_view path = path_of(r.target);
  std::optional<std::string_view> host;
  bool host_read = false;
  const auto get_host = [&]() -> std::optional<std::string_view> {
    if (!host_read) {
      host_read = true;
      if (auto h = r.header("Host")) host = host_only(*h);
    }
    return host;
  };
  for (std::size_t ri = 0; ri < rules_.size(); ++ri) {
    const compiled_rule& ru = rules_[ri];
    const match_spec& m = ru.match;
    if (!m.methods.empty() && std::find(m.methods.begin(), m.methods.end(), r.method) == m.methods.end()) continue;
    if (!m.path_prefix.empty() && path.substr(0, m.path_prefix.size()) != m.path_prefix) continue;
    if (!m.host.empty()) {
      const auto h = get_host();
      if (!h || !iequals_host(*h, m.host)) continue;
    }
    bool headers_match = true;
    for (const auto& [name, value] : m.headers) {
      const auto h = r.header(name);
      if (!h || (value && *h != *value)) {
        headers_match = false;
        break;
      }
    }
    if (!headers_match) continue;

    std::string key;
    bool complete = true;
    for (std::size_t pi = 0; pi < ru.key.size() && complete; ++pi) {
      if (pi > 0) key += ':';
      const key_part& part = ru.key[pi];
      std::optional<std::string_view> v;
      switch (part.from) {
        case key_source::client:
          v = client_of(r);
          break;
        case key_source::header:
          v = r.header(part.arg);
          break;
        case key_source::path:
          v = path_segment(path, part.segment);
          break;
        case key_source::query:
          v = query_param(r.target, part.arg);
          break;
        case key_source::literal:
          v = part.arg;
          break;
        case key_source::method:
          v = r.method;
          break;
        case key_source::host:
          v = get_host();
          break;
      }
      if (!v) {
        complete = false;
        break;
      }
      if (part.from == key_source::host) {
        std::string lowered(*v);
        for (char& c : lowered) c = lower_ascii(c);
        append_key_part(key, lowered);
      } else {
        append_key_part(key, *v);
      }
      if (key.size() > key_bytes_)
        return error{"key",
                     "the key of rule '" + ru.name + "' is longer than " + std::to_string(key_bytes_) + " bytes"};
    }
    if (!complete) continue;

    std::int64_t cost = ru.cost.fixed;
    if (!ru.cost.header.empty()) {
      if (const auto h = r.header(ru.cost.header)) {
        const std::string_view t = trim(*h);
        std::int64_t v = 0;
        const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        if (t.empty() || ec != std::errc{} || ptr != t.data() + t.size() || v < 1)
          return error{"cost", "header " + ru.cost.header + " must be a whole number of at least 1"};
        cost = v;
      }
    }
    if (out.size() == max_checks)
      return error{"checks", "the request matches more than " + std::to_string(max_checks) + " rules"};
    out.push_back(planned_check{ru.policy, std::move(key), cost, ru.shadow, ri});
  }
  return std::nullopt;
}

}  // namespace sluice::serve
