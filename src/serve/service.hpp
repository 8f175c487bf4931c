// The decision service of `sluice serve`, without a network and without a
// protocol: the configuration in force and its reloads, the one decision
// path (its check limit and de-duplication), reports, metrics, the store
// and what it does (refunds, releases, overrides, snapshots, the memory
// store's purge schedule). Its front ends are its peers and call only this
// face: HTTP (src/serve/http/: routing, JSON, admin, the Beast server) and
// Envoy's gRPC (src/serve/envoy/). None reaches the store itself.
//
// Thread safety: every member may be called from any number of threads at
// once, also while `reload`/`apply` runs on another.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "config.hpp"
#include "decide.hpp"
#include "metrics.hpp"
#include "rules.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/store.hpp"
#include "sluice/remote/event_loops.hpp"
#include "stores.hpp"
#include "wire.hpp"

namespace sluice::serve {

/// What a reload did.
struct reload_report {
  std::vector<std::string> added, changed, kept;
  std::vector<std::string> notes;  ///< settings that need a restart, ...
};

/// The service over one store.
class service {
 public:
  /// A configuration in force as the decision path and the front ends read
  /// it: its rules, the store's ids of its policies, and what its answers
  /// advertise. Kept alive by its pointer across a reload.
  struct active {
    std::shared_ptr<const config> cfg;
    rule_set rules;
    policy_view view;                         ///< the store's ids and the counters, per cfg->policies index
    std::vector<std::string> policy_members;  ///< RateLimit-Policy member per policy ("" if none)
    std::vector<std::optional<current_limit>> current_limits;  ///< Envoy's current_limit per policy
    /// Per Envoy rule (cfg->envoy): the index of its policy (none for an
    /// unlimited rule).
    std::vector<std::optional<std::size_t>> envoy_policy;
    std::vector<std::string> encoded;  ///< encode_policy bytes per policy, to tell changes

    explicit active(std::shared_ptr<const config> c) : cfg(c), rules(*c) {}

    /// The index of the policy named `name`.
    [[nodiscard]] std::optional<std::size_t> policy_index(std::string_view name) const noexcept {
      for (std::size_t i = 0; i < cfg->policies.size(); ++i)
        if (cfg->policies[i].name == name) return i;
      return std::nullopt;
    }
  };

  /// Builds the service and defines every policy of `c` in `st`; the error
  /// names the policy the store refused.
  static result<std::unique_ptr<service>> create(config c, std::unique_ptr<store> st);

  service(const service&) = delete;
  service& operator=(const service&) = delete;
  ~service();

  // ---- The configuration.

  /// The configuration in force as the decision path reads it: kept alive
  /// by the pointer across a reload.
  [[nodiscard]] std::shared_ptr<const active> snapshot() const { return active_.load(); }

  /// The configuration in force.
  [[nodiscard]] std::shared_ptr<const config> current() const;

  /// Reads the configuration file again and applies it (see apply). The
  /// error is the file's (FILE:LINE:COLUMN) or the store's; then nothing
  /// changed.
  result<reload_report> reload();

  /// Applies a new configuration: unchanged policies keep their states,
  /// changed ones are redefined in the store (their states carried over),
  /// new ones defined; rules, limits and the token are replaced. Listeners,
  /// threads and the store are read at start only (a note says so).
  result<reload_report> apply(config next);

  /// The longest body a release must take under the configuration in force
  /// (longest_release_body of its server.max_key_bytes): every lease id the
  /// service issues can be released, whatever server.max_body_bytes says.
  [[nodiscard]] std::size_t release_body_bytes() const noexcept {
    return release_body_bytes_.load(std::memory_order_relaxed);
  }

  // ---- Decisions and reports: never waiting on the store.

  /// The service's clock (the store's), in ns: the `now` of a decision
  /// whose request gives none.
  [[nodiscard]] tick now() const;

  /// The one decision path of every front end: decides `checks` (planned
  /// against `a`'s configuration) at `now` as decide_checks (decide.hpp)
  /// does, on this service's store and counters; `then` runs once, before
  /// this returns (true) or on a store thread (false).
  bool decide(std::shared_ptr<const active> a, std::vector<planned_check> checks, tick now, std::string id,
              checks_decided then);

  /// Receives a report's outcome (store_decision) and its per-check figures.
  using checks_reported = std::function<void(const store_decision& sd, std::span<const decision> per)>;

