// `sluice replay`: a trace through one limiter per key, one row per request.
#pragma once

#include <iosfwd>
#include <string>

#include "options.hpp"

namespace sluice::cli {

struct replay_flags {
  std::string algorithm;
  std::string policy;         ///< --policy EXPR: the limiter as an expression, instead of --algorithm and its flags
  bool policy_given = false;  ///< whether --policy was given (even empty)
  limiter_flags limits;
  std::string format = "csv";
  std::string trace = "-";
  std::string save_state;        ///< --save-state FILE: every key's state at the end, as a snapshot
  std::string load_state;        ///< --load-state FILE: start from a snapshot's states
  std::string store = "memory";  ///< --store SPEC: where the states live (store_flag.hpp)
  std::string store_prefix;      ///< --store-prefix P: a remote store's key prefix (empty: fresh per run)
};

/// Adds the `replay` subcommand to `app`, filling `f` when it is parsed.
CLI::App* add_replay(CLI::App& app, replay_flags& f);

/// Runs a replay; returns the exit status (2 on bad flags or a bad trace line,
/// after writing every row before it, or on a snapshot that cannot be read
/// or written). The trace is the clock: --save-state stores the states
/// relative to the latest time in the trace, and --load-state places them
/// back at that same time, so a second trace continues the first.
int run_replay(const replay_flags& f, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace sluice::cli
