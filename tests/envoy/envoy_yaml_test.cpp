// envoyproxy/ratelimit's YAML files as Envoy rules (envoy_yaml.hpp), in
// process: the README's examples (tests/envoy/fixtures/readme/, written
// again) map to the rules, policies and matches its README documents, and
// every bad input is an error at FILE:LINE:COLUMN. The decisions
// themselves, through gRPC, are test_envoy.py's (EnvoyYaml*).
#include "envoy_yaml.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <variant>
#include <vector>

#include "config.hpp"
#include "envoy_rules.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/store.hpp"
#include "stores.hpp"

namespace sluice::serve {
namespace {

const std::string fixtures = SLUICE_ENVOY_FIXTURES;

const config& readme() {
  static const config c = [] {
    auto r = load_config(fixtures + "/readme.toml");
    EXPECT_TRUE(r) << (r ? "" : r.err().what());
    return r ? *r : config{};
  }();
  return c;
}

// The rule a descriptor of (key, value) pairs matches in `domain`, or null.
const envoy_rule* rule_for(const config& c, std::string_view domain,
                           std::vector<std::pair<std::string, std::string>> entries) {
  std::vector<entry_view> v;
  for (const auto& [k, val] : entries) v.push_back(entry_view{k, val});
  const auto i = match_envoy(c, domain, v);
  return i ? &c.envoy[*i] : nullptr;
}

// The policy expression a descriptor is limited by ("" for none).
std::string limit_of(const config& c, std::string_view domain,
                     std::vector<std::pair<std::string, std::string>> entries) {
  const envoy_rule* r = rule_for(c, domain, std::move(entries));
  if (r == nullptr) return "(no rule)";
  if (r->unlimited) return "(unlimited)";
  const named_policy* p = c.find_policy(r->policy);
  return p == nullptr ? "(no policy)" : format_policy(p->policy);
}

TEST(EnvoyYaml, ReadmeExamplesLoadOneTreePerDomain) {
  const config& c = readme();
  std::vector<std::string> domains;
  for (const auto& t : c.envoy_trees) domains.push_back(t.domain);
  EXPECT_EQ(domains, (std::vector<std::string>{"mongo_cps", "messaging", "edge_proxy_per_ip", "example4", "internal",
                                               "example6", "example7", "example8", "example9"}));
  // One policy per limit (unlimited has none), each the unit's fixed window.
  EXPECT_EQ(c.policies.size(), 15u);
  for (const auto& r : c.envoy) EXPECT_TRUE(r.in_tree) << r.name;
}

TEST(EnvoyYaml, Example1ValuesHaveTheirOwnLimits) {
  const config& c = readme();
  EXPECT_EQ(limit_of(c, "mongo_cps", {{"database", "users"}}), "fixed-window 500/1s");
  EXPECT_EQ(limit_of(c, "mongo_cps", {{"database", "default"}}), "fixed-window 500/1s");
  EXPECT_EQ(limit_of(c, "mongo_cps", {{"database", "orders"}}), "(no rule)");
  // Two rules, two policies: the two values never share a state.
  EXPECT_NE(rule_for(c, "mongo_cps", {{"database", "users"}})->policy,
            rule_for(c, "mongo_cps", {{"database", "default"}})->policy);
  EXPECT_EQ(rule_for(c, "mongo_cps", {{"database", "users"}})->name, "mongo_cps.database_users");
}

TEST(EnvoyYaml, Example2NestsUnderAPlaceholder) {
  const config& c = readme();
  EXPECT_EQ(limit_of(c, "messaging", {{"message_type", "marketing"}, {"to_number", "2061111111"}}),
            "fixed-window 5/1d");
  EXPECT_EQ(limit_of(c, "messaging", {{"to_number", "2061111111"}}), "fixed-window 100/1d");
  // The placeholder has no limit of its own, and another type has no rule.
  EXPECT_EQ(limit_of(c, "messaging", {{"message_type", "marketing"}}), "(no rule)");
  EXPECT_EQ(limit_of(c, "messaging", {{"message_type", "transactional"}, {"to_number", "2061111111"}}), "(no rule)");
}

TEST(EnvoyYaml, Example3ExactValueBeforeTheKeyAlone) {
  const config& c = readme();
  EXPECT_EQ(limit_of(c, "edge_proxy_per_ip", {{"remote_address", "50.0.0.1"}}), "fixed-window 10/1s");
  EXPECT_EQ(limit_of(c, "edge_proxy_per_ip", {{"remote_address", "50.0.0.5"}}), "fixed-window 0/1s");
}

TEST(EnvoyYaml, Example4MatchesOnlyTheSameDepth) {
  const config& c = readme();
  EXPECT_EQ(limit_of(c, "example4", {{"key", "value"}, {"subkey", "subvalue"}}), "fixed-window 300/1s");
  EXPECT_EQ(limit_of(c, "example4", {{"key", "value"}}), "(no rule)");
  EXPECT_EQ(limit_of(c, "example4", {{"key", "value"}, {"subkey", "x"}, {"more", "y"}}), "(no rule)");
}

TEST(EnvoyYaml, Example5UnlimitedIsMatchedWithoutPolicy) {
  const config& c = readme();
  EXPECT_EQ(limit_of(c, "internal", {{"ldap", "anything"}}), "(unlimited)");
  EXPECT_EQ(limit_of(c, "internal", {{"azure", "x"}}), "fixed-window 100/1m");
}

TEST(EnvoyYaml, Example6ShadowModeIsKeptPerRule) {
  const config& c = readme();
  const envoy_rule* a = rule_for(c, "example6", {{"service", "auth"}, {"user", "user-a"}});
  const envoy_rule* b = rule_for(c, "example6", {{"service", "auth"}, {"user", "user-b"}});
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(a->shadow);
  EXPECT_FALSE(b->shadow);
  EXPECT_EQ(limit_of(c, "example6", {{"service", "auth"}, {"user", "user-b"}}), "fixed-window 20/1s");
}

TEST(EnvoyYaml, Example7ReplacesNamesTheLimit) {
  const config& c = readme();
  const envoy_rule* first = rule_for(c, "example7", {{"key_1", "value_1"}, {"user", "bkthomps"}});
  const envoy_rule* second = rule_for(c, "example7", {{"key_2", "value_2"}, {"user", "bkthomps"}});
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(first->limit_name, "specific_limit");
  EXPECT_EQ(second->replaces, std::vector<std::string>{"specific_limit"});
}

TEST(EnvoyYaml, Example8DetailedMetricChangesNoMatch) {
  const config& c = readme();
  EXPECT_EQ(limit_of(c, "example8", {{"key1", "unspecified_value"}}), "fixed-window 10/1m");
  EXPECT_EQ(limit_of(c, "example8", {{"key1", "value1"}}), "fixed-window 20/1m");
}

TEST(EnvoyYaml, Example9PrefixWildcard) {
  const config& c = readme();
  EXPECT_EQ(limit_of(c, "example9", {{"key1", "value_1"}}), "fixed-window 20/1m");
  EXPECT_EQ(limit_of(c, "example9", {{"key1", "value"}}), "fixed-window 20/1m");
  EXPECT_EQ(limit_of(c, "example9", {{"key1", "valu"}}), "(no rule)");
  EXPECT_EQ(limit_of(c, "example9", {{"key1", "other_value"}}), "(no rule)");
}

TEST(EnvoyYaml, UnitsAreThatServicesLengths) {
  // envoyproxy/ratelimit's UnitToDivider: a month is 30 days, a year 365.
  const std::pair<const char*, tick> units[] = {{"second", 1},        {"Minute", 60},      {"HOUR", 3600},
                                                {"day", 86400},       {"week", 7 * 86400}, {"month", 30 * 86400},
                                                {"year", 365 * 86400}};
  for (const auto& [unit, seconds] : units) {
    const auto expr = envoy_unit_policy(unit, 7);
    ASSERT_TRUE(expr) << unit;
    auto p = parse_policy(*expr);
    ASSERT_TRUE(p) << *expr;
    const auto* fw = std::get_if<fixed_window>(&*p);
    ASSERT_NE(fw, nullptr) << *expr;
    EXPECT_EQ(fw->limit().limit, 7) << unit;
    EXPECT_EQ(fw->limit().window, seconds * 1'000'000'000) << unit;
    EXPECT_EQ(fw->origin(), 0) << unit;  // aligned to the clock's tick 0: the Unix epoch in the service
  }
  EXPECT_FALSE(envoy_unit_policy("fortnight", 1));
}

TEST(EnvoyYaml, ServiceMemoryStoreReadsTheUnixEpochClock) {
  // Fixed windows start on the epoch only if the store's tick 0 is the
  // epoch: the memory store of `sluice serve` reads the realtime clock, as
  // the Redis store does (it read the steady clock before).
  auto st = make_memory_store(store_config{});
  ASSERT_TRUE(st);
  const auto wall = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const tick before = wall();
  const tick now = (*st)->now();
  const tick after = wall();
  EXPECT_GE(now, before);
  EXPECT_LE(now, after);
}

// An error of the text `yaml` read as file "r.yaml".
std::string yaml_error(const std::string& yaml, const std::string& toml_policies = "") {
  config c;
  if (!toml_policies.empty()) {
    auto t = parse_config(toml_policies, "t.toml");
    EXPECT_TRUE(t) << (t ? "" : t.err().what());
    if (t) c = *t;
  }
  auto e = read_envoy_yaml(yaml, "r.yaml", c);
  return e ? e->what() : std::string("(accepted)");
}

TEST(EnvoyYaml, ErrorsNameFileLineColumn) {
  // YAML syntax.
  EXPECT_EQ(yaml_error("domain: d\ndescriptors:\n  - key: [a\n").substr(0, 10), "r.yaml:4:1");
  // An unknown key, at any level.
  EXPECT_EQ(yaml_error("domain: d\ndescriptors:\n  - key: a\n    rate_limt: {unit: second, requests_per_unit: 1}\n"),
            "r.yaml:4:5: unknown key 'rate_limt' in descriptors[0] (known: key, value, rate_limit, descriptors, "
            "shadow_mode, quota_mode, detailed_metric, value_to_metric, share_threshold, metadata)");
  EXPECT_EQ(yaml_error("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, "
                       "burst: 2}\n"),
            "r.yaml:4:54: unknown key 'burst' in descriptors[0].rate_limit (known: unit, requests_per_unit, "
            "unlimited, name, replaces)");
  EXPECT_EQ(yaml_error("domian: d\n"), "r.yaml:1:1: unknown key 'domian' in the file (known: domain, descriptors)");
  // An unknown unit.
  EXPECT_EQ(yaml_error("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: fortnight\n"
                       "      requests_per_unit: 1\n"),
            "r.yaml:5:13: descriptors[0].rate_limit.unit: unknown unit 'fortnight' (second, minute, hour, day, "
            "week, month or year)");
  // A negative requests_per_unit, and one past uint32.
  EXPECT_EQ(yaml_error("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n"
                       "      requests_per_unit: -1\n"),
            "r.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be a whole number from 0 to 4294967295 "
            "(got '-1')");
  EXPECT_NE(yaml_error("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: "
                       "4294967296}\n")
                .find("r.yaml:4:51: descriptors[0].rate_limit.requests_per_unit: must be a whole number"),
            std::string::npos);
  // A descriptor given twice at one level (here nested), naming both places.
  EXPECT_EQ(yaml_error("domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        value: x\n"
                       "      - key: b\n        value: x\n"),
            "r.yaml:7:9: descriptors[0].descriptors[1]: a descriptor with key 'b' value 'x' is already at "
            "r.yaml:5:9 (only one would ever match)");
  // A key given twice in one mapping.
  EXPECT_EQ(yaml_error("domain: d\ndomain: e\n"), "r.yaml:2:1: the file.domain: given twice");
  // Missing pieces.
  EXPECT_EQ(yaml_error("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n"),
            "r.yaml:5:7: descriptors[0].rate_limit: needs requests_per_unit (a whole number; 0 denies every "
            "request)");
  EXPECT_EQ(yaml_error("descriptors: []\n"), "r.yaml:1:1: needs a domain (domain: NAME)");
  EXPECT_EQ(yaml_error(""), "r.yaml:1:1: empty: an envoyproxy/ratelimit file needs a domain");
  EXPECT_EQ(yaml_error("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true, unit: second}\n"),
            "r.yaml:4:41: descriptors[0].rate_limit: an unlimited limit takes no unit nor requests_per_unit");
  // replaces must name a limit of the domain, never its own.
  EXPECT_EQ(yaml_error("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n"
                       "      requests_per_unit: 1\n      replaces: [{name: nobody}]\n"),
            "r.yaml:7:25: replaces: no rate_limit of domain 'd' is named 'nobody'");
  // A domain of a TOML [[envoy]] rule.
  EXPECT_EQ(yaml_error("domain: edge\n",
                       "[policies]\np = \"gcra 1/1s\"\n[[envoy]]\ndomain = \"edge\"\n"
                       "descriptor = [\"k\"]\npolicy = \"p\"\n"),
            "r.yaml:1:9: domain 'edge' is already configured by the [[envoy]] rule 'envoy 1' (a domain comes from "
            "one place)");
}

TEST(EnvoyYaml, AnErrorLeavesTheConfigurationAsItWas) {
  config c;
  EXPECT_TRUE(
      read_envoy_yaml("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, "
                      "requests_per_unit: 1}\n  - key: b\n    rate_limit: {unit: nope, requests_per_unit: 1}\n",
                      "r.yaml", c));
  EXPECT_TRUE(c.policies.empty());
  EXPECT_TRUE(c.envoy.empty());
  EXPECT_TRUE(c.envoy_trees.empty());
}

TEST(EnvoyYaml, TomlNamesTheFilesAndTheirErrors) {
  // A pattern that names no file is an error at the TOML value.
  auto c = parse_config("[grpc]\nenvoy_config = [\"no-such-dir/*.yaml\"]\n", fixtures + "/t.toml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.err().field, fixtures + "/t.toml:2:16");
  EXPECT_NE(c.err().message.find("names no file"), std::string::npos);
  // A file of the same domain twice: the second names the first.
  c = parse_config("[grpc]\nenvoy_config = [\"readme/1-*.yaml\", \"readme/1-*.yaml\"]\n", fixtures + "/t.toml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.err().field, fixtures + "/readme/1-mongo_cps.yaml:3:9");
  EXPECT_EQ(c.err().message,
            "domain 'mongo_cps' is already configured at " + fixtures + "/readme/1-mongo_cps.yaml:3:9");
  // A device (here /dev/null; /dev/zero would never end) is refused, not read.
  c = parse_config("[grpc]\nenvoy_config = \"/dev/null\"\n", "t.toml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.err().what(), "t.toml:2:16: envoy_config: '/dev/null' is not a regular file");
  c = parse_config("[grpc]\nenvoy_config = 3\n", "t.toml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.err().field, "t.toml:2:16");
}

}  // namespace
}  // namespace sluice::serve
