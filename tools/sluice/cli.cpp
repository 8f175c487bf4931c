// Argument parsing for every subcommand (CLI11); the subcommands live in
// their own files. Every usage error prints "sluice: ..." and exits 2.
#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <ostream>

#include <unistd.h>

#include <iostream>

#include "compare.hpp"
#include "replay.hpp"
#include "store_flag.hpp"
#include "worst_case_cmd.hpp"

namespace sluice::cli {

int run(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err) {
  CLI::App app{"sluice: an exact rate limiter. With no command, the P096 explorer.", "sluice"};
  app.set_version_flag("--version", "sluice 0.1.0");
  bool echo = false;
  app.add_flag("--echo", echo, "explorer: print each input line after its prompt, as a terminal would");
  CLI::App* explore = app.add_subcommand("explore", "The P096 explorer: one trace through three limiters");
  bool explore_echo = false;
  explore->add_flag("--echo", explore_echo, "print each input line after its prompt, as a terminal would");
  replay_flags replay;
  CLI::App* replay_cmd = add_replay(app, replay);
  add_store_flag(*replay_cmd, replay.store, &replay.store_prefix);
  compare_flags compare;
  CLI::App* compare_cmd = add_compare(app, compare);
  worst_case_flags worst;
  CLI::App* worst_cmd = add_worst_case(app, worst);
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return exit_ok;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return exit_ok;
  } catch (const CLI::CallForVersion&) {
    out << "sluice 0.1.0\n";
    return exit_ok;
  } catch (const CLI::ParseError& e) {
    err << "sluice: " << e.what() << "\n(run 'sluice --help' for usage)\n";
    return exit_usage;
  }
  if (replay_cmd->parsed()) return run_replay(replay, in, out, err);
  if (worst_cmd->parsed()) return run_worst_case(worst, out, err);
  if (compare_cmd->parsed()) {
    // A progress bar only for a person watching a terminal.
    const bool progress = &err == &std::cerr && isatty(STDERR_FILENO) != 0;
    return run_compare(compare, in, out, err, progress);
  }
  return run_explore(in, out, echo || explore_echo);
}

}  // namespace sluice::cli
