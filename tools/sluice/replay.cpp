#include "replay.hpp"

#include <absl/container/flat_hash_map.h>

#include <fstream>
#include <istream>
#include <memory>
#include <ostream>

#include "cli.hpp"
#include "input.hpp"
#include "output.hpp"
#include "trace.hpp"

namespace sluice::cli {

CLI::App* add_replay(CLI::App& app, replay_flags& f) {
  CLI::App* sub = app.add_subcommand("replay", "Replay a trace through one limiter per key, one row per request");
  sub->add_option("--algorithm", f.algorithm, "fixed-window, sliding-log, sliding-counter, sliding-buckets, "
                                              "token-bucket, gcra, leaky-queue, quota")
      ->required();
  add_limit_flags(*sub, f.limits);
  sub->add_option("--format", f.format, "csv (default), json (JSON Lines) or table");
  sub->add_option("trace", f.trace, "the trace file, one 'TIME [KEY [COST]]' a line (seconds); '-' or none: stdin");
  return sub;
}

int run_replay(const replay_flags& f, std::istream& in, std::ostream& out, std::ostream& err) {
  auto algo = parse_algorithm("--algorithm", f.algorithm);
  if (!algo) return usage_error(err, algo.err());
  auto policy = build_policy(*algo, f.limits);
  if (!policy) return usage_error(err, policy.err());
  const auto fmt = format_named(f.format);
  if (!fmt) return usage_error(err, error{"--format", quote_input(f.format) + " is not a format (csv, json or table)"});
  opened_input trace;
  if (auto e = trace.open(f.trace, in)) return usage_error(err, *e);

  const any_policy& p = *policy;
  decision_writer writer(out, *fmt, *algo == algorithm::leaky_queue);
  writer.header();
  // One state per key; the empty key (lines without one) is kept apart so
  // the common single-limiter case does no hashing.
  any_state shared = fresh_state(p);
  absl::flat_hash_map<std::string, any_state> keyed;
  trace_reader reader(trace.stream());
  request r;
  std::uint64_t n = 0;
  while (reader.next(r)) {
    any_state* s = &shared;
    if (!r.key.empty()) {
      auto it = keyed.find(absl::string_view(r.key.data(), r.key.size()));
      if (it == keyed.end()) it = keyed.emplace(std::string(r.key), fresh_state(p)).first;
      s = &it->second;
    }
    const decision d = decide(p, *s, r.time, r.cost);
    writer.row(++n, r, d);
  }
  writer.flush();
  if (!reader.error().empty()) return usage_error(err, error{"", reader.error()});
  return exit_ok;
}

}  // namespace sluice::cli
