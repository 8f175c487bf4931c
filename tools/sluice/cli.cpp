// Argument parsing for every subcommand (CLI11); the subcommands live in
// their own files. Every usage error prints "sluice: ..." and exits 2.
#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <iostream>
#include <ostream>

#include "compare.hpp"
#include "input.hpp"
#include "output.hpp"
#include "replay.hpp"
#include "serve_cmd.hpp"
#include "store_flag.hpp"
#include "worst_case_cmd.hpp"

namespace sluice::cli {

int run(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "sluice: an exact rate limiter. With no command, the P096 explorer (P096: the interactive rate-limiter\n"
      "explorer sluice reproduces byte for byte: one list of request times through a fixed window, a sliding\n"
      "log and a token bucket set to one limit, and what each really lets through).",
      "sluice"};
  app.set_version_flag("--version", "sluice 0.1.0");
  bool echo = false;
  app.add_flag("--echo", echo, "explorer: print each input line after its prompt, as a terminal would");
  CLI::App* explore = app.add_subcommand("explore",
                                         "The P096 explorer: one list of request times through three limiters (a fixed "
                                         "window, a sliding log, a token bucket)");
  bool explore_echo = false;
  explore->add_flag("--echo", explore_echo, "print each input line after its prompt, as a terminal would");
  replay_flags replay;
  CLI::App* replay_cmd = add_replay(app, replay);
  add_store_flag(*replay_cmd, replay.store, &replay.store_prefix);
  compare_flags compare;
  CLI::App* compare_cmd = add_compare(app, compare);
  worst_case_flags worst;
  CLI::App* worst_cmd = add_worst_case(app, worst);
  serve_flags serve;
  CLI::App* serve_cmd = add_serve(app, serve);
  app.require_subcommand(0, 1);
  const auto written = [&](const std::string& text) {
    if (auto why = write_and_flush(out, text)) return output_error(err, stdout_name, *why);
    return exit_ok;
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return written(app.help());
  } catch (const CLI::CallForAllHelp&) {
    return written(app.help("", CLI::AppFormatMode::All));
  } catch (const CLI::CallForVersion&) {
    return written("sluice 0.1.0\n");
  } catch (const CLI::ParseError& e) {
    err << "sluice: " << escape_message(e.what()) << "\n(run 'sluice --help' for usage)\n";
    return exit_usage;
  }
  if (replay_cmd->parsed()) return run_replay(replay, in, out, err);
  if (serve_cmd->parsed()) return run_serve(serve, out, err);
  if (worst_cmd->parsed()) return run_worst_case(worst, out, err);
  if (compare_cmd->parsed()) {
    // A progress bar only for a person watching a terminal.
    const bool progress = &err == &std::cerr && isatty(STDERR_FILENO) != 0;
    return run_compare(compare, in, out, err, progress);
  }
  return run_explore(in, out, err, echo || explore_echo);
}

}  // namespace sluice::cli
