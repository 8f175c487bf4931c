// A redis-server that loads sluice's Redis module (build/sluice_module.so):
// the build gives its path as SLUICE_MODULE_PATH to the test binaries that
// start one (tests/redis, tests/redis_module); a build without the module
// gives "" and such a test fails, naming it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "support/redis_server.hpp"

namespace sluice::testing {

/// build/sluice_module.so; "" when the build has no module.
inline std::string module_path() { return SLUICE_MODULE_PATH; }

/// Options of a server that loads the module, plus `extra` lines.
inline redis_server_options with_module(std::vector<std::string> extra = {}) {
  redis_server_options o;
  o.extra_config = std::move(extra);
  o.extra_config.push_back("loadmodule " + module_path());
  return o;
}

}  // namespace sluice::testing
