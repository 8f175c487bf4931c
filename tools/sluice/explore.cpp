// Placeholder: the P096 explorer is being written.
#include "cli.hpp"

#include <ostream>

namespace sluice::cli {
int run_explore(std::istream&, std::ostream& out, bool) {
  out << "explorer not built yet\n";
  return exit_ok;
}
}  // namespace sluice::cli
