// POST /v1/refund (docs/serve.md, "Refunds"; semantics.md "Refunds"): gives
// back what the decision with the body's request id took, once
// (service::refund). Authorised as /v1/report is (the decision listener,
// the bearer token); on a remote store run on the front end's blocking pool
// (http_api::offload), never on an event loop.
#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <string>

#include "http_api.hpp"
#include "http_parts.hpp"
#include "json_body.hpp"
#include "wire.hpp"

namespace sluice::serve {

namespace {

std::string refund_error(std::string_view field, std::string_view message, std::string_view outcome) {
  std::string out = "{\"error\":{\"field\":";
  append_json_string(out, field);
  out += ",\"message\":";
  append_json_string(out, message);
  out += ",\"outcome\":";
  append_json_string(out, outcome);
  out += "}}\n";
  return out;
}

}  // namespace

void http_api::refund_json(bool client_time, std::size_t key_bytes, const http_request& req, http_response& res) {
  using nlohmann::json;
  const auto refuse = [&](unsigned status, std::string_view field, std::string_view message) {
    metrics_.bad_requests.fetch_add(1, std::memory_order_relaxed);
    res.status = status;
    res.content_type = "application/json";
    res.body = refund_error(field, message, "bad-request");
  };
  auto parsed = parse_json_object(req.body, R"({"id":"8f1c..."})");
  if (!parsed) {
    refuse(400, parsed.err().field, parsed.err().message);
    return;
  }
  json doc = std::move(parsed).value();
  std::optional<tick> now;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "id") continue;
    if (it.key() == "now") {  // as /v1/decide's: only with server.client_time
      if (!client_time) {
        refuse(400, "now", "not accepted: server.client_time is off");
        return;
      }
      const json& v = it.value();
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX)) {
        refuse(400, "now", "must be a whole number of ticks (ns)");
        return;
      }
      now = v.get<std::int64_t>();
      continue;
    }
    refuse(400, it.key(), "unknown field (a refund has the request id \"id\", and \"now\" with client_time)");
    return;
  }
  const auto f = doc.find("id");
  if (f == doc.end()) {
    refuse(400, "id", "missing: the request id of the decision to refund");
    return;
  }
  // An id of at most 256 bytes; a Redis Cluster's refund id has its slot's
  // tag (a key's bytes at most) in braces before one.
  const auto fits = [key_bytes](std::string_view text) {
    if (text.size() <= 256) return !text.empty();
    const std::size_t close = text.find('}');
    return text[0] == '{' && close != std::string_view::npos && close - 1 <= key_bytes &&
           text.size() - close - 1 <= 256;
  };
  if (!f->is_string() || !fits(f->get_ref<const std::string&>())) {
    refuse(400, "id", "must be a non-empty string of at most 256 bytes (a refund id: with its {tag} before them)");
    return;
  }
  const std::string& id = f->get_ref<const std::string&>();
  std::array<decision, max_checks> per{};
  std::array<std::int64_t, max_checks> given{};
  const refund_answer ra = svc_.refund(id, now ? *now : svc_.now(), per, given);
  res.content_type = "application/json";
  switch (ra.status) {
    case refund_status::unknown_id:
      res.status = 404;
      res.body =
          refund_error("id", "no decision with this id is remembered (never made, or past the idempotency window)",
                       name_of(ra.status));
      return;
    case refund_status::already_refunded:
      res.status = 409;
      res.body = refund_error("id", "this id was refunded already: a refund happens once", name_of(ra.status));
      return;
    case refund_status::not_refundable:
      res.status = 409;
      res.body =
          refund_error("id", "this id's decision took nothing (a denial): nothing to refund", name_of(ra.status));
      return;
    case refund_status::error:
      res.status = 503;
      res.body = refund_error("store", "nothing was refunded (the store failed); send it again: it takes effect once",
                              name_of(ra.status));
      return;
    case refund_status::refunded:
      break;
  }
  // 200 with the figures after the refund, as /v1/report answers them.
  res.status = 200;
  std::string& b = res.body;
  b = "{\"refunded\":true,\"id\":";
  append_json_string(b, id);
  append_figures(b, ra.d);
  b += ",\"checks\":[";
  for (std::size_t k = 0; k < ra.checks && k < max_checks; ++k) {
    if (k > 0) b += ',';
    b += "{\"given_back\":" + std::to_string(given[k]);
    b += ",\"remaining\":" + std::to_string(per[k].remaining);
    b += ",\"retry_after_ns\":" + ns_or_never(per[k].retry_after);
    b += ",\"reset_after_ns\":" + ns_or_never(per[k].reset_after);
    b += '}';
  }
  b += "]}\n";
}

}  // namespace sluice::serve
