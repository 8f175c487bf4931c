// The HTTP front end of `sluice serve` without the network: an HTTP request
// in (method, target, headers, body, peer), a response out. The server
// (server.hpp) moves bytes; this routes and writes the answer: the JSON API,
// the nginx auth_request endpoint, metrics, health, and the admin endpoints
// (reload, overrides). It decides and administers only through the
// service's public face (service.hpp), as the gRPC front end does.
//
// Thread safety: `handle` may be called from any number of threads at once,
// also while the service reloads on another.
#pragma once

#include <boost/asio/thread_pool.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "service.hpp"

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

/// The HTTP endpoints over one service.
class http_api {
 public:
  /// Answers for `svc`, which must outlive this.
  explicit http_api(service& svc);
  ~http_api();
  http_api(const http_api&) = delete;
  http_api& operator=(const http_api&) = delete;

  /// The service answered for.
  [[nodiscard]] service& svc() noexcept { return svc_; }

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

  /// The configuration as the service has it in force (service::snapshot).
  using active = service::active;

 private:
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
  bool readyz(http_response& res, const std::shared_ptr<answer_gate>& gate);
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
  /// (service::report); true when the answer comes later (`gate`).
  bool report_json(std::shared_ptr<const active> a, const http_request& req, http_response& res,
                   const std::shared_ptr<answer_gate>& gate);
  /// A report's answer: 200 with the figures after the charge, or 503.
  static void write_report(const active& a, const std::vector<planned_check>& checks, const store_decision& sd,
                           std::span<const decision> per, http_response& res);
  /// POST /v1/release (release.cpp).
  void release_json(const active& a, const http_request& req, http_response& res);
  /// The lease id of an admit that took leases (json_api.cpp): empty when
  /// `o` took none.
  std::string lease_of(const active& a, const std::vector<planned_check>& checks, const checks_outcome& o) const;
  /// POST /v1/refund: gives back what the body's request id took, once
  /// (service::refund; refund.cpp).
  /// `key_bytes`: server.max_key_bytes (a refund id's tag is at most a key).
  void refund_json(bool client_time, std::size_t key_bytes, const http_request& req, http_response& res);
  void admin(std::string_view path, const http_request& req, http_response& res);
  /// /admin/v1/overrides... (overrides.cpp): `c`'s policies with their
  /// store ids `ids`; routed on the raw target.
  void overrides_api(const config& c, std::span<const policy_id> ids, const http_request& req, http_response& res);
  /// Runs `work` (a service call that may wait on a remote store: a refund,
  /// a release, an override) so that no event loop waits on it: at once
  /// when the store answers in process (returns false: answered), else on
  /// the blocking pool, completing `gate` (returns true). `work` gets its
  /// own copy of the request.
  bool offload(const http_request& req, http_response& res, const std::shared_ptr<answer_gate>& gate,
               std::function<void(const http_request&, http_response&)> work);

  service& svc_;
  metrics& metrics_;
  // The blocking pool (offload): made on first use, for a remote store
  // only; joined before the service goes.
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
