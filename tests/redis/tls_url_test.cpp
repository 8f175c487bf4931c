// parse_url's rediss:// form and its query of TLS settings: every parameter,
// percent-decoding, and errors that name the parameter; and the WAIT
// settings either scheme's query takes.
#include <gtest/gtest.h>

#include <string>

#include "redis/client/client.hpp"
#include "redis/url_support.hpp"

namespace sluice::redis::redis_tls_url_test {
namespace {

TEST(TlsUrl, RedissIsTlsWithVerificationOnByDefault) {
  const url u = parsed("rediss://app:pw@cache.example:6380/2");
  EXPECT_TRUE(u.tls.on);
  EXPECT_TRUE(u.tls.verify);
  EXPECT_TRUE(u.tls.ca_file.empty());
  EXPECT_EQ(u.host, "cache.example");
  EXPECT_EQ(u.port, 6380);
  EXPECT_EQ(u.db, 2);
  EXPECT_EQ(u.redacted(), "rediss://app:***@cache.example:6380/2");
  EXPECT_FALSE(parsed("redis://h").tls.on);
}

TEST(TlsUrl, EveryQueryParameterPercentDecoded) {
  const url u = parsed(
      "rediss://:pw@10.0.0.1:6390/3?ca_file=/etc/ca%20dir/ca.pem&cert_file=/c.pem&key_file=/k.pem"
      "&server_name=redis.internal&verify=yes");
  EXPECT_EQ(u.tls.ca_file, "/etc/ca dir/ca.pem");
  EXPECT_EQ(u.tls.cert_file, "/c.pem");
  EXPECT_EQ(u.tls.key_file, "/k.pem");
  EXPECT_EQ(u.tls.server_name, "redis.internal");
  EXPECT_TRUE(u.tls.verify);
  EXPECT_EQ(u.db, 3);
  EXPECT_EQ(u.password, "pw");
  EXPECT_FALSE(parsed("rediss://h?verify=no").tls.verify);
  EXPECT_EQ(parsed("rediss://h:1?ca_file=/a").port, 1);
}

TEST(WaitUrl, WaitReplicasAndTimeoutOnEitherScheme) {
  const url none = parsed("redis://h");
  EXPECT_EQ(none.wait_replicas, 0);
  const url u = parsed("redis://:pw@h:7/2?wait_replicas=1&wait_timeout=50ms");
  EXPECT_EQ(u.wait_replicas, 1);
  EXPECT_EQ(u.wait_timeout_ms, 50);
  EXPECT_EQ(u.db, 2);
  EXPECT_FALSE(u.tls.on);
  EXPECT_EQ(parsed("redis://h?wait_replicas=2").wait_timeout_ms, 50);  // the default
  EXPECT_EQ(parsed("rediss://h?wait_timeout=200&wait_replicas=3&verify=no").wait_timeout_ms, 200);
}

class TlsUrlRejects : public ::testing::TestWithParam<bad_case> {};

TEST_P(TlsUrlRejects, NamingTheParameter) {
  const auto& c = GetParam();
  auto r = parse_url(c.text);
  ASSERT_FALSE(r.ok()) << c.text << " parsed";
  EXPECT_EQ(r.err().field, c.part) << c.text << ": " << r.err().what();
  EXPECT_EQ(r.err().what().find("pw"), std::string::npos) << r.err().what();  // never the password
}

INSTANTIATE_TEST_SUITE_P(
    Hostile, TlsUrlRejects,
    ::testing::Values(bad_case{"redis://:pw@h?ca_file=/a", "ca_file"}, bad_case{"redis://h?verify=no", "verify"},
                      bad_case{"rediss://:pw@h?", "query"}, bad_case{"rediss://h?cafile=/a", "query"},
                      bad_case{"rediss://h?ca_file", "ca_file"}, bad_case{"rediss://h?ca_file=", "ca_file"},
                      bad_case{"rediss://h?ca_file=%zz", "ca_file"},
                      bad_case{"rediss://h?ca_file=/a&ca_file=/b", "ca_file"},
                      bad_case{"rediss://h?verify=off", "verify"}, bad_case{"rediss://h?cert_file=/c", "key_file"},
                      bad_case{"rediss://h?key_file=/k", "cert_file"}, bad_case{"rediss://h?verify=no&", "query"},
                      bad_case{"rediss://:pw@h:0?verify=no", "port"}, bad_case{"rediss://", "host"},
                      bad_case{"redis://:pw@h?wait_replicas=-1", "wait_replicas"},
                      bad_case{"redis://h?wait_replicas=1001", "wait_replicas"},
                      bad_case{"redis://h?wait_replicas=one", "wait_replicas"},
                      bad_case{"redis://h?wait_replicas=1&wait_replicas=1", "wait_replicas"},
                      bad_case{"redis://h?wait_replicas=1&wait_timeout=0", "wait_timeout"},
                      bad_case{"redis://h?wait_replicas=1&wait_timeout=1s", "wait_timeout"},
                      bad_case{"redis://h?wait_replicas=1&wait_timeout=60001ms", "wait_timeout"},
                      bad_case{"redis://h?wait_timeout=50ms", "wait_timeout"}));

}  // namespace
}  // namespace sluice::redis::redis_tls_url_test
