// The service's pieces without the network: rounding and RateLimit fields,
// keys built from requests, the configuration's error positions, and
// requests found by fuzzing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config.hpp"
#include "framing.hpp"
#include "http_api.hpp"
#include "metrics.hpp"
#include "rules.hpp"
#include "service.hpp"
#include "sluice/core/policy_expr.hpp"
#include "stores.hpp"
#include "target.hpp"
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
  std::string v;
  EXPECT_EQ(query_value("x=1&user=bob&y=2", "user", v), query_form::found);
  EXPECT_EQ(v, "bob");
  EXPECT_EQ(query_value("flag&y=", "flag", v), query_form::found);
  EXPECT_EQ(v, "");
  EXPECT_EQ(query_value("a=1", "b", v), query_form::absent);
  std::string k;
  append_key_part(k, "a:b%c");
  EXPECT_EQ(k, "a%3Ab%25c");
}

// The normalised path of `raw`, or "INVALID".
std::string normal(std::string_view raw) {
  std::string out;
  switch (normalise_path(raw, out)) {
    case path_form::normal:
      return std::string(raw);
    case path_form::rewritten:
      return out;
    case path_form::invalid:
      break;
  }
  return "INVALID";
}

TEST(Target, PathsNormaliseAsNginxServesThem) {
  // Each row checked against nginx 1.22's $uri (merge_slashes on) by hand.
  const std::vector<std::pair<std::string_view, std::string_view>> rows{
      {"/api/items", "/api/items"},
      {"/", "/"},
      {"//api/items", "/api/items"},
      {"/api//items", "/api/items"},
      {"/api/items/", "/api/items/"},
      {"/api/items//", "/api/items/"},
      {"/%61pi/items", "/api/items"},
      {"/api/ite%6ds", "/api/items"},
      {"/api/ite%6Ds", "/api/items"},
      {"/api/%7e", "/api/~"},
      {"/api/%25", "/api/%"},
      {"/api/%c3%a9", "/api/\xc3\xa9"},
      {"/api/a%20b", "/api/a b"},
      {"/x/../api/", "/api/"},
      {"/x/%2e%2e/api/", "/api/"},
      {"/x/%2E%2E/api", "/api"},
      {"/x/.%2e/api", "/api"},
      {"/a//../api", "/api"},
      {"/./api/./items", "/api/items"},
      {"/api/.", "/api/"},
      {"/api/..", "/"},
      {"/api/items/..", "/api/"},
      {"/.", "/"},
      {"/..a/.b/...", "/..a/.b/..."},
      {"/api/..;x", "INVALID"},
      {"/api/.;x/", "INVALID"},
      {"/api;x/a", "/api;x/a"},
      {"/%2Fapi", "INVALID"},
      {"/%2fapi", "INVALID"},
      {"/..", "INVALID"},
      {"/../api", "INVALID"},
      {"/%2e%2e/x", "INVALID"},
      {"/a/../../x", "INVALID"},
      {"/api/%00x", "INVALID"},
      {"/api/%0d%0a", "INVALID"},
      {"/api/%7F", "INVALID"},
      {"/api/%zz", "INVALID"},
      {"/api/%2", "INVALID"},
      {"/api/%", "INVALID"},
      {"/api%5Citems", "INVALID"},
      {"/api\\items", "INVALID"},
      {"/api#frag", "INVALID"},
      {"/api/\t", "INVALID"},
      {"api", "INVALID"},
      {"", "INVALID"},
  };
  for (const auto& [raw, want] : rows) EXPECT_EQ(normal(raw), want) << raw;
}

TEST(Target, NormalisingTwiceChangesNothing) {
  // (Not for a path with an encoded '%': decoding it twice is not decoding it once.)
  for (const std::string_view raw : {"//a/./b/../c//", "/%61/%2e/x/..", "/a/b/", "/a%20b/../c"}) {
    const std::string once = normal(raw);
    EXPECT_EQ(normal(once), once) << raw;
    std::string out;
    EXPECT_EQ(normalise_path(once, out), path_form::normal) << raw;
  }
}

TEST(Target, FormsOfTheTarget) {
  auto t = split_target("/a/b?x=1?y");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->path, "/a/b");
  EXPECT_EQ(t->query, "x=1?y");
  EXPECT_FALSE(t->authority);
  t = split_target("HTTP://Example.com:80/v1/decide?k=v");
  ASSERT_TRUE(t);
  EXPECT_EQ((std::pair{t->path, t->query}), (std::pair{std::string_view("/v1/decide"), std::string_view("k=v")}));
  EXPECT_EQ(t->authority, "Example.com:80");
  t = split_target("https://h?q");
  ASSERT_TRUE(t);
  EXPECT_EQ((std::pair{t->path, t->query}), (std::pair{std::string_view("/"), std::string_view("q")}));
  for (const std::string_view bad : {"", "*", "h:80", "a/b", "ftp://h/x", "http:///x", "http://u@h/x", "http://h#f"})
    EXPECT_FALSE(split_target(bad)) << bad;
}

