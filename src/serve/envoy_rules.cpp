// The [grpc] and [[envoy]] sections of the service's configuration, and
// matching Envoy descriptors to their rules (envoy_rules.hpp).
#include "envoy_rules.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "envoy_yaml.hpp"
#include "rules.hpp"

namespace sluice::serve {

namespace {

error at_node(const std::string& file, const toml::node& n, const std::string& message) {
  const auto p = n.source().begin;
  return error{file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column), message};
}

// Every key of `t` must be one of `known`.
std::optional<error> only(const std::string& file, const toml::table& t, std::string_view where,
                          std::initializer_list<std::string_view> known) {
  for (auto&& [k, v] : t) {
    if (std::find(known.begin(), known.end(), k.str()) != known.end()) continue;
    std::string list;
    for (auto n : known) list += (list.empty() ? "" : ", ") + std::string(n);
    const auto p = k.source().begin;
    return error{file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column),
                 "unknown key '" + std::string(k.str()) + "' in " + std::string(where) + " (known: " + list + ")"};
  }
  return std::nullopt;
}

// One descriptor entry: "key" (any value), "key=value" (exactly that value),
// or an inline table {key = "...", value = "..."}.
result<envoy_entry> read_entry(const std::string& file, const toml::node& n, const std::string& where) {
  envoy_entry e;
  if (const auto* s = n.as_string()) {
    const std::string& text = s->get();
    const auto eq = text.find('=');
    e.key = text.substr(0, eq);
    if (eq != std::string::npos) e.value = text.substr(eq + 1);
  } else if (const auto* t = n.as_table()) {
    if (auto err = only(file, *t, where, {"key", "value"})) return *err;
    const auto* k = t->get_as<std::string>("key");
    if (k == nullptr) return at_node(file, n, where + ": needs key = \"...\"");
    e.key = k->get();
    if (const toml::node* v = t->get("value")) {
      const auto* vs = v->as_string();
      if (vs == nullptr) return at_node(file, *v, where + ".value: must be a string");
      e.value = vs->get();
    }
  } else {
    return at_node(file, n, where + ": must be \"key\", \"key=value\" or {key = \"...\", value = \"...\"}");
  }
  if (e.key.empty()) return at_node(file, n, where + ": the entry's key must not be empty");
  if (e.value && e.value->empty())
    return at_node(file, n, where + ": the value after '=' must not be empty (write \"" + e.key + "\" for any value)");
  return e;
}

std::optional<error> read_envoy_rule(const std::string& file, const toml::table& t, std::size_t index, config& c) {
  const std::string where = "envoy[" + std::to_string(index) + "]";
  if (auto e = only(file, t, where, {"name", "domain", "descriptor", "policy"})) return e;
  envoy_rule ru;
  ru.name = "envoy " + std::to_string(index + 1);
  if (const toml::node* n = t.get("name")) {
    const auto* s = n->as_string();
    if (s == nullptr) return at_node(file, *n, where + ".name: must be a string");
    ru.name = s->get();
  }
  const toml::node* dn = t.get("domain");
  if (dn == nullptr) return at_node(file, t, where + ": every [[envoy]] rule needs a domain");
  if (dn->as_string() == nullptr || dn->as_string()->get().empty())
    return at_node(file, *dn, where + ".domain: must be a non-empty string (Envoy's rate limit domain)");
  ru.domain = dn->as_string()->get();
  const toml::node* en = t.get("descriptor");
  if (en == nullptr)
    return at_node(file, t, where + ": needs descriptor = [\"key\", \"key=value\", ...] (the descriptor's entries)");
  if (const auto* a = en->as_array()) {
    if (a->empty()) return at_node(file, *en, where + ".descriptor: must name at least one entry");
    if (a->size() > 8) return at_node(file, *en, where + ".descriptor: at most 8 entries");
    std::size_t i = 0;
    for (const toml::node& e : *a) {
      auto entry = read_entry(file, e, where + ".descriptor[" + std::to_string(i++) + "]");
      if (!entry) return entry.err();
      ru.entries.push_back(*entry);
    }
  } else if (en->as_string() != nullptr) {
    auto entry = read_entry(file, *en, where + ".descriptor");
    if (!entry) return entry.err();
    ru.entries.push_back(*entry);
  } else {
    return at_node(file, *en,
                   where + ".descriptor: must be an array of entries, e.g. [\"generic_key=checkout\", \"user\"]");
  }
  const toml::node* pn = t.get("policy");
  if (pn == nullptr) return at_node(file, t, where + ": every [[envoy]] rule needs a policy");
  if (pn->as_string() == nullptr) return at_node(file, *pn, where + ".policy: must be a string");
  ru.policy = pn->as_string()->get();
  if (c.find_policy(ru.policy) == nullptr) {
    std::string known;
    for (const auto& p : c.policies) known += (known.empty() ? "" : ", ") + p.name;
    return at_node(
        file, *pn,
        where + ".policy: unknown policy '" + ru.policy + "' (defined: " + (known.empty() ? "none" : known) + ")");
  }
  for (std::size_t k = 0; k < c.envoy.size(); ++k) {
    if (c.envoy[k].domain == ru.domain && c.envoy[k].entries == ru.entries)
      return at_node(file, *en,
                     where + ".descriptor: the same domain and descriptor as envoy[" + std::to_string(k) +
                         "] (only the first would ever apply)");
  }
  c.envoy.push_back(std::move(ru));
  return std::nullopt;
}

