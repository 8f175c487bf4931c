// Reading envoyproxy/ratelimit's YAML files (envoy_yaml.hpp) with yaml-cpp,
// whose node marks place every error at FILE:LINE:COLUMN.
#include "envoy_yaml.hpp"

#include <glob.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "sluice/core/policy_expr.hpp"

namespace sluice::serve {

namespace {

// The most descriptors one file may hold (an alias can repeat a subtree:
// bounds the work a small hostile file can ask for), and the deepest nesting
// (the entries of one descriptor, as an [[envoy]] rule's).
constexpr std::size_t max_descriptors = 100'000;
constexpr std::size_t max_depth = 8;
// The largest file read.
constexpr off_t max_file_bytes = off_t{16} << 20;

std::string place(const std::string& file, const YAML::Mark& m) {
  if (m.is_null()) return file;
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// A stable short tag of a text (FNV-1a, 32 bits, in hex): a generated
// policy name that must be cut keeps its identity across reloads.
std::string tag_of(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (char ch : s) {
    h ^= static_cast<unsigned char>(ch);
    h *= 16777619u;
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(8, '0');
  for (int i = 7; i >= 0; --i, h >>= 4) out[static_cast<std::size_t>(i)] = hex[h & 15u];
  return out;
}

// Whether `s` is a YAML float as yaml.v2 reads one:
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool yaml_float(std::string_view s) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0) ++i;
    return i - from;
  };
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// A plain (unquoted) YAML scalar as envoyproxy/ratelimit's YAML reader
// (yaml.v2, YAML 1.1) types it: null, a boolean, a number (protobuf's
// Struct holds every number as a double), else the text.
nlohmann::json typed_scalar(const std::string& s) {
  static constexpr std::string_view nulls[] = {"", "~", "null", "Null", "NULL"};
  static constexpr std::string_view trues[] = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
  static constexpr std::string_view falses[] = {"n",     "N",     "no",  "No",  "NO", "false",
                                                "False", "FALSE", "off", "Off", "OFF"};
  const auto in = [&](const auto& list) { return std::find(std::begin(list), std::end(list), s) != std::end(list); };
  if (in(nulls)) return nullptr;
  if (in(trues)) return true;
  if (in(falses)) return false;
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::numeric_limits<double>::quiet_NaN();
  for (std::string_view sign : {"", "+", "-"})
    for (std::string_view word : {".inf", ".Inf", ".INF"})
      if (s == std::string(sign) + std::string(word)) return sign == "-" ? -inf : inf;
  if (s[0] == '.') return yaml_float(s) ? nlohmann::json(std::strtod(s.c_str(), nullptr)) : nlohmann::json(s);
  if (std::isdigit(static_cast<unsigned char>(s[0])) == 0 && s[0] != '+' && s[0] != '-') return s;
  // Integers (strconv.ParseInt/ParseUint with base 0, after dropping '_'):
  // decimal, 0x, 0o, 0b, a leading 0 for octal.
  std::string plain;
  for (char ch : s)
    if (ch != '_') plain += ch;
  std::string_view digits = plain;
  const bool negative = digits[0] == '-';
  if (digits[0] == '-' || digits[0] == '+') digits.remove_prefix(1);
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  } else if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'o' || digits[1] == 'O')) {
    base = 8;
    digits.remove_prefix(2);
  } else if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'b' || digits[1] == 'B')) {
    base = 2;
    digits.remove_prefix(2);
  } else if (digits.size() > 1 && digits[0] == '0') {
    base = 8;
    digits.remove_prefix(1);
  }
  std::uint64_t u = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), u, base);
  if (!digits.empty() && ec == std::errc{} && end == digits.data() + digits.size()) {
    if (!negative) return static_cast<double>(u);
    if (u <= std::uint64_t{1} << 63) return -static_cast<double>(u);
  }
  if (yaml_float(plain)) return std::strtod(plain.c_str(), nullptr);
  return s;
}

// One file being read.
class reader {
 public:
  reader(const std::string& file, config& c) : file_(file), c_(c) {}

  std::optional<error> document(const YAML::Node& root);

 private:
  error at(const YAML::Node& n, const std::string& message) const { return error{place(file_, n.Mark()), message}; }

