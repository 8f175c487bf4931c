// parse_url: every form, percent-decoding, and hostile inputs whose errors
// must name the part at fault.
#include <gtest/gtest.h>

#include <string>

#include "redis/client/client.hpp"
#include "redis/url_support.hpp"

namespace sluice::redis::redis_url_test {
namespace {

TEST(ParseUrl, HostOnlyDefaultsPortAndDb) {
  const url u = parsed("redis://localhost");
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, 6379);
  EXPECT_EQ(u.db, 0);
  EXPECT_TRUE(u.user.empty());
  EXPECT_TRUE(u.password.empty());
  EXPECT_FALSE(u.is_unix());
}

TEST(ParseUrl, EveryPart) {
  const url u = parsed("redis://app:s3cret@10.0.0.7:6380/5");
  EXPECT_EQ(u.user, "app");
  EXPECT_EQ(u.password, "s3cret");
  EXPECT_EQ(u.host, "10.0.0.7");
  EXPECT_EQ(u.port, 6380);
  EXPECT_EQ(u.db, 5);
  EXPECT_EQ(u.redacted(), "redis://app:***@10.0.0.7:6380/5");
}

TEST(ParseUrl, PasswordOnly) {
  const url u = parsed("redis://:pw@h:1");
  EXPECT_TRUE(u.user.empty());
  EXPECT_EQ(u.password, "pw");
  EXPECT_EQ(u.port, 1);
  EXPECT_EQ(u.redacted(), "redis://:***@h:1");
}

TEST(ParseUrl, PercentDecodesUserAndPassword) {
  const url u = parsed("redis://us%65r%3A1:p%40ss%2Fw%3Ard%25@h");
  EXPECT_EQ(u.user, "user:1");
  EXPECT_EQ(u.password, "p@ss/w:rd%");
  // An unescaped '@' in the password: the last '@' ends the user part.
  EXPECT_EQ(parsed("redis://:a@b@h").password, "a@b");
  EXPECT_EQ(parsed("redis://:a@b@h").host, "h");
}

TEST(ParseUrl, EdgesThatAreValid) {
  EXPECT_EQ(parsed("redis://h:65535").port, 65535);
  EXPECT_EQ(parsed("redis://h/").db, 0);
  EXPECT_EQ(parsed("redis://h/2147483647").db, 2147483647);
  EXPECT_EQ(parsed("redis://[::1]:7000").host, "::1");
  EXPECT_EQ(parsed("redis://[::1]:7000").port, 7000);
  EXPECT_EQ(parsed("redis://[::1]").redacted(), "redis://[::1]:6379");
}

TEST(ParseUrl, UnixSocket) {
  const url u = parsed("unix:///run/redis/redis.sock");
  EXPECT_TRUE(u.is_unix());
  EXPECT_EQ(u.socket_path, "/run/redis/redis.sock");
  EXPECT_EQ(u.db, 0);
  const url d = parsed("unix:///tmp/r.sock?db=3");
  EXPECT_EQ(d.socket_path, "/tmp/r.sock");
  EXPECT_EQ(d.db, 3);
  EXPECT_EQ(d.redacted(), "unix:///tmp/r.sock?db=3");
}

TEST(ParseUrl, ModuleOnEveryScheme) {
  EXPECT_EQ(parsed("redis://h").module, module_use::automatic);
  EXPECT_EQ(parsed("redis://h?module=auto").module, module_use::automatic);
  EXPECT_EQ(parsed("redis://h:1/2?module=on").module, module_use::on);
  EXPECT_EQ(parsed("rediss://h?verify=no&module=off").module, module_use::off);
  EXPECT_EQ(parsed("redis://h?wait_replicas=1&module=on").module, module_use::on);
  const url d = parsed("unix:///tmp/r.sock?db=3&module=off");
  EXPECT_EQ(d.db, 3);
  EXPECT_EQ(d.module, module_use::off);
  EXPECT_EQ(parsed("unix:///tmp/r.sock?module=on").module, module_use::on);
}

class ParseUrlRejects : public ::testing::TestWithParam<bad_case> {};

TEST_P(ParseUrlRejects, NamingThePart) {
  const auto& c = GetParam();
  auto r = parse_url(c.text);
  ASSERT_FALSE(r.ok()) << c.text << " parsed";
  EXPECT_EQ(r.err().field, c.part) << c.text << ": " << r.err().what();
  EXPECT_FALSE(r.err().message.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Hostile, ParseUrlRejects,
    ::testing::Values(
        bad_case{"", "scheme"}, bad_case{"localhost:6379", "scheme"}, bad_case{"http://h", "scheme"},
        bad_case{"rediss//h", "scheme"}, bad_case{"REDIS://h", "scheme"}, bad_case{"redis://", "host"},
        bad_case{"redis://:6379", "host"}, bad_case{"redis://:pw@", "host"}, bad_case{"redis:///0", "host"},
        bad_case{"redis://h:0", "port"}, bad_case{"redis://h:65536", "port"}, bad_case{"redis://h:abc", "port"},
        bad_case{"redis://h:", "port"}, bad_case{"redis://h:-1", "port"}, bad_case{"redis://h:+80", "port"},
        bad_case{"redis://h:99999999999999999999", "port"}, bad_case{"redis://h:80x", "port"},
        bad_case{"redis://h:6379:1", "port"}, bad_case{"redis://h/-1", "db"}, bad_case{"redis://h/abc", "db"},
        bad_case{"redis://h/1/2", "db"}, bad_case{"redis://h/2147483648", "db"}, bad_case{"redis://h/0x1", "db"},
        bad_case{"redis://h/1 ", "db"}, bad_case{"redis://h?x=1", "query"}, bad_case{"redis://h#frag", "query"},
        bad_case{"redis://h h", "host"}, bad_case{"redis://h\n", "host"}, bad_case{"redis://[::1", "host"},
        bad_case{"redis://[::1]x", "host"}, bad_case{"redis://[]:1", "host"}, bad_case{"redis://[zz]:1", "host"},
        bad_case{"redis://u%zz:p@h", "user"}, bad_case{"redis://u:p%4@h", "password"},
        bad_case{"redis://u:@h", "password"}, bad_case{"unix://", "path"}, bad_case{"unix://u:p@", "path"},
        bad_case{"unix://relative.sock", "path"}, bad_case{"unix:///s?db=x", "db"}, bad_case{"unix:///s?db=-2", "db"},
        bad_case{"unix:///s?database=1", "query"}, bad_case{"unix:///s?", "query"}, bad_case{"unix:///s%zz", "path"},
        bad_case{"unix:///s?db=1&db=2", "query"}, bad_case{"unix:///s?password=pw", "query"},
        bad_case{"unix:///s?db=1&password=pw", "query"}, bad_case{"unix://u:%zz@/s", "password"},
        bad_case{"redis://h?module=yes", "module"}, bad_case{"redis://h?module=", "module"},
        bad_case{"redis://h?module=on&module=off", "module"}, bad_case{"unix:///s?module=ON", "module"},
        bad_case{"unix:///s?module=on&module=on", "module"}));

TEST(ParseUrl, ErrorsQuoteTheBadText) {
  auto r = parse_url("redis://h:70000");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find("70000"), std::string::npos);
  EXPECT_EQ(r.err().what().substr(0, 6), "port: ");
}

TEST(ParseUrl, UnixSocketWithUserAndPassword) {
  const url u = parsed("unix://app:s%40cret@/run/redis.sock?db=2");
  EXPECT_EQ(u.socket_path, "/run/redis.sock");
  EXPECT_EQ(u.user, "app");
  EXPECT_EQ(u.password, "s@cret");
  EXPECT_EQ(u.db, 2);
  EXPECT_EQ(u.redacted(), "unix://app:***@/run/redis.sock?db=2");
  const url p = parsed("unix://:pw@/tmp/r.sock");
  EXPECT_EQ(p.password, "pw");
  EXPECT_EQ(p.redacted(), "unix://:***@/tmp/r.sock");
}

TEST(ParseUrl, UserWithoutPasswordIsLeftForTheStoreToComplete) {
  // The password may come from store_options::password (a file, the
  // environment); the store refuses the URL when nothing gives it.
  const url u = parsed("redis://app@h:1");
  EXPECT_EQ(u.user, "app");
  EXPECT_TRUE(u.password.empty());
}

TEST(ParseUrl, PasswordHoldingSlashAtOrQueryIsTheUserinfos) {
  // The userinfo ends at the last '@': a password with '/' was read as the
  // start of a database number, and its tail echoed in the error.
  const url u = parsed("redis://app:pa/ss?w#rd@h:7/3");
  EXPECT_EQ(u.password, "pa/ss?w#rd");
  EXPECT_EQ(u.host, "h");
  EXPECT_EQ(u.port, 7);
  EXPECT_EQ(u.db, 3);
}

// Every error of a URL holding a password: neither the message nor the
// field shows any of the password's bytes.
TEST(ParseUrl, NoErrorEchoesThePassword) {
  const std::string pw = "Zq9Secret";
  const std::string cases[] = {
      "redis://:" + pw + "@h:99999",      "redis://u:" + pw + "@h/abc",   "redis://u:" + pw + "@h$x",
      "redis://:pa/" + pw + "@h:1/x",     "redis://:" + pw + "@h?x=1",    "redis://:" + pw + "@[::1",
      "redis://:" + pw + "@[::1]x",       "redis://:" + pw + "%zz@h",     "unix:///s?db=1&password=" + pw,
      "unix://u:" + pw + "@/s?foo=" + pw, "unix://u:" + pw + "@relative", "redis://" + pw + ":" + pw + "@",
  };
  for (const auto& text : cases) {
    auto r = parse_url(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.err().what().find(pw), std::string::npos) << text << " -> " << r.err().what();
  }
}

}  // namespace
}  // namespace sluice::redis::redis_url_test
