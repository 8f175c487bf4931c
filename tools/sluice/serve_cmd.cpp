// `sluice serve` (serve_cmd.hpp): builds the configuration, the store and
// the service, binds, serves, and at the end saves the memory store's
// snapshot.
#include "serve_cmd.hpp"

#include <pthread.h>
#include <signal.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <mutex>
#include <optional>
#include <ostream>

#include "cli.hpp"
#include "http_api.hpp"
#include "server.hpp"
#include "service.hpp"
#include "store_kinds.hpp"
#include "stores.hpp"
#ifdef SLUICE_WITH_ENVOY
#include "envoy_service.hpp"
#endif

namespace sluice::cli {

namespace {

// One line per change of a remote store's health (store_options::
// on_health_change), from whichever thread saw it.
void log_health(std::string_view line) {
  static std::mutex mu;
  const std::lock_guard lock(mu);
  std::cerr << "sluice serve: " << line << std::endl;
}

}  // namespace

CLI::App* add_serve(CLI::App& app, serve_flags& f) {
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "The decision service: HTTP (JSON API, nginx auth_request, metrics) and Envoy's gRPC rate limit service "
      "(--grpc)");
  cmd->add_option("--config", f.config, "the TOML configuration file (see docs/serve.md)");
  cmd->add_option("--check", f.check, "validate a configuration file and exit (errors name file:line:column)");
  cmd->add_option("--policy", f.policy, "without a file: the one policy, e.g. 'gcra 100/1m burst=20'");
  cmd->add_option("--key", f.key, "without a file: the key, e.g. header:X-Api-Key, client, query:key (default client)");
  cmd->add_option("--listen", f.listen, "the decision listener, HOST:PORT (default 127.0.0.1:8080)");
  cmd->add_option("--admin", f.admin, "the admin listener (POST /admin/reload), HOST:PORT");
  cmd->add_option("--grpc", f.grpc,
                  "Envoy's gRPC rate limit service (ShouldRateLimit) listener, HOST:PORT; server.token "
                  "and the file's [grpc] TLS apply to it (see docs/serve.md)");
  cmd->add_option("--snapshot", f.snapshot,
                  "memory store: a folder to save the states to at shutdown, and load at start");
  cmd->add_option("--threads", f.threads, "event loops (default: the file's, else one per core)")
      ->check(CLI::Range(1u, 1024u))
      ->each([&f](const std::string&) { f.threads_given = true; });
  return cmd;
}