// Whether `text` holds a PEM block whose label holds `kind` ("-----BEGIN
// CERTIFICATE-----"; "PRIVATE KEY" is in "EC PRIVATE KEY" too).
bool has_pem_block(std::string_view text, std::string_view kind) {
  constexpr std::string_view begin = "-----BEGIN ";
  for (auto at = text.find(begin); at != std::string_view::npos; at = text.find(begin, at + 1)) {
    const auto label = at + begin.size();
    const auto end = text.find("-----", label);
    if (end == std::string_view::npos) return false;
    if (text.substr(label, end - label).find(kind) != std::string_view::npos) return true;
  }
  return false;
}

// A PEM file of [grpc]'s TLS keys: its text, or an error naming the key. A
// file without a block of `kind` is refused here, not by gRPC at start.
result<std::string> read_pem(const std::string& file, const toml::node& n, std::string_view key,
                             std::string_view kind) {
  const std::string field = "grpc." + std::string(key);
  const auto* s = n.as_string();
  if (s == nullptr || s->get().empty()) return at_node(file, n, field + ": must be a path (a string)");
  const std::string& path = s->get();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return at_node(file, n, field + ": '" + path + "' is a folder");
  std::ifstream in(path, std::ios::binary);
  if (!in) return at_node(file, n, field + ": cannot read '" + path + "' (" + std::strerror(errno) + ")");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return at_node(file, n, field + ": cannot read '" + path + "'");
  if (text.empty()) return at_node(file, n, field + ": '" + path + "' is empty");
  if (!has_pem_block(text, kind))
    return at_node(file, n,
                   field + ": '" + path + "' holds no PEM " + std::string(kind) + " (\"-----BEGIN " +
                       std::string(kind) + "-----\")");
  return text;
}

// [grpc]'s TLS keys into c.grpc_tls: a certificate and its key, both or
// neither; the client CAs only beside them.
void read_grpc_tls(const std::string& file, const toml::table& t, config& c, std::vector<error>& errs) {
  const toml::node* cert = t.get("tls_cert_file");
  const toml::node* key = t.get("tls_key_file");
  const toml::node* ca = t.get("tls_client_ca_file");
  if (cert == nullptr && key == nullptr && ca == nullptr) return;
  if (cert == nullptr || key == nullptr) {
    const toml::node* given = cert != nullptr ? cert : key != nullptr ? key : ca;
    const std::string missing = cert == nullptr && key == nullptr ? "tls_cert_file and tls_key_file"
                                : cert == nullptr                 ? "tls_cert_file"
                                                                  : "tls_key_file";
    const std::string what = cert != nullptr ? "tls_cert_file" : key != nullptr ? "tls_key_file" : "tls_client_ca_file";
    errs.push_back(at_node(file, *given,
                           "grpc." + what + ": needs " + missing +
                               " beside it (TLS on the gRPC listener takes a certificate and its key)"));
    return;
  }
  tls_files tls;
  bool ok = true;
  const auto take = [&](const toml::node* n, std::string_view name, std::string_view block, std::string& path,
                        std::string& pem) {
    auto text = read_pem(file, *n, name, block);
    if (!text) {
      errs.push_back(text.err());
      ok = false;
      return;
    }
    path = n->as_string()->get();
    pem = std::move(text).value();
  };
  take(cert, "tls_cert_file", "CERTIFICATE", tls.cert_file, tls.cert_pem);
  take(key, "tls_key_file", "PRIVATE KEY", tls.key_file, tls.key_pem);
  if (ca != nullptr) take(ca, "tls_client_ca_file", "CERTIFICATE", tls.client_ca_file, tls.client_ca_pem);
  if (ok) c.grpc_tls = std::move(tls);
}

}  // namespace

