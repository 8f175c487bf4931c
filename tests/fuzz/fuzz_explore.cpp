// Fuzz target: the P096 explorer on arbitrary keystrokes ends, with status
// 0, and never crashes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "cli.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::ostringstream out;
  std::ostringstream err;
  if (sluice::cli::run_explore(in, out, err, size % 2 == 0) != 0) std::abort();
  return 0;
}