TEST(Target, QueryValuesAreDecodedAndAmbiguityIsInvalid) {
  std::string v;
  EXPECT_EQ(query_value("user=%61lice", "user", v), query_form::found);
  EXPECT_EQ(v, "alice");
  EXPECT_EQ(query_value("us%65r=a+b%20c", "user", v), query_form::found);
  EXPECT_EQ(v, "a b c");
  EXPECT_EQ(query_value("x=%zz&user=1", "user", v), query_form::found);  // another's bad escape
  EXPECT_EQ(v, "1");
  EXPECT_EQ(query_value("user=1&user=1", "user", v), query_form::invalid);
  EXPECT_EQ(query_value("user=1&us%65r=2", "user", v), query_form::invalid);
  EXPECT_EQ(query_value("user=%z", "user", v), query_form::invalid);
  EXPECT_EQ(query_value("u%zz=1", "user", v), query_form::invalid);
  EXPECT_EQ(query_value("user=1#x", "user", v), query_form::invalid);
}

TEST(Framing, WhatRfc9112Refuses) {
  using H = std::vector<header_view>;
  const auto err = [](H h, unsigned version = 11) { return framing_error(h, version).has_value(); };
  EXPECT_FALSE(err({{"Host", "a"}}));
  EXPECT_FALSE(err({{"Host", "a"}, {"Transfer-Encoding", "Chunked"}}));
  EXPECT_FALSE(err({{"Host", "a"}, {"Content-Length", "12"}}));
  EXPECT_FALSE(err({}, 10));
  EXPECT_FALSE(err({{"Host", "[::1]:8080"}}));
  EXPECT_FALSE(err({{"Host", ""}}));
  EXPECT_TRUE(err({{"Host", "a"}, {"Transfer-Encoding", "chunked, identity"}}));
  EXPECT_TRUE(err({{"Host", "a"}, {"Transfer-Encoding", "gzip, chunked"}}));
  EXPECT_TRUE(err({{"Host", "a"}, {"Transfer-Encoding", "identity"}}));
  EXPECT_TRUE(err({{"Host", "a"}, {"Transfer-Encoding", ""}}));
  EXPECT_TRUE(err({{"Host", "a"}, {"Transfer-Encoding", "chunked"}, {"transfer-encoding", "chunked"}}));
  EXPECT_TRUE(err({{"Transfer-Encoding", "chunked"}}, 10));
  EXPECT_TRUE(err({{"Host", "a"}, {"Transfer-Encoding", "chunked"}, {"Content-Length", "1"}}));
  EXPECT_TRUE(err({{"Host", "a"}, {"Content-Length", "1"}, {"Content-Length", "1"}}));
  EXPECT_TRUE(err({{"Host", "a"}, {"Content-Length", "1, 1"}}));
  EXPECT_TRUE(err({{"Host", "a"}, {"Content-Length", "-1"}}));
  EXPECT_TRUE(err({{"Host", "a"}, {"Content-Length", ""}}));
  EXPECT_TRUE(err({}));
  EXPECT_TRUE(err({{"Host", "a"}, {"host", "a"}}));
  for (const std::string_view h : {"a b", "a/b", "a@b", "[::1", "[]", "h:x", "[::1]x"})
    EXPECT_TRUE(err({{"Host", h}})) << h;
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

TEST(Rules, EverySpellingOfAPathIsOneKeyAndTheInvalidOnesAreErrors) {
  const config c = rules_config("[[rules]]\npolicy = \"p\"\npath_prefix = \"/api/\"\nkey = \"path:2\"\n");
  const rule_set rs(c);
  std::vector<planned_check> out;
  for (const std::string_view t :
       {"/api/items", "//api//items", "/%61pi/it%65ms?x", "/x/../api/./items/", "http://h/api/items"}) {
    ASSERT_FALSE(rs.plan(request_view{"GET", t, {}, "p"}, out)) << t;
    ASSERT_EQ(out.size(), 1u) << t;
    EXPECT_EQ(out[0].key, "items") << t;
  }
  for (const std::string_view t : {"/api%2Fitems", "/../api/items", "/api/%zz", "*"}) {
    const auto e = rs.plan(request_view{"GET", t, {}, "p"}, out);
    ASSERT_TRUE(e) << t;
    EXPECT_EQ(e->field, "path") << t;
  }
}

TEST(Rules, AShadowRuleNeverGivesAnError) {
  const config c = rules_config(
      "[[rules]]\npolicy = \"p\"\npath_prefix = \"/api/\"\nkey = \"header:X-K\"\ncost = \"header:X-Cost\"\n"
      "shadow = true\n");
  const rule_set rs(c);
  std::vector<planned_check> out;
  const std::string long_key(c.lim.key_bytes + 1, 'k');
  const std::vector<std::pair<std::string_view, std::vector<header_view>>> bad{
      {"/api/x", {{"X-K", "a"}, {"X-Cost", "lots"}}},
      {"/api/x", {{"X-K", "a"}, {"X-Cost", "0"}}},
      {"/api/x", {{"X-K", "a"}, {"X-K", "b"}}},
      {"/api/x", {{"X-K", long_key}}},
      {"/api%2Fx", {{"X-K", "a"}}},
      {"/../x", {{"X-K", "a"}}},
  };
  for (const auto& [target, h] : bad) {
    ASSERT_FALSE(rs.plan(request_view{"GET", target, h, "p"}, out)) << target;
    ASSERT_EQ(out.size(), 1u) << target;
    EXPECT_TRUE(out[0].invalid && out[0].shadow) << target;
  }
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
  // The place is the expression's column (the option, 19: 5 + 19), not the
  // column inside the option's value that its own message also names.
  auto o = parse_config("[policies]\np = \"fixed-window 1/1s origin=1x\"\n", "o.toml");
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.err().field, "o.toml:2:24");
  EXPECT_EQ(o.err().message,
            "policies.p: origin='1x' at column 19: unknown unit 'x' at column 2 (use ns, us, ms, s, m or min, h, d)");
  EXPECT_EQ(parse_listen("127.0.0.1:99999").ok(), false);
  EXPECT_EQ(parse_listen("[::1]:80")->host, "::1");
}

