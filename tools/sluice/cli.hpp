// The sluice command, callable in-process (tests drive it this way; main()
// only forwards to `run`).
#pragma once

#include <iosfwd>

namespace sluice::cli {

/// Exit statuses of the command.
inline constexpr int exit_ok = 0;
inline constexpr int exit_output = 1;  ///< the output could not be written (a full disk, a closed stdout)
inline constexpr int exit_usage = 2;   ///< bad flags, bad trace, bad input of any kind

/// Runs `sluice` with `argv` (argv[0] is the program name), reading standard
/// input from `in` and writing to `out` and `err`. Returns the exit status.
int run(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err);

/// The P096 explorer: the interactive menu. With `echo`, each input line is
/// printed after its prompt, so a piped session shows what a terminal would.
/// Ends with status 0 on "quit" or at the end of input; 1 (a message on
/// `err`) when `out` cannot be written, 2 when `in` cannot be read.
int run_explore(std::istream& in, std::ostream& out, std::ostream& err, bool echo);

}  // namespace sluice::cli
