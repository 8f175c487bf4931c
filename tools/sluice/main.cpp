// sluice: main() parses nothing itself; cli::run does, and maps errors to
// exit statuses.
#include <iostream>

#include "cli.hpp"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  return sluice::cli::run(argc, argv, std::cin, std::cout, std::cerr);
}
