// The service's pieces without the network: rounding and RateLimit fields,
// keys built from requests, the configuration's error positions, and
// requests found by fuzzing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config.hpp"
#include "metrics.hpp"
#include "rules.hpp"
#include "service.hpp"
#include "sluice/policy_expr.hpp"
#include "wire.hpp"

namespace sluice::serve {
namespace {

constexpr tick s = 1'000'000'000;

TEST(Wire, SecondsRoundUp) {
  EXPECT_EQ(ceil_seconds(0), 0);
  EXPECT_EQ(ceil_seconds(1), 1);
  EXPECT_EQ(ceil_seconds(s), 1);
  EXPECT_EQ(ceil_seconds(s + 1), 2);
  EXPECT_EQ(ceil_seconds(never - 1), never / s + 1);
}

TEST(Wire, Members) {
  // RateLimit-Policy items: wire_test.cpp checks them against their definition.
  EXPECT_EQ(policy_member("api", *parse_policy("gcra 100/1m burst=20")), "\"api\";q=20;w=12");
  EXPECT_EQ(policy_member("q", *parse_policy("quota 7")), "\"q\";q=7");
  EXPECT_EQ(policy_member("a", *parse_policy("always-allow")), "");
  EXPECT_EQ(ratelimit_member("api", 4, s / 2), "\"api\";r=4;t=1");
  EXPECT_EQ(ratelimit_member("api", 0, never), "\"api\";r=0");
  EXPECT_EQ(ratelimit_member("api", INT64_MAX, std::nullopt), "\"api\";r=999999999999999");
}

TEST(Wire, JsonStringsEscapeControlBytesAndBadUtf8) {
  std::string out;
  append_json_string(out, std::string("a\"b\\c\r\n\x01\xff\xc3\xa9", 11));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\u000d\\u000a\\u0001\\ufffd\xc3\xa9\"");
}

TEST(Metrics, SecondsText) {
  EXPECT_EQ(seconds_text(0), "0");
  EXPECT_EQ(seconds_text(1500), "0.0000015");
  EXPECT_EQ(seconds_text(2'000'000'000), "2");
  EXPECT_EQ(label_value("a\"b\\\n"), "a\\\"b\\\\\\n");
}

TEST(Rules, PathsAndQueries) {
  EXPECT_EQ(path_of("/a/b?x=1"), "/a/b");
  EXPECT_EQ(path_segment("/a//b/c", 2), "b");
  EXPECT_EQ(path_segment("/a/b", 3), std::nullopt);
  EXPECT_EQ(query_param("/p?x=1&user=bob&x=2", "user"), "bob");
  EXPECT_EQ(query_param("/p?x=1&user=bob&x=2", "x"), "1");
  EXPECT_EQ(query_param("/p?flag&y=", "flag"), "");
  EXPECT_EQ(query_param("/p?a=1", "b"), std::nullopt);
  std::string k;
  append_key_part(k, "a:b%c");
  EXPECT_EQ(k, "a%3Ab%25c");
}

config rules_config(const std::string& extra) {
  auto c = parse_config(
      "[server]\ntrusted_proxies = [\"10.0.0.1\"]\nforwarded_header = \"X-Forwarded-For\"\n"
      "[policies]\np = \"gcra 1/1s\"\n" +
          extra,
      "t.toml");
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.err().what());
  return c.ok() ? std::move(c).value() : config{};
}

TEST(Rules, KeysFromEveryPart) {
  const config c =
      rules_config("[[rules]]\npolicy = \"p\"\nkey = \"client+header:X-User+path:2+query:q+literal:L+method+host\"\n");
  const rule_set rs(c);
  const std::vector<header_view> h{
      {"x-user", "u:1"}, {"Host", "Example.COM:8080"}, {"X-Forwarded-For", "1.1.1.1, 2.2.2.2"}};
  std::vector<planned_check> out;
  ASSERT_FALSE(rs.plan(request_view{"GET", "/a/b/c?q=9", h, "10.0.0.1"}, out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, "2.2.2.2:u%3A1:b:9:L:GET:example.com");
  // An untrusted peer's forwarded header is ignored.
  ASSERT_FALSE(rs.plan(request_view{"GET", "/a/b/c?q=9", h, "10.0.0.2"}, out));
  EXPECT_EQ(out[0].key, "10.0.0.2:u%3A1:b:9:L:GET:example.com");
  // A missing part: the rule does not apply.
  ASSERT_FALSE(rs.plan(request_view{"GET", "/a?q=9", h, "10.0.0.1"}, out));
  EXPECT_TRUE(out.empty());
}

TEST(Rules, MatchAndCost) {
  const config c = rules_config(
      "[[rules]]\npolicy = \"p\"\nmethod = [\"post\"]\npath_prefix = \"/api/\"\nhost = \"a.example\"\n"
      "header = { X-Env = \"prod\", X-Flag = true }\nkey = \"literal:k\"\ncost = \"header:X-Cost\"\n");
  const rule_set rs(c);
  std::vector<planned_check> out;
  std::vector<header_view> h{{"Host", "A.example"}, {"X-Env", "prod"}, {"X-Flag", ""}, {"X-Cost", " 3 "}};
  ASSERT_FALSE(rs.plan(request_view{"POST", "/api/x", h, "p"}, out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cost, 3);
  EXPECT_FALSE(rs.plan(request_view{"GET", "/api/x", h, "p"}, out));
  EXPECT_TRUE(out.empty());
  h[1].value = "dev";
  EXPECT_FALSE(rs.plan(request_view{"POST", "/api/x", h, "p"}, out));
  EXPECT_TRUE(out.empty());
  h[1].value = "prod";
  h[3].value = "0";
  auto e = rs.plan(request_view{"POST", "/api/x", h, "p"}, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->field, "cost");
}

TEST(Config, ErrorsNameLineAndColumn) {
  auto c = parse_config("[policies]\nok = \"quota 1\"\nbad = \"all(gcra 1/1s, quot 3)\"\n", "f.toml");
  ASSERT_FALSE(c.ok());
  // The string opens at column 7, so the expression starts at 8; "quot" is
  // at column 16 of the expression: 8 + 16 - 1.
  EXPECT_EQ(c.err().field, "f.toml:3:23");
  EXPECT_NE(c.err().message.find("unknown algorithm 'quot'"), std::string::npos);
  EXPECT_EQ(parse_config("", "e.toml").err().field, "e.toml:1:1");
  EXPECT_EQ(parse_listen("127.0.0.1:99999").ok(), false);
  EXPECT_EQ(parse_listen("[::1]:80")->host, "::1");
}

TEST(Config, SimpleConfig) {
  auto c = simple_config("gcra 100/1m burst=20", "header:X-Api-Key");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->policies.at(0).name, "default");
  EXPECT_EQ(c->rules.at(0).key.at(0).arg, "X-Api-Key");
  EXPECT_EQ(simple_config("gcra 1/0s", "client").err().field, "--policy");
  EXPECT_EQ(simple_config("gcra 1/1s", "nope").err().field, "--key");
}

TEST(DecideApi, ANumberPastADoubleIsA400NotACrash) {
  // Found by fuzz_serve_request: nlohmann::json throws out_of_range (not
  // parse_error) for a number past a double, and that exception escaped the
  // service and aborted `sluice serve` on one request.
  auto c = parse_config("[policies]\napi = \"gcra 10/1s\"\n", "t.toml");
  ASSERT_TRUE(c);
  auto st = make_store(c->store, 1);
  ASSERT_TRUE(st);
  auto svc = service::create(std::move(c).value(), std::move(st).value());
  ASSERT_TRUE(svc);
  std::size_t checked = 0;
  for (const char* body : {R"({"x":1e999})", R"({"checks":[{"policy":"api","key":"k"}],"now":-92233720368547e5808})",
                           R"({"checks":[{"policy":"api","key":"k","cost":1e400}]})", "[-1E+99999]"}) {
    http_request req;
    req.method = "POST";
    req.target = "/v1/decide";
    req.body = body;
    req.peer = "127.0.0.1";
    http_response res;
    (*svc)->handle(req, res, listener_role::decision);
    EXPECT_EQ(res.status, 400U) << body;
    EXPECT_NE(res.body.find("\"field\":\"body\""), std::string::npos) << body << ": " << res.body;
    ++checked;
  }
  EXPECT_EQ(checked, 4U);
}

}  // namespace
}  // namespace sluice::serve
