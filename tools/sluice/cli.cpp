// Argument parsing for every subcommand; the subcommands live in their own
// files.
#include "cli.hpp"

#include <ostream>

namespace sluice::cli {
int run(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err) {
  (void)argc; (void)argv; (void)err;
  return run_explore(in, out, false);
}
}  // namespace sluice::cli