TEST(Config, TheStoresClockIsTheDefaultAndClientTimeNeedsTheLocalOne) {
  const std::string redis = "[store]\nurl = \"redis://127.0.0.1:6379\"\n";
  const std::string policies = "[policies]\np = \"quota 1\"\n";
  auto d = parse_config(redis + policies, "c.toml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->store.clock, store_clock::store);
  EXPECT_EQ(d->store.max_clock_offset, 1'000'000'000);
  auto l = parse_config(redis + "clock = \"local\"\nmax_clock_offset = \"250ms\"\n" + policies, "c.toml");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->store.clock, store_clock::local);
  EXPECT_EQ(l->store.max_clock_offset, 250'000'000);
  // client_time: the clients' instants, so the local clock by default, and
  // "store" given with it an error naming both keys.
  auto t = parse_config("[server]\nclient_time = true\n" + redis + policies, "c.toml");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->store.clock, store_clock::local);
  auto bad = parse_config("[server]\nclient_time = true\n" + redis + "clock = \"store\"\n" + policies, "c.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.err().field, "c.toml:5:9");
  EXPECT_NE(bad.err().message.find("store.clock"), std::string::npos) << bad.err().message;
  EXPECT_NE(bad.err().message.find("server.client_time"), std::string::npos) << bad.err().message;
  auto typo = parse_config(redis + "clock = \"server\"\n" + policies, "c.toml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.err().message.find("must be \"store\" or \"local\""), std::string::npos) << typo.err().message;
  auto memory = parse_config("[store]\nclock = \"store\"\n" + policies, "c.toml");
  ASSERT_FALSE(memory.ok());
  EXPECT_NE(memory.err().message.find("only a remote store"), std::string::npos) << memory.err().message;
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
  auto st = make_store(c->store);
  ASSERT_TRUE(st);
  auto svc = service::create(std::move(c).value(), std::move(st).value());
  ASSERT_TRUE(svc);
  http_api api(**svc);
  std::size_t checked = 0;
  for (const char* body : {R"({"x":1e999})", R"({"checks":[{"policy":"api","key":"k"}],"now":-92233720368547e5808})",
                           R"({"checks":[{"policy":"api","key":"k","cost":1e400}]})", "[-1E+99999]"}) {
    http_request req;
    req.method = "POST";
    req.target = "/v1/decide";
    req.body = body;
    req.peer = "127.0.0.1";
    http_response res;
    api.handle(req, res, listener_role::decision);
    EXPECT_EQ(res.status, 400U) << body;
    EXPECT_NE(res.body.find("\"field\":\"body\""), std::string::npos) << body << ": " << res.body;
    ++checked;
  }
  EXPECT_EQ(checked, 4U);
}

}  // namespace
}  // namespace sluice::serve
