// The decision service without the network: an HTTP request in (method,
// target, headers, body, peer), a response out. The server (server.hpp)
// moves bytes; this decides, through a `sluice::store&`, and writes the
// answer: the JSON API, the nginx auth_request endpoint, metrics, health,
// and the admin endpoints. Reloads swap the whole configuration at once.
//
// Thread safety: `handle` may be called from any number of threads at once,
// also while `reload`/`apply` runs on another.
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>
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
#include "sluice/result.hpp"
#include "sluice/store.hpp"

namespace sluice::serve {

/// A request as the server hands it over.
struct http_request {
  std::string_view method;
  std::string_view target;
  std::span<const header_view> headers;
  std::string_view body;
  std::string_view peer;
};

/// A response header. Values hold only what the service wrote itself
/// (numbers, validated policy names): no request byte reaches them.
struct http_field {
  std::string_view name;
  std::string value;
};

/// The answer the server sends.
struct http_response {
  unsigned status = 200;
  std::string content_type;  ///< empty: none
  std::string body;
  std::vector<http_field> fields;
  void clear() {
    status = 200;
    content_type.clear();
    body.clear();
    fields.clear();
  }
};

/// Which listener a request came in on.
enum class listener_role : std::uint8_t { decision, admin };

/// What a reload did.
struct reload_report {
  std::vector<std::string> added, changed, kept;
  std::vector<std::string> notes;  ///< settings that need a restart, ...
};

/// The service over one store.
class service {
 public:
  /// The view of one configuration the request path reads (service.cpp).
  struct active;

  /// Builds the service and defines every policy of `c` in `st`; the error
  /// names the policy the store refused.
  static result<std::unique_ptr<service>> create(config c, std::unique_ptr<store> st);

  service(const service&) = delete;
  service& operator=(const service&) = delete;
  ~service();

  /// Called once an answer handed over later is complete (handle).
  using answered = std::function<void()>;

  /// Answers one request without waiting on the store: returns true when
  /// `res` holds the answer now (then `done` is never called); false when a
  /// store call is pending, then `done` is called once, from a thread of
  /// the store's, when `res` holds the answer. Until then the caller keeps
  /// `res` alive and leaves it alone; `req`'s bytes are read only before
  /// this returns.
  bool handle(const http_request& req, http_response& res, listener_role role, answered done);

  /// Answers one request, waiting for the store (tests, fuzzers).
  void handle(const http_request& req, http_response& res, listener_role role);

  /// The one decision path of every front end: decides `checks` (planned
  /// against `a`'s configuration) at `now` as decide_checks (decide.hpp)
  /// does, on this service's store and counters; `then` runs once, before
  /// this returns (true) or on a store thread (false).
  bool decide(std::shared_ptr<const active> a, std::vector<planned_check> checks, tick now, std::string id,
              checks_decided then);

  /// Waits until no decision, peek or count started through this service
  /// is still waiting on the store (each is bounded by the store's
  /// deadline). For an orderly end: the event loops their answers go to
  /// must outlive them.
  void quiesce();

  /// Reads the configuration file again and applies it (see apply). The
  /// error is the file's (FILE:LINE:COLUMN) or the store's; then nothing
  /// changed.
  result<reload_report> reload();

  /// Applies a new configuration: unchanged policies keep their states,
  /// changed ones are redefined in the store (their states carried over),
  /// new ones defined; rules, limits and the token are replaced. Listeners,
  /// threads and the store are read at start only (a note says so).
  result<reload_report> apply(config next);

  /// The configuration in force.
  [[nodiscard]] std::shared_ptr<const config> current() const;

  /// The configuration in force as the decision path reads it (for
  /// `decide`): kept alive by the pointer across a reload.
  [[nodiscard]] std::shared_ptr<const active> snapshot() const { return active_.load(); }
  /// The configuration a snapshot was built from.
  [[nodiscard]] static std::shared_ptr<const config> config_of(const active& a);

  /// The store.
  [[nodiscard]] store& backing_store() noexcept { return *store_; }

  /// The longest body `POST /v1/release` must take under the configuration
  /// in force (longest_release_body of its server.max_key_bytes): every
  /// lease id the service issues can be released, whatever
  /// server.max_body_bytes says.
  [[nodiscard]] std::size_t release_body_bytes() const noexcept {
    return release_body_bytes_.load(std::memory_order_relaxed);
  }

  /// The counters.
  [[nodiscard]] serve::metrics& stats() noexcept { return metrics_; }

  /// Marks the service as stopping: /readyz answers 503 from now on.
  void set_draining() noexcept { draining_.store(true, std::memory_order_relaxed); }

 private:
  service(std::unique_ptr<store> st);
  result<std::shared_ptr<const active>> build(config next, const active* old, reload_report& report);

