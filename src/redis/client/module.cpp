// The module's commands as the client sees them (module.hpp): the probe at
// login and what its replies show.
#include "redis/client/module.hpp"

#include "redis/client/client.hpp"

namespace sluice::redis {

std::optional<module_use> module_use_of(std::string_view text) noexcept {
  if (text == "auto") return module_use::automatic;
  if (text == "on") return module_use::on;
  if (text == "off") return module_use::off;
  return std::nullopt;
}

namespace {

/// The letters SLUICE.INFO's reply `r` gives, for the protocol `protocol`;
/// nullopt with `why` set when it is not a module this client may use.
std::optional<letter_set> read_info(const reply& r, std::string_view protocol, std::string& why) {
  if (const auto err = r.as_error()) {
    if (err->starts_with("NOPERM"))
      why = "the ACL refuses SLUICE.INFO";
    else if (err->starts_with("ERR unknown command"))
      why = "a module without SLUICE.INFO (older than version " + std::to_string(module_min_version) + ")";
    else
      why = "SLUICE.INFO answered " + std::string(*err);
    return std::nullopt;
  }
  const auto* items = r.as_array();
  if (items == nullptr || items->size() % 2 != 0) {
    why = "SLUICE.INFO's reply is not field-value pairs";
    return std::nullopt;
  }
  std::optional<std::int64_t> version;
  std::optional<std::string_view> proto, letters;
  for (std::size_t i = 0; i + 1 < items->size(); i += 2) {
    const auto field = (*items)[i].as_string();
    if (!field) continue;
    const reply& v = (*items)[i + 1];
    if (*field == "version") version = v.as_integer();
    if (*field == "protocol") proto = v.as_string();
    if (*field == "letters") letters = v.as_string();
  }
  if (!version || !proto || !letters) {
    why = "SLUICE.INFO's reply lacks its version, protocol or letters";
    return std::nullopt;
  }
  if (*version < module_min_version) {
    why = "module version " + std::to_string(*version) + ", older than " + std::to_string(module_min_version);
    return std::nullopt;
  }
  if (*proto != protocol) {
    why = "module protocol " + std::string(*proto) + ", not " + std::string(protocol);
    return std::nullopt;
  }
  letter_set out = 0;
  for (const char c : *letters) {
    if (letter_bit(c) == 0) {
      why = "SLUICE.INFO's letters \"" + std::string(*letters) + "\" are not algorithm letters";
      return std::nullopt;
    }
    out |= letter_bit(c);
  }
  return out;
}

}  // namespace

std::vector<std::vector<std::string_view>> module_probe() {
  std::vector<std::vector<std::string_view>> out;
  for (std::size_t c = 1; c < module_command_names.size(); ++c) {
    // No key, and what the command's own check refuses before it reads
    // one: an empty argument; for SLUICE.CAS, a request id with no key.
    if (static_cast<module_command>(c) == module_command::cas)
      out.push_back({module_command_names[c], "0", "1", "0", "", ""});
    else
      out.push_back({module_command_names[c], "0", ""});
  }
  out.push_back({"SLUICE.INFO"});
  return out;
}

module_caps read_module_probe(const reply* replies, std::size_t n, std::string_view library) {
  module_caps caps;
  caps.checked = true;
  const std::size_t commands = module_command_names.size() - 1;
  for (std::size_t i = 0; i < n && i < commands; ++i) {
    const std::string_view name = module_command_names[i + 1];
    const auto err = replies[i].as_error();
    // The module's own refusal of the empty call: it is there, and allowed.
    if (err && (err->starts_with("sluice:") || err->starts_with("ERR sluice:"))) {
      caps.commands = static_cast<std::uint16_t>(caps.commands | (1U << (i + 1)));
      continue;
    }
    if (!caps.why.empty()) continue;  // the first reason is the one shown
    if (err && err->starts_with("NOPERM"))
      caps.why = "the ACL refuses " + std::string(name);
    else if (err && err->starts_with("ERR unknown command"))
      caps.why = "no module";
    else
      caps.why = std::string(name) + " answered " + (err ? std::string(*err) : std::string("a reply, not an error"));
  }
  // What it decides, from its own answer (none: the library).
  std::optional<letter_set> letters;
  if (caps.complete()) {
    const std::size_t last = library.rfind('_');
    const std::string_view protocol = last == std::string_view::npos ? library : library.substr(0, last);
    if (n > commands)
      letters = read_info(replies[commands], protocol, caps.why);
    else
      caps.why = "no answer to SLUICE.INFO";
  }
  // Some command missing: the module is not used at all (a partly allowed
  // module would split a key's calls between the paths for nothing).
  if (!letters) caps.commands = 0;
  caps.letters = letters.value_or(0);
  return caps;
}

bool module_did_not_run(std::string_view error) noexcept {
  return error.starts_with("NOPERM") || error.starts_with("ERR unknown command") || module_lacks_letter(error);
}

bool module_lacks_letter(std::string_view error) noexcept { return error.starts_with("sluice: not in the module"); }

std::string describe_path(const module_caps& caps, module_use use) {
  if (use == module_use::off) return "library (module=off)";
  if (!caps.checked) return "unknown";
  if (caps.commands == 0) return "library (" + caps.why + ")";
  std::string letters;
  for (char c = 'a'; c <= 'z'; ++c)
    if ((caps.letters & letter_bit(c)) != 0) {
      if (!letters.empty()) letters += ',';
      letters += c;
    }
  return "module (letters " + letters + ")";
}

}  // namespace sluice::redis
