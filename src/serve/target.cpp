// Request targets: forms, path normalisation, query parameters (target.hpp).
#include "target.hpp"

namespace sluice::serve {

namespace {

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of the escape at s[i] ('%' there), or -1 when it is no escape.
int escape_at(std::string_view s, std::size_t i) noexcept {
  if (i + 2 >= s.size()) return -1;
  const int hi = hex_value(s[i + 1]);
  const int lo = hex_value(s[i + 2]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

bool control(unsigned char c) noexcept { return c < 0x20 || c == 0x7F; }

bool iequals_prefix(std::string_view s, std::string_view lower_prefix) noexcept {
  if (s.size() < lower_prefix.size()) return false;
  for (std::size_t i = 0; i < lower_prefix.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower_prefix[i]) return false;
  }
  return true;
}

// A segment that is "." or ".." followed by ';' (path parameters).
bool dot_with_parameters(std::string_view seg) noexcept {
  return (seg.size() >= 2 && seg[0] == '.' && seg[1] == ';') ||
         (seg.size() >= 3 && seg[0] == '.' && seg[1] == '.' && seg[2] == ';');
}

// Whether a raw path is already normal: starts with '/', no byte that
// needs decoding or is invalid, no empty segment but a last one, no dot
// segment. A false answer only means the slow path decides.
bool already_normal(std::string_view p) noexcept {
  if (p.empty() || p[0] != '/') return false;
  std::size_t start = 1;
  for (std::size_t i = 1; i <= p.size(); ++i) {
    if (i < p.size()) {
      const auto c = static_cast<unsigned char>(p[i]);
      if (c == '%' || c == '\\' || c == '#' || control(c)) return false;
      if (c != '/') continue;
    }
    const std::string_view seg = p.substr(start, i - start);
    if (seg.empty() && i < p.size()) return false;
    if (seg == "." || seg == ".." || dot_with_parameters(seg)) return false;
    start = i + 1;
  }
  return true;
}

}  // namespace

std::optional<target_parts> split_target(std::string_view target) noexcept {
  target_parts out;
  std::string_view rest = target;
  if (!rest.empty() && rest.front() != '/') {
    std::size_t scheme = 0;
    if (iequals_prefix(rest, "http://")) {
      scheme = 7;
    } else if (iequals_prefix(rest, "https://")) {
      scheme = 8;
    } else {
      return std::nullopt;
    }
    rest.remove_prefix(scheme);
    const auto end = rest.find_first_of("/?#");
    const std::string_view authority = rest.substr(0, end);
    if (authority.empty() || authority.find('@') != std::string_view::npos) return std::nullopt;
    out.authority = authority;
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
    if (!rest.empty() && rest.front() == '#') return std::nullopt;
    if (rest.empty() || rest.front() == '?') {
      // "http://host" or "http://host?q": the path is "/".
      out.path = "/";
      if (!rest.empty()) out.query = rest.substr(1);
      return out;
    }
  }
  if (rest.empty()) return std::nullopt;
  const auto q = rest.find('?');
  out.path = rest.substr(0, q);
  if (q != std::string_view::npos) out.query = rest.substr(q + 1);
  return out;
}

path_form normalise_path(std::string_view raw, std::string& out) {
  if (already_normal(raw)) return path_form::normal;
  if (raw.empty() || raw[0] != '/') return path_form::invalid;
  // Decode first: an encoded slash is refused, so the segments of the
  // decoded path are those of the raw one.
  std::string decoded;
  decoded.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    auto c = static_cast<unsigned char>(raw[i]);
    if (c == '#') return path_form::invalid;
    if (c == '%') {
      const int v = escape_at(raw, i);
      if (v < 0 || v == '/') return path_form::invalid;
      c = static_cast<unsigned char>(v);
      i += 2;
    }
    if (c == '\\' || control(c)) return path_form::invalid;
    decoded += static_cast<char>(c);
  }
  out.clear();
  out.reserve(decoded.size());
  bool trailing = false;
  std::size_t start = 1;
  const std::string_view d = decoded;
  for (std::size_t i = 1; i <= d.size(); ++i) {
    if (i < d.size() && d[i] != '/') continue;
    const std::string_view seg = d.substr(start, i - start);
    const bool last = i == d.size();
    start = i + 1;
    trailing = last && (seg.empty() || seg == "." || seg == "..");
    if (seg.empty() || seg == ".") continue;
    if (seg == "..") {
      if (out.empty()) return path_form::invalid;  // above the root
      out.resize(out.rfind('/'));
      continue;
    }
    if (dot_with_parameters(seg)) return path_form::invalid;
    out += '/';
    out += seg;
  }
  if (out.empty() || trailing) out += '/';
  return path_form::rewritten;
}

namespace {

// Decodes a query name or value ('+' a space); false on a bad escape.
bool decode_query(std::string_view s, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      const int v = escape_at(s, i);
      if (v < 0) return false;
      out += static_cast<char>(v);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return true;
}

}  // namespace

query_form query_value(std::string_view query, std::string_view name, std::string& out) {
  if (query.find('#') != std::string_view::npos) return query_form::invalid;
  bool found = false;
  std::string decoded_name;
  std::string_view rest = query;
  while (true) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const auto eq = pair.find('=');
    const std::string_view raw_name = pair.substr(0, eq);
    bool same = false;
    if (raw_name.find_first_of("%+") == std::string_view::npos) {
      same = raw_name == name;
    } else {
      if (!decode_query(raw_name, decoded_name)) return query_form::invalid;  // it might be `name`
      same = decoded_name == name;
    }
    if (same) {
      if (found) return query_form::invalid;
      found = true;
      if (!decode_query(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), out))
        return query_form::invalid;
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return found ? query_form::found : query_form::absent;
}

std::optional<std::string_view> routed_path(std::string_view target, std::string& buf) {
  const auto parts = split_target(target);
  if (!parts) return std::nullopt;
  switch (normalise_path(parts->path, buf)) {
    case path_form::normal:
      return parts->path;
    case path_form::rewritten:
      return std::string_view(buf);
    case path_form::invalid:
      break;
  }
  return std::nullopt;
}

}  // namespace sluice::serve
