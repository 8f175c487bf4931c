#include "replay.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <istream>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli.hpp"
#include "input.hpp"
#include "output.hpp"
#include "policy_flag.hpp"
#include "sluice/core/redact.hpp"
#include "sluice/core/store.hpp"
#include "sluice/core/store_limiter.hpp"
#include "sluice/keyed/atomic_file.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"
#include "sluice/keyed/snapshot.hpp"
#include "store_flag.hpp"
#include "trace.hpp"

namespace sluice::cli {

CLI::App* add_replay(CLI::App& app, replay_flags& f) {
  CLI::App* sub = app.add_subcommand("replay", "Replay a trace through one limiter per key, one row per request");
  sub->add_option("--algorithm", f.algorithm,
                  "fixed-window, sliding-log, sliding-counter, sliding-buckets, "
                  "token-bucket, gcra, leaky-queue, quota")
      ->check(non_empty());
  // No non_empty() here: the expression parser refuses an empty one, naming the flag.
  sub->add_option("--policy", f.policy,
                  "the limiter as an expression instead of --algorithm and its flags, e.g. "
                  "'all(token-bucket 10/1s burst=5, fixed-window 1000/1h)'")

      ->each([&f](const std::string&) { f.policy_given = true; });
  add_limit_flags(*sub, f.limits);
  sub->add_option("--format", f.format,
                  "csv (default), json (JSON Lines; a key that is not UTF-8 is written as "
                  "\"key\":null,\"key_hex\":\"...\") or table")
      ->check(non_empty());
  sub->add_option("--load-state", f.load_state,
                  "start from the states in this snapshot (saved by --save-state with the same limiter)")
      ->check(non_empty());
  sub->add_option("--save-state", f.save_state,
                  "at the end, save every key's state to this snapshot (written atomically)")
      ->check(non_empty());
  sub->add_option(
         "trace", f.trace,
         "the trace file, one 'TIME [KEY [COST [OP]]]' a line (seconds; OP: docs/traces.md); '-' or none: stdin")
      ->check(non_empty());
  return sub;
}

int run_replay(const replay_flags& f, std::istream& in, std::ostream& out, std::ostream& err) {
  result<any_policy> policy = error{};
  if (f.policy_given) {
    if (auto e = policy_excludes("--algorithm", !f.algorithm.empty(), f.limits)) return usage_error(err, *e);
    policy = parse_policy_flag(f.policy);
  } else {
    if (f.algorithm.empty()) return usage_error(err, error{"", "--algorithm is required (or --policy EXPR)"});
    auto algo = parse_algorithm("--algorithm", f.algorithm);
    if (!algo) return usage_error(err, algo.err());
    policy = build_policy(*algo, f.limits);
  }
  if (!policy) return usage_error(err, policy.err());
  const auto fmt = format_named(f.format);
  if (!fmt) return usage_error(err, error{"--format", quote_input(f.format) + " is not a format (csv, json or table)"});
  // A target that can never be written is refused before the run.
  if (!f.save_state.empty())
    if (auto t = resolve_write_target(f.save_state); !t)
      return usage_error(err, error{"--save-state", t.err().message});
  opened_input trace;
  if (auto e = trace.open(f.trace, in)) return usage_error(err, *e);

  const any_policy& p = *policy;
  // One state per key in the store (the empty key, lines without one, is a
  // key like any other), each line one request of one check. No automatic
  // purging: a trace whose clock steps back decides exactly as one limiter
  // per key.
  // Assigned, not designated: g++ 12 at -O3 takes the designated
  // initialiser's budget shared_ptr for uninitialised
  // (-Wmaybe-uninitialized, a false positive).
  store_setup setup;
  setup.keyed.shards = 16;
  setup.keyed.auto_purge = false;
  setup.keyed.hash_seed = 1;
  setup.key_prefix = f.store_prefix;
  auto made = make_store(f.store, setup);
  if (!made) return usage_error(err, made.err());
  if (made->memory == nullptr && (!f.load_state.empty() || !f.save_state.empty()))
    return usage_error(err, error{"--store", "snapshots (--load-state, --save-state) need --store memory"});
  auto defined = store_limiter::make(*made->s, "replay", p);
  if (!defined) return usage_error(err, error{"--store", defined.err().what()});
  const store_limiter& limiter = *defined;
  store& backing = *made->s;
  memory_store* const memory = made->memory;
  // The trace is the clock: the snapshot's moment is the latest time seen.
  tick moment = std::numeric_limits<tick>::min();
  if (!f.load_state.empty()) {
    auto snap = read_snapshot(f.load_state, p);
    if (!snap) return usage_error(err, error{"--load-state", snap.err().message});
    auto states = snap->states_at(snap->info().taken_at);
    if (!states) return usage_error(err, error{"--load-state", states.err().message});
    memory->with_keyed(limiter.id(), [&](keyed_limiter& k) { k.restore(*states); });
    moment = snap->info().taken_at;
  }
  decision_writer writer(out, *fmt, has_leaky_queue(p));
  writer.header();
  trace_reader reader(trace.stream(), trace.name());
  reader.take_operations();
  request r;
  std::uint64_t n = 0;
  // A remote store that failed (or found a state it did not write) has no
  // decision of the policy's to show: stop rather than print one.
  const auto not_decided = [&](source from) {
    if (!writer.flush()) return output_error(err, stdout_name, writer.failure());
    err << "sluice: --store: request " << n + 1 << ": the store did not decide (" << name_of(from) << ")";
    if (const auto figures = backing.figures(); figures && !figures->last_failure.empty())
      err << ": " << redact_url(figures->last_failure);
    err << "\n";
    return 1;
  };
  // What a decision's row says beside its figures (docs/traces.md): nothing
  // for a plain one; whether a request id replayed or conflicted.
  const auto decision_outcome = [](source from, const decision& d) -> std::optional<std::string_view> {
    switch (from) {
      case source::store:
        return std::string_view();
      case source::replayed:
        return d.allowed ? "replayed-yes" : "replayed-no";
      case source::id_conflict:
        return "id-conflict";
      default:
        return std::nullopt;
    }
  };
  // The lease each named decision took (docs/traces.md: `release=NAME`).
  std::unordered_map<std::string, std::uint64_t> leases;
  const auto took = [&](std::string_view name, std::uint64_t lease) {
    if (!name.empty() && lease != 0) leases[std::string(name)] = lease;
  };
  // The figures of an answer that must come from the store itself.
  const auto from_store = [](const store_decision& a, decision& d, source& from) {
    d = a.d;
    from = a.from;
    return from == source::store;
  };
  // One line, alone: its figures and outcome, or nothing when the store did
  // not decide it (`from` says what answered instead).
  const auto apply = [&](const request& q, decision& d, source& from) -> std::optional<std::string_view> {
    switch (q.op) {
      case trace_op::decide: {
        const store_decision a = limiter.decide_at(q.key, q.time, q.cost, q.name);
        from_store(a, d, from);
        took(q.name, a.lease);
        return decision_outcome(a.from, d);
      }
      case trace_op::report:
        if (!from_store(limiter.report_at(q.key, q.time, q.cost), d, from)) return std::nullopt;
        return "reported";
      case trace_op::release: {
        // The named decision's lease, released on this line's key (a
        // lease of another key is held nowhere here); then the key's
        // figures, as a decision of the line's cost would read them.
        const auto it = leases.find(std::string(q.name));
        std::int64_t freed = 0;
        if (it != leases.end()) {
          const check c{limiter.id(), q.key};
          const release_result released = backing.release_at({&c, 1}, it->second, q.time);
          from = released.from;
          if (from != source::store) return std::nullopt;
          freed = released.units;
        }
        if (!from_store(limiter.peek_at(q.key, q.time, q.cost), d, from)) return std::nullopt;
        return freed > 0 ? "released" : "not-held";
      }
      case trace_op::refund: {
        // The decision with id NAME refunded, wherever its check was; then
        // the line's key's figures, as a decision of the line's cost would
        // read them.
        const refund_status st = backing.refund_at(q.name, q.time).status;
        if (st == refund_status::error) {
          from = source::error;
          return std::nullopt;
        }
        if (!from_store(limiter.peek_at(q.key, q.time, q.cost), d, from)) return std::nullopt;
        return name_of(st);
      }
    }
    return std::nullopt;
  };
  if (memory != nullptr) {
    decision d;
    source from = source::store;
    while (reader.next(r)) {
      moment = std::max(moment, r.time);
      const auto outcome = apply(r, d, from);
      if (!outcome) return not_decided(from);
      if (!writer.row(++n, r, d, *outcome)) break;  // the output is lost: stop (and save no state)
    }
  } else {
    // A remote store: decisions in batches, each one pipeline (one round
    // trip for `batch` lines instead of one a line), decided in order; the
    // rows are written as each batch comes back. A line of another
    // operation ends its batch and goes alone, after it.
    constexpr std::size_t batch = 128;
    // Each line's key and id, owned: the reader's copy lives only until its
    // next line.
    struct owned_line {
      std::string key;
      std::string id;
    };
    std::vector<owned_line> owned;
    std::vector<request> lines;
    std::vector<store_limiter::request> pending;
    std::vector<store_decision> ds(batch);
    bool more = true;
    bool lost = false;
    while (more && !lost) {
      owned.clear();
      lines.clear();
      std::optional<request> alone;
      std::string alone_key;
      std::string alone_name;
      while (owned.size() < batch && (more = reader.next(r))) {
        if (r.op != trace_op::decide) {
          alone_key = r.key;
          alone_name = r.name;
          alone = r;
          alone->key = alone_key;
          alone->name = alone_name;
          break;
        }
        owned.push_back({std::string(r.key), std::string(r.name)});
        lines.push_back(r);
      }
      pending.clear();
      for (std::size_t i = 0; i < owned.size(); ++i) {
        lines[i].key = owned[i].key;  // the reader's copy is gone
        lines[i].name = owned[i].id;
        pending.push_back({owned[i].key, lines[i].time, lines[i].cost, owned[i].id});
      }
      limiter.decide_many_at(pending, ds);
      for (std::size_t i = 0; i < pending.size(); ++i) {
        const auto outcome = decision_outcome(ds[i].from, ds[i].d);
        if (!outcome) return not_decided(ds[i].from);
        took(owned[i].id, ds[i].lease);
        if (!writer.row(++n, lines[i], ds[i].d, *outcome)) {
          lost = true;  // the output is lost: stop
          break;
        }
      }
      if (alone && !lost) {
        decision d;
        source from = source::store;
        const auto outcome = apply(*alone, d, from);
        if (!outcome) return not_decided(from);
        lost = !writer.row(++n, *alone, d, *outcome);
      }
    }
  }
  if (!writer.flush()) return output_error(err, stdout_name, writer.failure());
  if (!reader.error().empty()) return usage_error(err, error{"", reader.error()});
  if (!f.save_state.empty()) {
    const std::int64_t wall =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    result<snapshot_info> saved = error{};
    memory->with_keyed(limiter.id(), [&](const keyed_limiter& k) {
      saved = save_snapshot(k, f.save_state, moment == std::numeric_limits<tick>::min() ? 0 : moment, wall);
    });
    if (!saved) return output_error(err, "--save-state", saved.err().message);
  }
  return exit_ok;
}

}  // namespace sluice::cli
