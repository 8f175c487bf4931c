// `sluice worst-case`: the most a limiter can let into any window, over
// every possible trace, and one trace that gets it there.
#pragma once

#include <iosfwd>
#include <string>

#include <CLI/CLI.hpp>

namespace sluice::cli {

struct worst_case_flags {
  std::string policy;
  bool policy_given = false;
  std::string window;  ///< default: the largest window in the policy
  std::string granularity = "1ns";
  std::string format = "table";
};

/// Adds the `worst-case` subcommand to `app`, filling `f` when it is parsed.
CLI::App* add_worst_case(CLI::App& app, worst_case_flags& f);

/// Prints the worst case and its witness. Table (the default): the witness
/// as a trace, one request a line, under '#' comments giving the number, so
/// that it pipes straight into `sluice replay`; csv: the figures in one row;
/// json: the figures and the witness. Returns 0, or 2 on bad flags (the
/// message names the flag).
int run_worst_case(const worst_case_flags& f, std::ostream& out, std::ostream& err);

}  // namespace sluice::cli