  struct answer_gate;
  // Each returns true when it has arranged the answer's completion (now or
  // later); false when `res` holds a complete answer for handle to count.
  bool route(const http_request& req, http_response& res, listener_role role, const std::shared_ptr<answer_gate>& gate);
  /// Whether a request to a JSON endpoint may go on: a POST with the bearer
  /// token; otherwise `res` holds its 405 or 401 (naming `usage`).
  bool post_allowed(const config& c, const http_request& req, http_response& res, std::string_view usage);
  bool decide_json(std::shared_ptr<const active> a, const http_request& req, http_response& res,
                   const std::shared_ptr<answer_gate>& gate);
  bool authorize(std::shared_ptr<const active> a, const http_request& req, http_response& res,
                 const std::shared_ptr<answer_gate>& gate);
  bool readyz(std::shared_ptr<const active> a, http_response& res, const std::shared_ptr<answer_gate>& gate);
  void write_decision(const active& a, const std::vector<planned_check>& checks, const std::string& id,
                      const checks_outcome& o, http_response& res);
  static void internal_error(http_response& res);
  /// A /v1/decide or /v1/report body, read and checked: its checks (each
  /// with its cost, the request's filled in), id and `now`.
  struct json_request {
    std::vector<planned_check> checks;
    std::string id;
    std::optional<tick> now;
  };
  /// Reads the JSON body both endpoints take; on a bad one answers 400
  /// naming the field in `res` (counted) and returns nullopt.
  std::optional<json_request> parse_json_request(const active& a, const http_request& req, http_response& res);
  /// POST /v1/report: charges the body's checks after the fact
  /// (store::report_async); true when the answer comes later (`gate`).
  bool report_json(std::shared_ptr<const active> a, const http_request& req, http_response& res,
                   const std::shared_ptr<answer_gate>& gate);
  /// A report's answer: 200 with the figures after the charge, or 503.
  static void write_report(const active& a, const std::vector<planned_check>& checks, const store_decision& sd,
                           std::span<const decision> per, http_response& res);
  /// POST /v1/release (src/serve/release.cpp).
  void release_json(const active& a, const http_request& req, http_response& res);
  /// The lease id of an admit that took leases (release.cpp): empty when
  /// `o` took none.
  std::string lease_of(const active& a, const std::vector<planned_check>& checks, const checks_outcome& o) const;
  /// POST /v1/refund: gives back what the body's request id took, once
  /// (store::refund_at; refund.cpp).
  /// `key_bytes`: server.max_key_bytes (a refund id's tag is at most a key).
  void refund_json(bool client_time, std::size_t key_bytes, const http_request& req, http_response& res);
  void admin(std::string_view path, const http_request& req, http_response& res);
  /// /admin/v1/overrides... (src/serve/overrides.cpp): `c`'s policies with
  /// their store ids `ids`; routed on the raw target.
  void overrides_api(const config& c, std::span<const policy_id> ids, const http_request& req, http_response& res);
  void enter();
  void leave();
  /// Runs `work` (a store operation with no asynchronous face: a refund, a
  /// release) so that no event loop waits on a remote store: at once for
  /// the memory store (returns false: answered), else on the service's
  /// blocking pool, completing `gate` (returns true). `work` gets its own
  /// copy of the request.
  bool offload(const http_request& req, http_response& res, const std::shared_ptr<answer_gate>& gate,
               std::function<void(const http_request&, http_response&)> work);

  std::unique_ptr<store> store_;
  serve::metrics metrics_;
  std::atomic<std::shared_ptr<const active>> active_;
  std::atomic<std::size_t> release_body_bytes_{0};
  std::mutex reload_mutex_;
  std::atomic<bool> draining_{false};
  std::mutex flight_mu_;
  std::condition_variable flight_cv_;
  std::int64_t in_flight_ = 0;  // store calls started and not yet answered; requires flight_mu_
  std::size_t max_keys_ = 0;    // the memory store's bound, as started
  // The memory store's purge schedule: a thread of its own, so a purge never
  // holds an event loop (decisions go on; a new key waits one slice at most).
  std::thread purger_;
  std::mutex purge_mu_;
  std::condition_variable purge_cv_;
  bool stopping_ = false;
  // The blocking pool (offload): made on first use, for a remote store
  // only; joined before the store goes (declared after it).
  std::once_flag blocking_once_;
  std::unique_ptr<boost::asio::thread_pool> blocking_;
};

/// Whether a raw (not normalised) request path is the overrides API's:
/// "/admin/v1/overrides" or below it.
bool is_overrides_path(std::string_view raw_path) noexcept;

/// A key as the overrides API writes it (in paths, answers and cursors):
/// A-Z a-z 0-9 - . _ ~ : as themselves, every other byte as %XX.
std::string encode_key(std::string_view key);

}  // namespace sluice::serve
