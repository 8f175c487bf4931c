// sluice: main() parses nothing itself; cli::run does, and maps errors to
// exit statuses.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>

#include "cli.hpp"

namespace {

/// A standard descriptor the caller closed (`sluice >&-`) is held by
/// /dev/null opened the wrong way round, so that writing standard output
/// (or reading standard input) fails with EBADF as on the closed one, and no
/// file the command opens (a --save-state temporary, a --plot) can become
/// descriptor 0, 1 or 2 and receive what was meant for them.
void hold_closed_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int held = ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    if (held >= 0 && held != fd) {
      ::dup2(held, fd);
      ::close(held);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  hold_closed_standard_descriptors();
  std::ios::sync_with_stdio(false);
  return sluice::cli::run(argc, argv, std::cin, std::cout, std::cerr);
}
