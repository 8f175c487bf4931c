// Fuzz target: the service's TOML configuration parser never crashes, and
// every error names the place as NAME:LINE:COLUMN; a configuration it
// accepts has valid policy names and rules that name defined policies.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = sluice::serve::parse_config(text, "fuzz.toml");
  if (!c) {
    const std::string& where = c.err().field;
    if (where.rfind("fuzz.toml:", 0) != 0 || c.err().message.empty()) std::abort();
    const auto colon = where.find(':', 10);
    if (colon == std::string::npos || colon == 10 || colon + 1 >= where.size()) std::abort();
    return 0;
  }
  if (c->policies.empty()) std::abort();
  for (const auto& p : c->policies)
    if (!sluice::serve::valid_policy_name(p.name)) std::abort();
  for (const auto& r : c->rules) {
    if (c->find_policy(r.policy) == nullptr || r.key.empty() || r.cost.fixed < 1) std::abort();
  }
  return 0;
}