  // Every key of the map `n` is one of `known`, and none is given twice.
  std::optional<error> keys(const YAML::Node& n, const std::string& where,
                            std::initializer_list<std::string_view> known) const;
  // A string scalar.
  std::optional<error> text(const YAML::Node& n, const std::string& where, std::string& out) const;
  std::optional<error> boolean(const YAML::Node& n, const std::string& where, bool& out) const;
  // `metadata`: any YAML value, as a JSON value (typed_scalar).
  std::optional<error> metadata(const YAML::Node& n, const std::string& where, std::size_t depth,
                                nlohmann::json& out) const;

  std::optional<error> descriptors(const YAML::Node& list, const std::string& where, std::vector<envoy_entry>& path,
                                   std::vector<envoy_node>& level);
  std::optional<error> descriptor(const YAML::Node& d, const std::string& where, std::vector<envoy_entry>& path,
                                  std::vector<envoy_node>& level, std::vector<YAML::Mark>& marks);
  std::optional<error> rate_limit(const YAML::Node& r, const std::string& where, const std::vector<envoy_entry>& path,
                                  bool shadow, envoy_node& node);
  std::string policy_name(const std::string& path_name) const;

  const std::string& file_;
  config& c_;
  std::string domain_;
  std::size_t seen_ = 0;
  // Every `replaces` name, where it was written: each must name a limit.
  std::vector<std::pair<std::string, YAML::Mark>> replaced_;
};

std::optional<error> reader::keys(const YAML::Node& n, const std::string& where,
                                  std::initializer_list<std::string_view> known) const {
  if (!n.IsMap()) return at(n, where + ": must be a mapping of key: value");
  std::vector<std::string> seen;
  for (const auto& kv : n) {
    const YAML::Node& k = kv.first;
    const std::string name = k.IsScalar() ? k.Scalar() : std::string();
    if (!k.IsScalar() || std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (auto s : known) list += (list.empty() ? "" : ", ") + std::string(s);
      return at(k, "unknown key '" + name + "' in " + where + " (known: " + list + ")");
    }
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) return at(k, where + "." + name + ": given twice");
    seen.push_back(name);
  }
  return std::nullopt;
}

std::optional<error> reader::text(const YAML::Node& n, const std::string& where, std::string& out) const {
  if (!n.IsScalar()) return at(n, where + ": must be a string");
  out = n.Scalar();
  return std::nullopt;
}

std::optional<error> reader::boolean(const YAML::Node& n, const std::string& where, bool& out) const {
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, out)) return at(n, where + ": must be true or false");
  return std::nullopt;
}

std::optional<error> reader::metadata(const YAML::Node& n, const std::string& where, std::size_t depth,
                                      nlohmann::json& out) const {
  if (depth > 64) return at(n, where + ": nested deeper than 64");
  if (n.IsNull()) {
    out = nullptr;
  } else if (n.IsScalar()) {
    // A quoted scalar (tag "!") or one tagged !!str is text; a plain one is typed.
    out = n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str" ? nlohmann::json(n.Scalar()) : typed_scalar(n.Scalar());
    // protobuf's Struct holds UTF-8 text only (that service refuses other bytes too).
    try {
      (void)out.dump();
    } catch (const nlohmann::json::exception&) {
      return at(n, where + ": not UTF-8 text");
    }
  } else if (n.IsSequence()) {
    out = nlohmann::json::array();
    std::size_t i = 0;
    for (const YAML::Node& item : n) {
      nlohmann::json v;
      if (auto e = metadata(item, where + "[" + std::to_string(i++) + "]", depth + 1, v)) return e;
      out.push_back(std::move(v));
    }
  } else if (n.IsMap()) {
    out = nlohmann::json::object();
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) return at(kv.first, where + ": a key must be a scalar");
      const std::string& k = kv.first.Scalar();
      if (out.contains(k)) return at(kv.first, where + "." + k + ": given twice");
      nlohmann::json v;
      if (auto e = metadata(kv.second, where + "." + k, depth + 1, v)) return e;
      out[k] = std::move(v);
    }
  }
  return std::nullopt;
}

