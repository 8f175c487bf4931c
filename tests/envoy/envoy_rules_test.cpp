// The [grpc] and [[envoy]] sections and descriptor matching (envoy_rules.hpp),
// in process: no gRPC needed.
#include "envoy_rules.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config.hpp"

namespace sluice::serve {
namespace {

const char* const base = R"(
[policies]
per_ip = "gcra 10/1s"
checkout = "fixed-window 5/1m"

[grpc]
listen = "127.0.0.1:8081"

[[envoy]]
domain = "edge"
descriptor = ["remote_address"]
policy = "per_ip"

[[envoy]]
name = "checkout"
domain = "edge"
descriptor = ["generic_key=checkout", { key = "us=er" }]
policy = "checkout"

[[envoy]]
domain = "edge"
descriptor = ["generic_key", "user"]
policy = "per_ip"
)";

config parsed(const std::string& text) {
  auto c = parse_config(text, "t.toml");
  EXPECT_TRUE(c) << (c ? "" : c.err().what());
  return c ? *c : config{};
}

std::string error_of(const std::string& text) {
  auto c = parse_config(text, "t.toml");
  return c ? std::string("(accepted)") : c.err().what();
}

TEST(EnvoyRules, ReadsListenerAndRules) {
  const config c = parsed(base);
  ASSERT_TRUE(c.grpc);
  EXPECT_EQ(c.grpc->port, 8081);
  ASSERT_EQ(c.envoy.size(), 3u);
  EXPECT_EQ(c.envoy[0].name, "envoy 1");
  EXPECT_EQ(c.envoy[1].name, "checkout");
  ASSERT_EQ(c.envoy[1].entries.size(), 2u);
  EXPECT_EQ(c.envoy[1].entries[0].key, "generic_key");
  EXPECT_EQ(c.envoy[1].entries[0].value, "checkout");
  EXPECT_EQ(c.envoy[1].entries[1].key, "us=er");
  EXPECT_FALSE(c.envoy[1].entries[1].value);
}

TEST(EnvoyRules, MatchesSameKeysInOrderAndLength) {
  const config c = parsed(base);
  const std::vector<entry_view> ip{{"remote_address", "10.0.0.1"}};
  EXPECT_EQ(match_envoy(c, "edge", ip), 0u);
  EXPECT_FALSE(match_envoy(c, "other", ip));
  const std::vector<entry_view> checkout{{"generic_key", "checkout"}, {"us=er", "alice"}};
  EXPECT_EQ(match_envoy(c, "edge", checkout), 1u);
  // Another value of the fixed entry falls to the next rule only if its keys match.
  const std::vector<entry_view> other{{"generic_key", "cart"}, {"user", "alice"}};
  EXPECT_EQ(match_envoy(c, "edge", other), 2u);
  const std::vector<entry_view> fixed_mismatch{{"generic_key", "cart"}, {"us=er", "alice"}};
  EXPECT_FALSE(match_envoy(c, "edge", fixed_mismatch));
  // Longer or shorter descriptors do not match.
  const std::vector<entry_view> longer{{"remote_address", "10.0.0.1"}, {"path", "/"}};
  EXPECT_FALSE(match_envoy(c, "edge", longer));
  const std::vector<entry_view> swapped{{"user", "alice"}, {"generic_key", "cart"}};
  EXPECT_FALSE(match_envoy(c, "edge", swapped));
  EXPECT_TRUE(knows_domain(c, "edge"));
  EXPECT_FALSE(knows_domain(c, "nowhere"));
}

TEST(EnvoyRules, KeyJoinsValuesAsHttpKeyParts) {
  std::string key;
  const std::vector<entry_view> one{{"remote_address", "10.0.0.1"}};
  envoy_key(one, key);
  EXPECT_EQ(key, "10.0.0.1");
  const std::vector<entry_view> two{{"generic_key", "a:b"}, {"user", "50%"}};
  envoy_key(two, key);
  EXPECT_EQ(key, "a%3Ab:50%25");  // ':' and '%' escaped: no two descriptors share a key by accident
  const std::vector<entry_view> split{{"generic_key", "a"}, {"user", "b:50%"}};
  std::string other;
  envoy_key(split, other);
  EXPECT_NE(key, other);
}

TEST(EnvoyRules, ErrorsNameFileLineColumn) {
  const std::string p = "[policies]\na = \"gcra 1/1s\"\n";
  EXPECT_EQ(error_of(p + "[[envoy]]\ndomain = \"x\"\ndescriptor = [\"k\"]\npolicy = \"b\"\n"),
            "t.toml:6:10: envoy[0].policy: unknown policy 'b' (defined: a)");
  EXPECT_EQ(error_of(p + "[[envoy]]\ndescriptor = [\"k\"]\npolicy = \"a\"\n"),
            "t.toml:3:1: envoy[0]: every [[envoy]] rule needs a domain");
  EXPECT_EQ(error_of(p + "[[envoy]]\ndomain = \"x\"\ndescriptor = []\npolicy = \"a\"\n"),
            "t.toml:5:14: envoy[0].descriptor: must name at least one entry");
  EXPECT_EQ(error_of(p + "[[envoy]]\ndomain = \"x\"\ndescriptor = [\"=v\"]\npolicy = \"a\"\n"),
            "t.toml:5:15: envoy[0].descriptor[0]: the entry's key must not be empty");
  EXPECT_EQ(error_of(p + "[[envoy]]\ndomain = \"x\"\ndescriptor = [\"k\"]\npolicy = \"a\"\nshadow = true\n"),
            "t.toml:7:1: unknown key 'shadow' in envoy[0] (known: name, domain, descriptor, policy)");
  EXPECT_EQ(error_of(p + "[[envoy]]\ndomain = \"x\"\ndescriptor = [\"k\"]\npolicy = \"a\"\n" +
                     "[[envoy]]\ndomain = \"x\"\ndescriptor = [\"k\"]\npolicy = \"a\"\n"),
            "t.toml:9:14: envoy[1].descriptor: the same domain and descriptor as envoy[0] (only the first would ever "
            "apply)");
  EXPECT_EQ(error_of(p + "[grpc]\nport = 1\n"),
            "t.toml:4:1: unknown key 'port' in grpc (known: listen, envoy_config, dynamic_metadata, tls_cert_file, "
            "tls_key_file, tls_client_ca_file)");
  EXPECT_EQ(error_of(p + "[envoy]\n"), "t.toml:3:1: envoy must be an array of tables ([[envoy]])");
}

}  // namespace
}  // namespace sluice::serve