void read_envoy_sections(const std::string& file, const toml::table& doc, config& c, std::vector<error>& errs) {
  std::vector<std::string> yaml_files;
  const toml::node* yaml_node = nullptr;
  if (const toml::node* n = doc.get("grpc")) {
    const auto* t = n->as_table();
    if (t == nullptr) {
      errs.push_back(at_node(file, *n, "grpc must be a table ([grpc])"));
    } else if (auto e = only(file, *t, "grpc",
                             {"listen", "envoy_config", "dynamic_metadata", "tls_cert_file", "tls_key_file",
                              "tls_client_ca_file"})) {
      errs.push_back(*e);
    } else {
      read_grpc_tls(file, *t, c, errs);
      if (const toml::node* dn = t->get("dynamic_metadata")) {
        if (const auto* b = dn->as_boolean())
          c.grpc_dynamic_metadata = b->get();
        else
          errs.push_back(at_node(file, *dn, "grpc.dynamic_metadata: must be true or false"));
      }
      if (const toml::node* yn = t->get("envoy_config")) {
        const auto bad = [&] {
          errs.push_back(at_node(file, *yn,
                                 "grpc.envoy_config: must be a path or an array of paths of envoyproxy/ratelimit "
                                 "YAML files (globs allowed, e.g. \"ratelimit/*.yaml\")"));
        };
        bool ok = true;
        if (const auto* s = yn->as_string()) {
          yaml_files.push_back(s->get());
        } else if (const auto* a = yn->as_array()) {
          for (const toml::node& item : *a) {
            if (item.as_string() == nullptr || item.as_string()->get().empty())
              ok = false;
            else
              yaml_files.push_back(item.as_string()->get());
          }
        } else {
          ok = false;
        }
        if (ok && (yaml_files.empty() || yaml_files[0].empty())) ok = false;
        if (ok)
          yaml_node = yn;
        else
          bad();
      }
      if (const toml::node* ln = t->get("listen")) {
        if (const auto* s = ln->as_string(); s == nullptr) {
          errs.push_back(at_node(file, *ln, "grpc.listen: must be a string, e.g. \"127.0.0.1:8081\""));
        } else if (auto a = parse_listen(s->get()); !a) {
          errs.push_back(at_node(file, *ln, "grpc.listen: " + a.err().message));
        } else {
          c.grpc = *a;
        }
      }
    }
  }
  if (const toml::node* n = doc.get("envoy")) {
    const auto* a = n->as_array();
    if (a == nullptr || !a->is_array_of_tables()) {
      errs.push_back(at_node(file, *n, "envoy must be an array of tables ([[envoy]])"));
      return;
    }
    std::size_t i = 0;
    for (const toml::node& e : *a)
      if (auto err = read_envoy_rule(file, *e.as_table(), i++, c)) errs.push_back(*err);
  }
  // The envoyproxy/ratelimit files, from the folder of this file.
  if (yaml_node != nullptr) {
    std::string base = std::filesystem::path(file).parent_path().string();
    if (base.empty()) base = ".";
    const auto p = yaml_node->source().begin;
    const std::string where = file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
    if (auto e = load_envoy_files(yaml_files, base, where, c)) errs.push_back(*e);
  }
}

