// `sluice compare`: one trace through several limiters set to the same
// limit — what each lets through, the most each lets into any window, and
// the most it could ever let in.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "options.hpp"

namespace sluice::cli {

struct compare_flags {
  std::string algorithms = "fixed-window,sliding-log,token-bucket";
  bool algorithms_given = false;      ///< whether --algorithms was given
  std::vector<std::string> policies;  ///< --policy EXPR, repeatable: one lane each, instead of --algorithms
  std::string window;                 ///< --window W: default the limit's, or the largest in the policies
  limiter_flags limits;
  std::string format = "table";
  std::string plot;
  std::string granularity = "1ns";
  std::string top = "10";
  std::string trace = "-";
};

/// Adds the `compare` subcommand to `app`, filling `f` when it is parsed.
CLI::App* add_compare(CLI::App& app, compare_flags& f);

/// Runs a comparison; returns the exit status (2 on bad flags or trace).
/// `progress` enables a progress bar on `err` (a terminal, reading a file).
int run_compare(const compare_flags& f, std::istream& in, std::ostream& out, std::ostream& err, bool progress);

}  // namespace sluice::cli
