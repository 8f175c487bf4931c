// Fuzz target: a request, any bytes, through the service (rules, keys, the
// JSON API, the auth endpoint) never crashes, answers a status the endpoint
// may give, never lets a CR or LF into a response header, and writes valid
// JSON for every JSON answer. Its framing fields pass framing_error only when
// RFC 9112 allows them (at most one Transfer-Encoding, exactly "chunked", not
// beside Content-Length; at most one Content-Length, all digits; one Host on
// HTTP/1.1), and its path normalises to a path with no empty or dot segment.
//
// Input: the method on the first line, the target on the second, then
// "Name: value" header lines up to an empty line, then the body.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "framing.hpp"
#include "http_api.hpp"
#include "rules.hpp"
#include "service.hpp"
#include "stores.hpp"
#include "target.hpp"

namespace {

constexpr std::string_view config_text = R"toml(
[server]
client_time = true
max_key_bytes = 64
trusted_proxies = ["127.0.0.1"]
forwarded_header = "X-Forwarded-For"
[policies]
a = "gcra 5/1s burst=2"
b = "fixed-window 3/1m"
c = "all(token-bucket 2/1s, quota 10)"
q = "leaky-queue 2/1s queue=3"
[[rules]]
policy = "a"
key = "header:X-Api-Key"
cost = "header:X-Cost"
[[rules]]
policy = "b"
method = ["GET", "POST"]
path_prefix = "/api/"
host = "example.com"
key = "client+path:2"
[[rules]]
policy = "c"
header = { X-Env = "prod", X-Flag = true }
key = "query:user+literal:x+method+host"
[[rules]]
policy = "q"
key = "query:k"
shadow = true
)toml";

sluice::serve::http_api& the_service() {
  static std::unique_ptr<sluice::serve::service> s = [] {
    auto c = sluice::serve::parse_config(config_text, "fuzz.toml");
    if (!c) std::abort();
    auto st = sluice::serve::make_store(c->store);
    if (!st) std::abort();
    auto svc = sluice::serve::service::create(std::move(c).value(), std::move(st).value());
    if (!svc) std::abort();
    return std::move(svc).value();
  }();
  static sluice::serve::http_api api(*s);  // made after s: goes before it
  return api;
}

bool ieq(std::string_view a, std::string_view b) { return sluice::serve::iequals(a, b); }

std::string_view ows_trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// framing_error's verdict against RFC 9112's rules, counted directly.
void check_framing(const std::vector<sluice::serve::header_view>& headers) {
  std::size_t te = 0, cl = 0, host = 0;
  bool te_chunked = true, cl_digits = true;
  for (const auto& h : headers) {
    if (ieq(h.name, "Transfer-Encoding")) {
      ++te;
      te_chunked = te_chunked && ieq(ows_trimmed(h.value), "chunked");
    } else if (ieq(h.name, "Content-Length")) {
      ++cl;
      const auto v = ows_trimmed(h.value);
      cl_digits = cl_digits && !v.empty() && v.find_first_not_of("0123456789") == std::string_view::npos;
    } else if (ieq(h.name, "Host")) {
      ++host;
    }
  }
  for (const unsigned version : {10u, 11u}) {
    const bool ok = !sluice::serve::framing_error(headers, version).has_value();
    const bool framing_ok = (te == 0 || (te == 1 && te_chunked && cl == 0 && version == 11)) && cl <= 1 && cl_digits;
    const bool host_ok = host <= 1 && (host == 1 || version == 10);
    if (ok && !(framing_ok && host_ok)) std::abort();             // let through what RFC 9112 refuses
    if (!ok && framing_ok && host_ok && host == 0) std::abort();  // refused a request with nothing wrong
  }
}

// A normalised path has no empty (but a last) or dot segment and starts with '/'.
void check_path(std::string_view target) {
  const auto parts = sluice::serve::split_target(target);
  if (!parts) return;
  std::string out;
  const auto form = sluice::serve::normalise_path(parts->path, out);
  if (form == sluice::serve::path_form::invalid) return;
  const std::string_view p = form == sluice::serve::path_form::normal ? parts->path : std::string_view(out);
  if (p.empty() || p.front() != '/') std::abort();
  if (p.find("//") != std::string_view::npos) std::abort();
  for (const std::string_view dot : {"/./", "/../"})
    if (p.find(dot) != std::string_view::npos) std::abort();
  if (p.ends_with("/.") || p.ends_with("/..")) std::abort();
}

std::string_view next_line(std::string_view& rest) {
  const auto nl = rest.find('\n');
  const std::string_view line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  sluice::serve::http_request req;
  req.method = next_line(rest);
  req.target = next_line(rest);
  std::vector<sluice::serve::header_view> headers;
  while (!rest.empty()) {
    const std::string_view line = next_line(rest);
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    headers.push_back({line.substr(0, colon), value});
  }
  req.headers = headers;
  req.body = rest;
  check_framing(headers);
  check_path(req.target);
  req.peer = "127.0.0.1";
  sluice::serve::http_response res;
  the_service().handle(req, res, sluice::serve::listener_role::decision);
  for (const auto& f : res.fields)
    if (f.value.find_first_of("\r\n") != std::string::npos) std::abort();
  const std::string_view path = sluice::serve::path_of(req.target);
  if (path == "/v1/authorize" && res.status != 204 && res.status != 403) std::abort();
  // 409: a request id already used for other checks (semantics.md, "Request ids").
  if (path == "/v1/decide" && res.status != 200 && res.status != 429 && res.status != 400 && res.status != 405 &&
      res.status != 409)
    std::abort();
  if (res.content_type == "application/json" && !nlohmann::json::accept(res.body)) std::abort();
  // The rules alone, on the same request.
  std::vector<sluice::serve::planned_check> checks;
  static const sluice::serve::rule_set rules(*the_service().svc().current());
  const sluice::serve::request_view v{req.method, req.target, req.headers, req.peer};
  if (!rules.plan(v, checks)) {
    for (const auto& c : checks)
      if (c.key.size() > 64 || c.cost < 1) std::abort();
  }
  return 0;
}