  /// Charges `checks` (enforced, distinct, at most max_checks) after the
  /// fact at `now` (store::report_async; semantics.md, "Reports"), counting
  /// its source; `then` runs once, now or on a store thread.
  void report(std::shared_ptr<const active> a, std::vector<planned_check> checks, tick now, checks_reported then);

  /// Whether the service is ready for decisions: not draining, and the
  /// store answered one peek itself. `then` runs once, now or on a store
  /// thread.
  void ready(std::function<void(bool)> then);

  /// The Prometheus exposition of every metric (the store's key count may
  /// take a call): `then` gets it once, now or on a store thread.
  void render_metrics(std::function<void(std::string)> then);

  /// `key`'s override of the policy `id`, if the store knows of one without
  /// a call (store::override_seen): what an answer advertises.
  [[nodiscard]] std::optional<any_policy> override_seen(policy_id id, std::string_view key) const;

  // ---- What may wait on a remote store: a front end runs these off its
  // event loops unless answers_at_once().

  /// Whether the store answers in process (the memory store): its calls
  /// never wait on a network.
  [[nodiscard]] bool answers_at_once() const noexcept { return in_process_; }

  /// Gives back what the decision with request id `id` took, once
  /// (store::refund_at), counting its latency and status.
  refund_answer refund(std::string_view id, tick now, std::span<decision> per, std::span<std::int64_t> given);

  /// Releases the lease `nonce` of `checks` at `now` (store::release_at).
  release_result release(std::span<const check> checks, std::uint64_t nonce, tick now);

  /// The overrides of the store (semantics.md, "Overrides"), at the
  /// service's clock; changes are counted. Errors as the store's (their
  /// code tells a failed store, error_code::store_failed, and a full one).
  result<override_change> set_override(policy_id id, std::string_view key, const any_policy& limit);
  result<bool> delete_override(policy_id id, std::string_view key);
  result<std::optional<any_policy>> override_of(policy_id id, std::string_view key);
  result<override_page> list_overrides(policy_id id, std::string_view after, std::size_t limit);

  /// Counts a front end's own work that answers later (a call run off its
  /// loop) as in flight until `leave`, so that quiesce waits for it too.
  void enter();
  void leave();

  /// Waits until no decision, peek or count started through this service
  /// (or entered) is still waiting on the store (each is bounded by the
  /// store's deadline). For an orderly end: the event loops their answers
  /// go to must outlive them.
  void quiesce();

  // ---- The process around it.

  /// Lets the store do its I/O on a front end's Asio loops
  /// (remote/event_loops.hpp): false when the store has no such face (its
  /// calls keep their own thread), an error when it refused them.
  result<bool> attach_loops(std::span<boost::asio::io_context* const> loops);
  /// Detaches one loop attached by attach_loops (idempotent; nothing when
  /// none was attached).
  void detach_loop(boost::asio::io_context& loop);

  /// Saves or loads the memory store's snapshots under `dir` (stores.hpp).
  result<snapshot_report> save_snapshots(const std::string& dir);
  result<snapshot_report> load_snapshots(const std::string& dir);

  /// The counters.
  [[nodiscard]] serve::metrics& stats() noexcept { return metrics_; }

  /// Marks the service as stopping: `ready` answers false from now on.
  void set_draining() noexcept { draining_.store(true, std::memory_order_relaxed); }

 private:
  explicit service(std::unique_ptr<store> st);
  result<std::shared_ptr<const active>> build(config next, const active* old, reload_report& report);

  std::unique_ptr<store> store_;
  bool in_process_ = false;  // the memory store
  serve::metrics metrics_;
  std::atomic<std::shared_ptr<const active>> active_;
  std::atomic<std::size_t> release_body_bytes_{0};
  std::mutex reload_mutex_;
  std::atomic<bool> draining_{false};
  std::mutex flight_mu_;
  std::condition_variable flight_cv_;
  std::int64_t in_flight_ = 0;  // store calls started and not yet answered; requires flight_mu_
  std::size_t max_keys_ = 0;    // the memory store's bound, as started
  // The store, when it does its I/O on a front end's loops (attach_loops).
  std::atomic<remote::loop_store*> loop_store_{nullptr};
  // The memory store's purge schedule: a thread of its own, so a purge never
  // holds an event loop (decisions go on; a new key waits one slice at most).
  std::thread purger_;
  std::mutex purge_mu_;
  std::condition_variable purge_cv_;
  bool stopping_ = false;
};

}  // namespace sluice::serve