std::string reader::policy_name(const std::string& path_name) const {
  std::string name = path_name;
  for (char& ch : name)
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0 && ch != '_' && ch != '.' && ch != '-') ch = '_';
  if (name.size() > 64 || c_.find_policy(name) != nullptr) name = name.substr(0, 55) + "-" + tag_of(path_name);
  for (int n = 2; c_.find_policy(name) != nullptr; ++n) name = name.substr(0, 55) + "-" + std::to_string(n);
  return name;
}

std::optional<error> reader::rate_limit(const YAML::Node& r, const std::string& where,
                                        const std::vector<envoy_entry>& path, bool shadow, envoy_node& node) {
  if (auto e = keys(r, where, {"unit", "requests_per_unit", "unlimited", "name", "replaces"})) return e;
  envoy_rule ru;
  ru.domain = domain_;
  ru.entries = path;
  ru.in_tree = true;
  ru.shadow = shadow;
  // The rule's name is envoyproxy's full key: domain.key_value.key...
  ru.name = domain_;
  for (const auto& e : path) ru.name += "." + e.key + (e.value ? "_" + *e.value : "");
  if (const YAML::Node u = r["unlimited"]) {
    if (auto e = boolean(u, where + ".unlimited", ru.unlimited)) return e;
  }
  const YAML::Node unit = r["unit"];
  const YAML::Node rpu = r["requests_per_unit"];
  if (ru.unlimited) {
    if (unit || rpu) return at(unit ? unit : rpu, where + ": an unlimited limit takes no unit nor requests_per_unit");
  } else {
    if (!unit) return at(r, where + ": needs a unit (second, minute, hour, day, week, month or year)");
    if (!rpu) return at(r, where + ": needs requests_per_unit (a whole number; 0 denies every request)");
    std::string unit_text;
    if (auto e = text(unit, where + ".unit", unit_text)) return e;
    std::uint32_t n = 0;
    const std::string& digits = rpu.IsScalar() ? rpu.Scalar() : std::string();
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (!rpu.IsScalar() || digits.empty() || digits[0] == '-' || digits[0] == '+' || ec != std::errc{} ||
        end != digits.data() + digits.size())
      return at(rpu, where + ".requests_per_unit: must be a whole number from 0 to 4294967295 (got '" + digits + "')");
    const auto expr = envoy_unit_policy(unit_text, n);
    if (!expr)
      return at(unit,
                where + ".unit: unknown unit '" + unit_text + "' (second, minute, hour, day, week, month or year)");
    auto p = parse_policy(*expr);
    if (!p) return at(rpu, where + ": " + p.err().message);
    ru.policy = policy_name(ru.name);
    c_.policies.push_back(named_policy{ru.policy, *expr, *p});
  }
  if (const YAML::Node nm = r["name"]) {
    if (auto e = text(nm, where + ".name", ru.limit_name)) return e;
    if (ru.limit_name.empty()) return at(nm, where + ".name: must not be empty");
  }
  if (const YAML::Node rep = r["replaces"]) {
    if (!rep.IsSequence()) return at(rep, where + ".replaces: must be a list of {name: ...}");
    std::size_t i = 0;
    for (const YAML::Node& item : rep) {
      const std::string w = where + ".replaces[" + std::to_string(i++) + "]";
      if (auto e = keys(item, w, {"name"})) return e;
      std::string name;
      if (!item["name"]) return at(item, w + ": needs a name");
      if (auto e = text(item["name"], w + ".name", name)) return e;
      if (name.empty()) return at(item["name"], w + ".name: must not be empty");
      if (name == ru.limit_name) return at(item["name"], w + ".name: a limit cannot replace itself");
      ru.replaces.push_back(name);
      replaced_.emplace_back(name, item["name"].Mark());
    }
  }
  node.rule = c_.envoy.size();
  c_.envoy.push_back(std::move(ru));
  return std::nullopt;
}

