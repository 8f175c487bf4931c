// `sluice serve`: the HTTP decision service (src/serve/), started from a
// configuration file or, for the simple case, from --policy and --key.
#pragma once

#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace sluice::cli {

/// The flags of `sluice serve`.
struct serve_flags {
  std::string config;          ///< --config FILE
  std::string check;           ///< --check FILE: validate and exit
  std::string policy;          ///< --policy EXPR (no file)
  std::string key = "client";  ///< --key SPEC (no file)
  std::string listen;          ///< --listen ADDR: replaces the file's listeners
  std::string admin;           ///< --admin ADDR
  std::string grpc;            ///< --grpc ADDR: Envoy's rate limit service (replaces [grpc] listen)
  std::string snapshot;        ///< --snapshot DIR (memory store)
  unsigned threads = 0;        ///< --threads N (0: the file's, else the core count)
  bool threads_given = false;
};

/// Adds the subcommand to `app`; returns it.
CLI::App* add_serve(CLI::App& app, serve_flags& f);

/// Runs it: validates (--check) or serves until SIGTERM. Exit 0 on a clean
/// stop or a valid file, 2 on a usage or configuration error, 1 when the
/// service cannot start (a port in use, a store that cannot be built).
int run_serve(const serve_flags& f, std::ostream& out, std::ostream& err);

}  // namespace sluice::cli
