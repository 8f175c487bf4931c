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

std::vector<std::vector<std::string_view>> module_probe() {
  std::vector<std::vector<std::string_view>> out;
  for (std::size_t c = 1; c < module_command_names.size(); ++c) out.push_back({module_command_names[c], "0", ""});
  return out;
}

module_caps read_module_probe(const reply* replies, std::size_t n) {
  module_caps caps;
  caps.checked = true;
  for (std::size_t i = 0; i < n && i + 1 < module_command_names.size(); ++i) {
    const std::string_view name = module_command_names[i + 1];
    const auto err = replies[i].as_error();
    // The module's own refusal of the empty call: it is there, and allowed.
    if (err && (err->starts_with("sluice:") || err->starts_with("ERR sluice:"))) {
      caps.commands = static_cast<std::uint8_t>(caps.commands | (1U << (i + 1)));
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
  // Some command missing: the module is not used at all (a partly allowed
  // module would split a key's calls between the paths for nothing).
  if (!caps.complete()) caps.commands = 0;
  caps.letters = caps.commands != 0 ? module_letters : 0;
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