std::optional<error> reader::descriptor(const YAML::Node& d, const std::string& where, std::vector<envoy_entry>& path,
                                        std::vector<envoy_node>& level, std::vector<YAML::Mark>& marks) {
  if (++seen_ > max_descriptors)
    return at(d, where + ": more than " + std::to_string(max_descriptors) + " descriptors in one file");
  if (auto e = keys(d, where,
                    {"key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode", "detailed_metric",
                     "value_to_metric", "share_threshold", "metadata"}))
    return e;
  envoy_node node;
  if (!d["key"]) return at(d, where + ": every descriptor needs a key");
  if (auto e = text(d["key"], where + ".key", node.entry.key)) return e;
  if (node.entry.key.empty()) return at(d["key"], where + ".key: must not be empty");
  if (const YAML::Node v = d["value"]; v && !v.IsNull()) {
    std::string value;
    if (auto e = text(v, where + ".value", value)) return e;
    // As envoyproxy/ratelimit: an empty value is no value (any value), and
    // a value holding '*' a wildcard.
    if (!value.empty()) {
      node.entry.wildcard = value.find('*') != std::string::npos;
      node.entry.value = value;
    }
  }
  const auto at_name = [&](const envoy_entry& e) {
    return "key '" + e.key + "'" + (e.value ? std::string(" value '") + *e.value + "'" : "");
  };
  for (std::size_t k = 0; k < level.size(); ++k)
    if (level[k].entry == node.entry)
      return at(d, where + ": a descriptor with " + at_name(node.entry) + " is already at " + place(file_, marks[k]) +
                       " (only one would ever match)");
  if (path.size() == max_depth)
    return at(d, where + ": descriptors nest at most " + std::to_string(max_depth) + " deep");
  bool shadow = false;
  if (const YAML::Node s = d["shadow_mode"]) {
    if (auto e = boolean(s, where + ".shadow_mode", shadow)) return e;
  }
  bool quota = false;
  if (const YAML::Node q = d["quota_mode"]) {
    if (auto e = boolean(q, where + ".quota_mode", quota)) return e;
  }
  // sluice's metrics are per rule already (each limit its own policy).
  for (const char* ignored_key : {"detailed_metric", "value_to_metric"}) {
    bool ignored = false;
    if (const YAML::Node m = d[ignored_key]) {
      if (auto e = boolean(m, where + "." + ignored_key, ignored)) return e;
    }
  }
  if (const YAML::Node st = d["share_threshold"]) {
    if (auto e = boolean(st, where + ".share_threshold", node.share_threshold)) return e;
    // As that service: only where its full key (key_value) holds a '*'.
    if (node.share_threshold && !node.entry.wildcard && node.entry.key.find('*') == std::string::npos)
      return at(st, where + ".share_threshold: only a wildcard value (one holding '*') can share its limit, and " +
                        at_name(node.entry) + " is none");
  }
  std::shared_ptr<const nlohmann::json> meta;
  if (const YAML::Node m = d["metadata"]; m && !m.IsNull()) {
    if (!m.IsMap()) return at(m, where + ".metadata: must be a mapping of key: value");
    auto j = std::make_shared<nlohmann::json>();
    if (auto e = metadata(m, where + ".metadata", 0, *j)) return e;
    if (!j->empty()) meta = std::move(j);
  }
  path.push_back(node.entry);
  if (const YAML::Node r = d["rate_limit"]; r && !r.IsNull()) {
    if (auto e = rate_limit(r, where + ".rate_limit", path, shadow, node)) return e;
    c_.envoy[*node.rule].quota = quota;
    c_.envoy[*node.rule].metadata = std::move(meta);
  }
  if (const YAML::Node nested = d["descriptors"]) {
    if (auto e = descriptors(nested, where + ".descriptors", path, node.children)) return e;
  }
  path.pop_back();
  level.push_back(std::move(node));
  marks.push_back(d.Mark());
  return std::nullopt;
}

std::optional<error> reader::descriptors(const YAML::Node& list, const std::string& where,
                                         std::vector<envoy_entry>& path, std::vector<envoy_node>& level) {
  if (list.IsNull()) return std::nullopt;
  if (!list.IsSequence()) return at(list, where + ": must be a list of descriptors (- key: ...)");
  std::vector<YAML::Mark> marks;
  std::size_t i = 0;
  for (const YAML::Node& d : list)
    if (auto e = descriptor(d, where + "[" + std::to_string(i++) + "]", path, level, marks)) return e;
  return std::nullopt;
}