int run_serve(const serve_flags& f, std::ostream& out, std::ostream& err) {
  using namespace sluice::serve;
  const auto usage = [&](const std::string& msg) {
    err << "sluice: " << msg << "\n";
    return exit_usage;
  };
  // Every error of a file, one a line, each naming FILE:LINE:COLUMN.
  const auto every = [&](const std::vector<sluice::error>& all) {
    for (const auto& e : all) err << "sluice: " << e.what() << "\n";
    return exit_usage;
  };
  std::vector<sluice::error> all;
  if (!f.check.empty()) {
    auto c = load_config(f.check, &all);
    if (!c) return every(all);
    if (!c->store.is_memory()) {
      // The store URL checked as the service would open it (no connection
      // is made): scheme, host, port, db, query, the password's sources.
      if (auto st = serve::make_store(c->store, program_stores()); !st) return usage(st.err().what());
    }
    out << f.check << ": ok (" << c->policies.size() << (c->policies.size() == 1 ? " policy, " : " policies, ")
        << c->rules.size() << (c->rules.size() == 1 ? " rule)" : " rules)") << "\n";
    return exit_ok;
  }
  result<config> c = error{"", ""};
  if (!f.config.empty()) {
    if (!f.policy.empty()) return usage("serve: give --config or --policy, not both");
    c = load_config(f.config, &all);
    if (!c) return every(all);
  } else if (!f.policy.empty()) {
    c = simple_config(f.policy, f.key);
  } else {
    return usage("serve: give --config FILE, or --policy EXPR [--key SPEC] (run 'sluice serve --help')");
  }
  if (!c) return usage(c.err().what());
  config cfg = std::move(c).value();
  if (!f.listen.empty()) {
    auto a = parse_listen(f.listen);
    if (!a) return usage("--listen: " + a.err().message);
    cfg.listen = {*a};
  }
  if (!f.admin.empty()) {
    auto a = parse_listen(f.admin);
    if (!a) return usage("--admin: " + a.err().message);
    cfg.admin = *a;
  }
  if (!f.grpc.empty()) {
    auto a = parse_listen(f.grpc);
    if (!a) return usage("--grpc: " + a.err().message);
    cfg.grpc = *a;
  }
#ifndef SLUICE_WITH_ENVOY
  if (cfg.grpc)
    return usage(std::string(f.grpc.empty() ? "grpc.listen" : "--grpc") +
                 ": this sluice was built without gRPC, so it cannot serve Envoy's rate limit service "
                 "(install libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc and rebuild)");
#endif
  if (f.threads_given) cfg.threads = f.threads;
  if (!f.snapshot.empty()) {
    if (!cfg.store.is_memory()) return usage("--snapshot: only the memory store keeps a snapshot");
    cfg.store.snapshot = f.snapshot;
  }

  // Signals wait until the server's handlers are in place (server::run).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  auto st = serve::make_store(cfg.store, program_stores(), &log_health);
  if (!st) {
    err << "sluice: " << st.err().what() << "\n";
    return 1;
  }
  const store_config store_cfg = cfg.store;
  auto svc = service::create(cfg, std::move(st).value());
  if (!svc) {
    err << "sluice: " << svc.err().what() << "\n";
    return 1;
  }
  service& s = **svc;
  if (!store_cfg.snapshot.empty()) {
    auto loaded = s.load_snapshots(store_cfg.snapshot);
    if (!loaded) {
      err << "sluice: " << loaded.err().what() << "\n";
      return 1;
    }
    err << "sluice serve: snapshot " << store_cfg.snapshot << ": " << loaded->keys << " keys of " << loaded->policies
        << " policies restored, " << loaded->ids << " request ids\n";
    for (const auto& why : loaded->skipped) err << "sluice serve: snapshot: starting fresh: " << why << "\n";
  }
  const auto save = [&](const char* when) {
    if (store_cfg.snapshot.empty()) return true;
    auto saved = s.save_snapshots(store_cfg.snapshot);
    if (!saved) {
      err << "sluice serve: snapshot not saved (" << when << "): " << saved.err().what() << std::endl;
      return false;
    }
    err << "sluice serve: snapshot " << store_cfg.snapshot << ": " << saved->keys << " keys saved (" << when << "), "
        << saved->ids << " request ids" << std::endl;
    return true;
  };
  server_hooks hooks;
  if (!store_cfg.snapshot.empty() && store_cfg.snapshot_interval > 0) {
    hooks.interval = store_cfg.snapshot_interval;
    hooks.on_interval = [&] { save("periodic"); };
  }
  // The front ends, peers over the service: HTTP, and Envoy's gRPC below.
  http_api api(s);
  auto srv = server::bind(api, cfg, std::move(hooks));
  if (!srv) {
    err << "sluice: " << srv.err().what() << "\n";
    return 1;
  }
#ifdef SLUICE_WITH_ENVOY
  // Envoy's gRPC service: started with the signals still blocked, so its
  // threads leave them to the server's loop; stopped after the loop drained.
  std::unique_ptr<envoy::grpc_front_end> grpc;
  if (cfg.grpc) {
    auto g = envoy::grpc_front_end::start(s, *cfg.grpc, cfg.grpc_tls);
    if (!g) {
      err << "sluice: " << g.err().what() << "\n";
      return 1;
    }
    grpc = std::move(g).value();
    const auto& a = grpc->address();
    err << "sluice serve: listening on grpc://" << (a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host)
        << ":" << a.port << " (envoy"
        << (!cfg.grpc_tls                          ? ""
            : cfg.grpc_tls->client_ca_file.empty() ? ", TLS"
                                                   : ", TLS with client certificates")
        << ")\n";
  }
#endif
  (*srv)->run(err);
#ifdef SLUICE_WITH_ENVOY
  if (grpc) grpc->shutdown(cfg.lim.drain_timeout);
#endif
  return save("shutdown") ? exit_ok : 1;
}

}  // namespace sluice::cli
