// POST /v1/release (release.hpp).
#include "release.hpp"

#include <array>
#include <nlohmann/json.hpp>

#include "json_body.hpp"
#include "lease_token.hpp"
#include "wire.hpp"

namespace sluice::serve {
namespace {

release_answer refused(metrics& m, unsigned status, std::string_view field, std::string_view message) {
  m.bad_requests.fetch_add(1, std::memory_order_relaxed);
  release_answer a;
  a.status = status;
  a.body = "{\"error\":{\"field\":";
  append_json_string(a.body, field);
  a.body += ",\"message\":";
  append_json_string(a.body, message);
  a.body += "}}\n";
  return a;
}

}  // namespace

release_answer release_lease(service& svc, metrics& m, std::string_view body,
                             const std::function<std::optional<policy_id>(std::string_view)>& id_of, tick now) {
  auto parsed = parse_json_object(body, R"({"lease":"l1...."})");
  if (!parsed) return refused(m, 400, parsed.err().field, parsed.err().message);
  const nlohmann::json doc = std::move(parsed).value();
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (it.key() != "lease") return refused(m, 400, it.key(), "unknown field (a release has only lease)");
  const auto l = doc.find("lease");
  if (l == doc.end() || !l->is_string())
    return refused(m, 400, "lease", "must be the lease id a decision answered (a string)");
  const auto token = parse_lease(l->get_ref<const std::string&>(), max_checks);
  if (!token) return refused(m, 400, "lease", "not a lease id (as /v1/decide answers it in \"lease\")");
  std::array<check, max_checks> checks;
  std::size_t n = 0;
  for (const auto& [name, key] : token->checks) {
    const auto id = id_of(name);
    if (!id) continue;  // a policy no longer defined holds no lease here
    checks[n++] = check{*id, key, 0};
  }
  release_result r;
  if (n > 0) r = svc.release(std::span<const check>(checks.data(), n), token->nonce, now);
  if (r.from != source::store) {
    m.release_failures.fetch_add(1, std::memory_order_relaxed);
    release_answer a = refused(m, 503, "store", "the store could not release the lease; send it again");
    m.bad_requests.fetch_sub(1, std::memory_order_relaxed);  // a failure, not a bad request
    return a;
  }
  if (r.units == 0) {
    m.leases_not_held.fetch_add(1, std::memory_order_relaxed);
    return refused(m, 404, "lease", "not held: never issued, already released, or expired");
  }
  m.leases_released.fetch_add(1, std::memory_order_relaxed);
  release_answer a;
  a.body = "{\"released\":" + std::to_string(r.units) + ",\"checks\":[";
  std::size_t k = 0;
  bool first = true;
  for (const auto& [name, key] : token->checks) {
    if (!id_of(name)) continue;
    if (!first) a.body += ',';
    first = false;
    a.body += "{\"policy\":";
    append_json_string(a.body, name);
    a.body += ",\"key\":";
    append_json_string(a.body, key);
    a.body += ",\"released\":" + std::to_string(r.per_check[k++]) + "}";
  }
  a.body += "]}\n";
  return a;
}

}  // namespace sluice::serve