std::optional<error> reader::document(const YAML::Node& root) {
  if (!root || root.IsNull()) return error{file_ + ":1:1", "empty: an envoyproxy/ratelimit file needs a domain"};
  if (auto e = keys(root, "the file", {"domain", "descriptors"})) return e;
  const YAML::Node dn = root["domain"];
  if (!dn) return at(root, "needs a domain (domain: NAME)");
  if (auto e = text(dn, "domain", domain_)) return e;
  if (domain_.empty()) return at(dn, "domain: must not be empty");
  for (const auto& t : c_.envoy_trees)
    if (t.domain == domain_) return at(dn, "domain '" + domain_ + "' is already configured at " + t.file);
  for (const auto& r : c_.envoy)
    if (r.domain == domain_)
      return at(dn, "domain '" + domain_ + "' is already configured by the [[envoy]] rule '" + r.name +
                        "' (a domain comes from one place)");
  envoy_tree tree;
  tree.domain = domain_;
  tree.file = place(file_, dn.Mark());
  std::vector<envoy_entry> path;
  if (const YAML::Node list = root["descriptors"]) {
    if (auto e = descriptors(list, "descriptors", path, tree.nodes)) return e;
  }
  for (const auto& [name, mark] : replaced_) {
    const bool known = std::any_of(c_.envoy.begin(), c_.envoy.end(),
                                   [&](const envoy_rule& r) { return r.domain == domain_ && r.limit_name == name; });
    if (!known)
      return error{place(file_, mark), "replaces: no rate_limit of domain '" + domain_ + "' is named '" + name + "'"};
  }
  c_.envoy_trees.push_back(std::move(tree));
  return std::nullopt;
}

}  // namespace

std::optional<std::string> envoy_unit_policy(std::string_view unit, std::uint32_t requests_per_unit) {
  static constexpr std::pair<std::string_view, std::string_view> units[] = {
      {"second", "1s"}, {"minute", "1m"}, {"hour", "1h"},  {"day", "1d"},
      {"week", "7d"},   {"month", "30d"}, {"year", "365d"}};
  const std::string u = lower(unit);
  for (const auto& [name, window] : units)
    if (u == name) return "fixed-window " + std::to_string(requests_per_unit) + "/" + std::string(window);
  return std::nullopt;
}

std::optional<error> read_envoy_yaml(std::string_view text, const std::string& file, config& c) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return error{place(file, e.mark), e.msg};
  }
  if (docs.size() > 1)
    return error{file, "holds " + std::to_string(docs.size()) + " YAML documents; write one domain per file"};
  // A copy to work on: a file with an error leaves `c` as it was.
  config next = c;
  reader r(file, next);
  try {
    if (auto e = r.document(docs.empty() ? YAML::Node() : docs[0])) return e;
  } catch (const YAML::Exception& e) {
    return error{place(file, e.mark), e.msg};
  }
  c = std::move(next);
  return std::nullopt;
}

std::optional<error> load_envoy_files(std::span<const std::string> patterns, const std::string& base_dir,
                                      const std::string& where, config& c) {
  for (const std::string& pattern : patterns) {
    const std::string full = !pattern.empty() && pattern[0] == '/' ? pattern : base_dir + "/" + pattern;
    glob_t g{};
    const int rc = ::glob(full.c_str(), 0, nullptr, &g);  // a folder that is missing: no match
    std::vector<std::string> files;
    for (std::size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (rc == GLOB_NOMATCH || (rc == 0 && files.empty()))
      return error{where, "envoy_config: '" + pattern + "' names no file (looked for " + full + ")"};
    if (rc != 0) return error{where, "envoy_config: cannot read the folder of '" + pattern + "'"};
    for (const std::string& f : files) {
      // Only regular files, of a bounded size: a pattern that names a device
      // or a FIFO must not hang the service (or the configuration fuzzer).
      struct stat sb {};
      if (::stat(f.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode))
        return error{where, "envoy_config: '" + f + "' is not a regular file"};
      if (sb.st_size > max_file_bytes)
        return error{where,
                     "envoy_config: '" + f + "' is larger than " + std::to_string(max_file_bytes >> 20) + " MiB"};
      std::ifstream in(f, std::ios::binary);
      if (!in) return error{where, "envoy_config: cannot read '" + f + "'"};
      std::ostringstream s;
      s << in.rdbuf();
      if (auto e = read_envoy_yaml(s.str(), f, c)) return e;
    }
  }
  return std::nullopt;
}

}  // namespace sluice::serve
