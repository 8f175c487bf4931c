// `sluice replay`: a trace through one limiter per key, one row per request.
#pragma once

#include <iosfwd>
#include <string>

#include "options.hpp"

namespace sluice::cli {

struct replay_flags {
  std::string algorithm;
  limiter_flags limits;
  std::string format = "csv";
  std::string trace = "-";
};

/// Adds the `replay` subcommand to `app`, filling `f` when it is parsed.
CLI::App* add_replay(CLI::App& app, replay_flags& f);

/// Runs a replay; returns the exit status (2 on bad flags or a bad trace line,
/// after writing every row before it).
int run_replay(const replay_flags& f, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace sluice::cli