namespace {

// The node of `level` an entry leads to, envoyproxy/ratelimit's way: the
// exact value (a wildcard's own text too), else the first wildcard in file
// order that matches, else the key alone (semantics.md, "Envoy descriptors
// from envoyproxy/ratelimit files"). `through_wildcard` says which.
const envoy_node* step(const std::vector<envoy_node>& level, const entry_view& e, bool& through_wildcard) {
  const envoy_node* wild = nullptr;
  const envoy_node* any = nullptr;
  through_wildcard = false;
  for (const envoy_node& n : level) {
    if (n.entry.key != e.key) continue;
    if (!n.entry.value) {
      if (any == nullptr) any = &n;
    } else if (*n.entry.value == e.value) {
      return &n;
    } else if (wild == nullptr && n.entry.wildcard && envoy_wildcard_match(*n.entry.value, e.value)) {
      wild = &n;
    }
  }
  through_wildcard = wild != nullptr;
  return wild != nullptr ? wild : any;
}

std::optional<std::size_t> match_tree(const envoy_tree& t, std::span<const entry_view> entries,
                                      std::span<entry_view> keyed) {
  const std::vector<envoy_node>* level = &t.nodes;
  for (std::size_t k = 0; k < entries.size(); ++k) {
    bool through_wildcard = false;
    const envoy_node* n = step(*level, entries[k], through_wildcard);
    if (n == nullptr) return std::nullopt;
    if (!keyed.empty()) {
      keyed[k] = entries[k];
      if (through_wildcard && n->share_threshold) keyed[k].value = *n->entry.value;
    }
    if (k + 1 == entries.size()) return n->rule;
    level = &n->children;
  }
  return std::nullopt;
}

}  // namespace

bool envoy_wildcard_match(std::string_view pattern, std::string_view value) noexcept {
  const std::size_t first = pattern.find('*');
  if (first == std::string_view::npos) return pattern == value;
  const std::size_t last = pattern.rfind('*');
  const std::string_view head = pattern.substr(0, first);
  const std::string_view tail = pattern.substr(last + 1);
  // The fixed texts must fit: then head and tail cannot overlap in `value`.
  std::size_t fixed = 0;
  for (char ch : pattern) fixed += ch == '*' ? 0 : 1;
  if (value.size() < fixed || !value.starts_with(head) || !value.ends_with(tail)) return false;
  std::string_view rest = value.substr(head.size(), value.size() - head.size() - tail.size());
  // The texts between the first and the last '*', each at its leftmost place.
  std::string_view middle = pattern.substr(first + 1, last - first);  // ends with '*'
  while (!middle.empty()) {
    const std::size_t star = middle.find('*');
    const std::string_view part = middle.substr(0, star);
    middle.remove_prefix(star + 1);
    const std::size_t at = rest.find(part);
    if (at == std::string_view::npos) return false;
    rest.remove_prefix(at + part.size());
  }
  return true;
}

std::optional<std::size_t> match_envoy(const config& c, std::string_view domain, std::span<const entry_view> entries,
                                       std::span<entry_view> keyed) {
  for (const envoy_tree& t : c.envoy_trees)
    if (t.domain == domain) return match_tree(t, entries, keyed);
  for (std::size_t i = 0; i < c.envoy.size(); ++i) {
    const envoy_rule& r = c.envoy[i];
    if (r.in_tree || r.domain != domain || r.entries.size() != entries.size()) continue;
    bool ok = true;
    for (std::size_t k = 0; k < entries.size() && ok; ++k)
      ok = r.entries[k].key == entries[k].key && (!r.entries[k].value || *r.entries[k].value == entries[k].value);
    if (ok) {
      if (!keyed.empty()) std::copy(entries.begin(), entries.end(), keyed.begin());
      return i;
    }
  }
  return std::nullopt;
}

bool knows_domain(const config& c, std::string_view domain) noexcept {
  return std::any_of(c.envoy.begin(), c.envoy.end(), [&](const envoy_rule& r) { return r.domain == domain; }) ||
         std::any_of(c.envoy_trees.begin(), c.envoy_trees.end(),
                     [&](const envoy_tree& t) { return t.domain == domain; });
}

void envoy_key(std::span<const entry_view> entries, std::string& out) {
  out.clear();
  for (std::size_t k = 0; k < entries.size(); ++k) {
    if (k > 0) out += ':';
    append_key_part(out, entries[k].value);
  }
}

}  // namespace sluice::serve
