// Fuzz target: a request, any bytes, through the service (rules, keys, the
// JSON API, the auth endpoint) never crashes, answers a status the endpoint
// may give, never lets a CR or LF into a response header, and writes valid
// JSON for every JSON answer.
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

#include "rules.hpp"
#include "service.hpp"

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

sluice::serve::service& the_service() {
  static std::unique_ptr<sluice::serve::service> s = [] {
    auto c = sluice::serve::parse_config(config_text, "fuzz.toml");
    if (!c) std::abort();
    auto st = sluice::serve::make_store(c->store, 1);
    if (!st) std::abort();
    auto svc = sluice::serve::service::create(std::move(c).value(), std::move(st).value());
    if (!svc) std::abort();
    return std::move(svc).value();
  }();
  return *s;
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
  req.peer = "127.0.0.1";
  sluice::serve::http_response res;
  the_service().handle(req, res, sluice::serve::listener_role::decision);
  for (const auto& f : res.fields)
    if (f.value.find_first_of("\r\n") != std::string::npos) std::abort();
  const std::string_view path = sluice::serve::path_of(req.target);
  if (path == "/v1/authorize" && res.status != 204 && res.status != 403) std::abort();
  if (path == "/v1/decide" && res.status != 200 && res.status != 429 && res.status != 400 && res.status != 405)
    std::abort();
  if (res.content_type == "application/json" && !nlohmann::json::accept(res.body)) std::abort();
  // The rules alone, on the same request.
  std::vector<sluice::serve::planned_check> checks;
  static const sluice::serve::rule_set rules(*the_service().current());
  const sluice::serve::request_view v{req.method, req.target, req.headers, req.peer};
  if (!rules.plan(v, checks)) {
    for (const auto& c : checks)
      if (c.key.size() > 64 || c.cost < 1) std::abort();
  }
  return 0;
}
