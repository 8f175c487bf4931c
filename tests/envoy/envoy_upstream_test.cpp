// envoyproxy/ratelimit's own YAML files (tests/envoy/fixtures/upstream/,
// copied unchanged, origin in its README), in process: each loads where
// that service's loader accepts it and is refused where it refuses it, and
// its descriptors match the rules that service's config_test.go says they
// do (wildcards anywhere in a value, share_threshold, quota_mode,
// metadata). The decisions through gRPC are test_envoy.py's (UpstreamFiles).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"
#include "envoy_rules.hpp"
#include "envoy_yaml.hpp"

namespace sluice::serve::envoy_upstream_test {
namespace {

const std::string upstream = std::string(SLUICE_ENVOY_FIXTURES) + "/upstream/ratelimit/";

// The configuration `sluice serve` reads from a TOML file naming `files`
// (paths under upstream/ratelimit/) and nothing else.
result<config> load(const std::vector<std::string>& files) {
  std::string list;
  for (const auto& f : files) list += (list.empty() ? "\"" : ", \"") + upstream + f + "\"";
  return parse_config("[grpc]\nenvoy_config = [" + list + "]\n", "t.toml");
}

using entries = std::vector<std::pair<std::string, std::string>>;

// The rule a descriptor matches ("(none)" for none) and the values its
// state is keyed by, joined with '|'.
std::pair<std::string, std::string> match(const config& c, std::string_view domain, const entries& es) {
  std::vector<entry_view> v;
  for (const auto& [k, val] : es) v.push_back(entry_view{k, val});
  std::vector<entry_view> keyed(v.size());
  const auto i = match_envoy(c, domain, v, keyed);
  if (!i) return {"(none)", ""};
  std::string key;
  for (const auto& e : keyed) key += (key.empty() ? "" : "|") + std::string(e.value);
  return {c.envoy[*i].name, key};
}

TEST(EnvoyUpstreamFiles, EachLoadsExactlyWhereThatServiceAcceptsIt) {
  // config_test.go's files it loads alone, and the example files.
  for (const char* f :
       {"examples/ratelimit/config/config.yaml", "examples/ratelimit/config/example.yaml",
        "test/config/basic_config.yaml", "test/config/duplicate_domain.yaml", "test/config/merge_domain_key1.yaml",
        "test/config/merge_domain_key2.yaml", "test/config/metadata.yaml", "test/config/shadowmode_config.yaml",
        "test/config/share_threshold.yaml", "test/config/wildcard.yaml",
        "test/integration/runtime/current/ratelimit/config/another.yaml",
        "test/integration/runtime/current/ratelimit/config/basic.yaml",
        "test/integration/runtime/current/ratelimit/config/share_threshold.yaml",
        "test/integration/runtime/current/ratelimit/reload.yaml"}) {
    auto c = load({f});
    EXPECT_TRUE(c) << f << ": " << (c ? "" : c.err().what());
  }
  // Those it refuses (config_test.go's Test* that expect a panic), and the
  // files of examples/ that are no rate limit configuration at all (Envoy's,
  // the OpenTelemetry collector's, the statsd exporter's): an unknown key.
  for (const char* f :
       {"test/config/bad_limit_unit.yaml", "test/config/bad_yaml.yaml", "test/config/duplicate_key.yaml",
        "test/config/empty_domain.yaml", "test/config/empty_key.yaml", "test/config/misspelled_key.yaml",
        "test/config/misspelled_key2.yaml", "test/config/non_map_list.yaml", "test/config/non_string_key.yaml",
        "test/config/replaces_empty.yaml", "test/config/replaces_self.yaml", "test/config/unlimited_with_unit.yaml",
        "examples/envoy/mock.yaml", "examples/envoy/proxy.yaml", "examples/otlp-collector/config.yaml",
        "examples/prom-statsd-exporter/conf.yaml"}) {
    auto c = load({f});
    EXPECT_FALSE(c) << f << " was accepted";
    if (!c) {
      EXPECT_NE(c.err().field.find(upstream + f), std::string::npos) << c.err().what();
    }
  }
  // Together: a domain twice (TestDuplicateDomain, TestDuplicateKeyDomainMerge
  // and TestDomainMerge without MERGE_DOMAIN_CONFIG).
  EXPECT_FALSE(load({"test/config/basic_config.yaml", "test/config/duplicate_domain.yaml"}));
  EXPECT_FALSE(load({"test/config/merge_domain_key1.yaml", "test/config/merge_domain_key1.yaml"}));
  EXPECT_FALSE(load({"test/config/merge_domain_key1.yaml", "test/config/merge_domain_key2.yaml"}));
}

TEST(EnvoyUpstreamFiles, ADomainThatLimitsNothingNeedsNoPolicy) {
  // duplicate_domain.yaml is a domain with no descriptors.
  auto c = load({"test/config/duplicate_domain.yaml"});
  ASSERT_TRUE(c) << c.err().what();
  EXPECT_TRUE(c->policies.empty());
  EXPECT_TRUE(knows_domain(*c, "test-domain"));
  EXPECT_EQ(match(*c, "test-domain", {{"key1", "value1"}}).first, "(none)");
  // A file of unlimited entries only.
  config only;
  ASSERT_FALSE(read_envoy_yaml("domain: free\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true}\n",
                               "free.yaml", only));
  EXPECT_TRUE(only.policies.empty());
  ASSERT_EQ(only.envoy.size(), 1u);
  EXPECT_TRUE(only.envoy[0].unlimited);
}

TEST(EnvoyUpstreamFiles, WildcardsAnywhereInAValue) {
  // config_test.go's TestWildcardConfig, case by case.
  auto c = load({"test/config/wildcard.yaml"});
  ASSERT_TRUE(c) << c.err().what();
  const struct {
    entries es;
    const char* rule;
  } cases[] = {
      {{{"noVal", "foo1"}}, "test-domain.noVal"},
      {{{"wild", "foo1"}}, "test-domain.wild_foo*"},
      {{{"wild", "foo"}}, "test-domain.wild_foo*"},
      {{{"nestedWild", "val1"}, {"wild", "goo2"}}, "test-domain.nestedWild_val1.wild_goo*"},
      {{{"wild", "bar"}}, "(none)"},
      {{{"noWild", "foo1"}}, "(none)"},
      {{{"midWild", "barab"}}, "test-domain.midWild_bar*b"},
      {{{"midWild", "bar123b"}}, "test-domain.midWild_bar*b"},
      {{{"midWild", "barb"}}, "test-domain.midWild_bar*b"},  // '*' matches the empty run
      {{{"midWild", "bara"}}, "(none)"},
      {{{"midWild", "xbarb"}}, "(none)"},
      {{{"midWild", "bab"}}, "(none)"},  // "bar" and "b" may not overlap
      {{{"multiWild", "foo123bar456baz"}}, "test-domain.multiWild_foo*bar*baz"},
      {{{"multiWild", "foobarbaz"}}, "test-domain.multiWild_foo*bar*baz"},
      {{{"multiWild", "foo123baz"}}, "(none)"},
      {{{"multiWild", "bar456baz"}}, "(none)"},
      {{{"multiWild", "foobazbar"}}, "(none)"},  // in order
  };
  for (const auto& k : cases) {
    const auto [rule, key] = match(*c, "test-domain", k.es);
    EXPECT_EQ(rule, k.rule) << k.es.back().second;
    // Without share_threshold each value is limited apart: keyed by itself.
    if (rule != "(none)") {
      EXPECT_EQ(key.substr(key.rfind('|') + 1), k.es.back().second);
    }
  }
}

TEST(EnvoyUpstreamFiles, WildcardMatchIsThatServicesOwn) {
  const struct {
    const char* pattern;
    const char* value;
    bool match;
  } cases[] = {
      {"foo*", "foo", true},
      {"foo*", "fo", false},
      {"*", "", true},
      {"*", "x", true},
      {"a*b*c", "abc", true},
      {"a*b*c", "a_b_b_c", true},
      {"a*b*c", "acb", false},
      {"a*a", "a", false},
      {"a*a", "aa", true},
      {"**", "", true},
      {"a**b", "ab", true},
      {"*x*", "yyxyy", true},
      {"*x*", "yyy", false},
      {"/api/*/action", "/api/v1/action", true},
      {"x", "x", true},
      {"/api/*/action", "/api/action", false},
      {"/api/*/action", "/api//action", true},
  };
  for (const auto& k : cases)
    EXPECT_EQ(envoy_wildcard_match(k.pattern, k.value), k.match) << k.pattern << " " << k.value;
}

TEST(EnvoyUpstreamFiles, ExactValueBeforeAWildcardBeforeTheKeyAlone) {
  config c;
  ASSERT_FALSE(
      read_envoy_yaml("domain: d\ndescriptors:\n"
                      "  - {key: k, rate_limit: {unit: second, requests_per_unit: 1}}\n"
                      "  - {key: k, value: 'a*', rate_limit: {unit: second, requests_per_unit: 2}}\n"
                      "  - {key: k, value: 'ab*', rate_limit: {unit: second, requests_per_unit: 3}}\n"
                      "  - {key: k, value: abc, rate_limit: {unit: second, requests_per_unit: 4}}\n",
                      "p.yaml", c));
  EXPECT_EQ(match(c, "d", {{"k", "abc"}}).first, "d.k_abc");  // exact
  EXPECT_EQ(match(c, "d", {{"k", "abd"}}).first, "d.k_a*");   // the first wildcard in the file
  EXPECT_EQ(match(c, "d", {{"k", "ab*"}}).first, "d.k_ab*");  // a wildcard's own text is exact
  EXPECT_EQ(match(c, "d", {{"k", "xyz"}}).first, "d.k");      // the key alone
}

TEST(EnvoyUpstreamFiles, ShareThresholdKeysByTheWildcard) {
  // config_test.go's TestShareThreshold: ShareThresholdKeyPattern, per entry.
  auto c = load({"test/config/share_threshold.yaml"});
  ASSERT_TRUE(c) << c.err().what();
  using row = std::pair<entries, std::pair<std::string, std::string>>;
  const std::vector<row> rows = {
      {{{"files", "files/a.pdf"}}, {"test-domain.files_files/*", "files/*"}},
      {{{"files", "files/b.csv"}}, {"test-domain.files_files/*", "files/*"}},
      {{{"route", "api/v1"}, {"method", "GET"}}, {"test-domain.route_api/*.method", "api/*|GET"}},
      {{{"nested", "parent"}, {"files", "nested/file1.txt"}},
       {"test-domain.nested_parent.files_nested/*", "parent|nested/*"}},
      {{{"files", "top/file1.txt"}, {"files", "nested/file1.txt"}},
       {"test-domain.files_top/*.files_nested/*", "top/*|nested/*"}},
      // The parent shares, the child (share_threshold: false) does not.
      {{{"path", "path/foo"}, {"file", "file/doc1"}, {"type", "pdf"}},
       {"test-domain.path_path/*.file_file/*.type", "path/*|file/doc1|pdf"}},
      {{{"user", "user/alice"}, {"resource", "res/file1"}, {"action", "read"}},
       {"test-domain.user_user/*.resource_res/*.action", "user/*|res/*|read"}},
      // An exact value keeps its own state; the wildcard's values share one.
      {{{"file", "test1"}}, {"test-domain.file_test1", "test1"}},
      {{{"file", "test23"}}, {"test-domain.file_test*", "test*"}},
      {{{"midpath", "/api-beta-v1"}}, {"test-domain.midpath_/api*v1", "/api*v1"}},
      {{{"midpath", "/api/v2"}}, {"(none)", ""}},
      {{{"multiroute", "svcXXXepYYYrpc"}}, {"test-domain.multiroute_svc*ep*rpc", "svc*ep*rpc"}},
      {{{"tenant", "t99prod"}, {"resource", "resBBBv2"}},
       {"test-domain.tenant_t*prod.resource_res*v2", "t*prod|res*v2"}},
  };
  for (const auto& [es, want] : rows) EXPECT_EQ(match(*c, "test-domain", es), want) << es.back().second;
  // Only on a wildcard, as that service's loader says.
  config bad;
  const auto e = read_envoy_yaml(
      "domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n"
      "    rate_limit: {unit: second, requests_per_unit: 1}\n",
      "s.yaml", bad);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->what(),
            "s.yaml:5:22: descriptors[0].share_threshold: only a wildcard value (one holding '*') can share its "
            "limit, and key 'k' value 'v' is none");
}

TEST(EnvoyUpstreamFiles, QuotaModeAndMetadataAreTheRules) {
  auto c = load({"examples/ratelimit/config/example.yaml"});
  ASSERT_TRUE(c) << c.err().what();
  const auto rule = [&](const entries& es) -> const envoy_rule& {
    std::vector<entry_view> v;
    for (const auto& [k, val] : es) v.push_back(entry_view{k, val});
    return c->envoy.at(match_envoy(*c, "rl", v).value());
  };
  const envoy_rule& s1 = rule({{"service", "service_1"}});
  EXPECT_TRUE(s1.quota);
  ASSERT_TRUE(s1.metadata);
  EXPECT_EQ(*s1.metadata, nlohmann::json::parse(R"({"service_with_quota": {"name": "service_1"}})"));
  EXPECT_FALSE(rule({{"foo", "x"}}).quota);
  EXPECT_FALSE(rule({{"foo", "x"}}).metadata);
  EXPECT_EQ(rule({{"foo", "x"}, {"bar", "bkthomps"}}).limit_name, "bkthomps");
  // metadata.yaml: on the rule of its descriptor.
  auto m = load({"test/config/metadata.yaml"});
  ASSERT_TRUE(m) << m.err().what();
  std::vector<entry_view> v{{"key1", "value1"}, {"subkey1", "x"}};
  const envoy_rule& sub = m->envoy.at(match_envoy(*m, "test-domain", v).value());
  ASSERT_TRUE(sub.metadata);
  EXPECT_EQ(*sub.metadata, nlohmann::json::parse(R"({"name": "service_1"})"));
}

TEST(EnvoyUpstreamFiles, MetadataScalarsAreTypedAsThatServiceTypesThem) {
  config c;
  ASSERT_FALSE(
      read_envoy_yaml("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, "
                      "requests_per_unit: 1}\n    metadata:\n      s: text\n      q: '12'\n      i: 12\n"
                      "      h: 0x1F\n      o: 0o17\n      b: 0b101\n      u: 1_000\n      f: 1.5e3\n"
                      "      d: .5\n      t: yes\n      n: ~\n      e:\n      l: [1, two, {x: off}]\n"
                      "      v: 1.2.3\n",
                      "m.yaml", c));
  ASSERT_EQ(c.envoy.size(), 1u);
  ASSERT_TRUE(c.envoy[0].metadata);
  EXPECT_EQ(*c.envoy[0].metadata, nlohmann::json::parse(R"({"s": "text", "q": "12", "i": 12.0, "h": 31.0, "o": 15.0,
      "b": 5.0, "u": 1000.0, "f": 1500.0, "d": 0.5, "t": true, "n": null, "e": null,
      "l": [1.0, "two", {"x": false}], "v": "1.2.3"})"));
  config bad;
  const auto e = read_envoy_yaml("domain: d\ndescriptors:\n  - key: k\n    metadata: [1]\n", "m.yaml", bad);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->what(), "m.yaml:4:15: descriptors[0].metadata: must be a mapping of key: value");
}

}  // namespace
}  // namespace sluice::serve::envoy_upstream_test
