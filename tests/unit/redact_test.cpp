// redact_url: the one place a password is hidden from what sluice prints.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>

#include "sluice/core/redact.hpp"

namespace sluice::unit_redact_test {
namespace {

TEST(RedactUrl, HidesThePasswordKeepsTheRest) {
  EXPECT_EQ(redact_url("redis://:s3cret@h:6379/2"), "redis://:***@h:6379/2");
  EXPECT_EQ(redact_url("redis://app:s3cret@h"), "redis://app:***@h");
  EXPECT_EQ(redact_url("unix://app:s3cret@/run/r.sock?db=1"), "unix://app:***@/run/r.sock?db=1");
  EXPECT_EQ(redact_url("redis+cluster://:s3cret@a:1,b:2"), "redis+cluster://:***@a:1,b:2");
  EXPECT_EQ(redact_url("redis://app@h"), "redis://app@h");
  EXPECT_EQ(redact_url("redis://h:1"), "redis://h:1");
  EXPECT_EQ(redact_url("memory"), "memory");
}

TEST(RedactUrl, HidesWhatAMalformedUrlMayHold) {
  // The userinfo ends at the last '@': a password with '@', '/' or ':' is hidden whole.
  EXPECT_EQ(redact_url("redis://:pa@ss/wo:rd@h:99999"), "redis://:***@h:99999");
  EXPECT_EQ(redact_url("rediss://u:s3cret@h"), "rediss://u:***@h");
  EXPECT_EQ(redact_url("unix:///s?db=1&password=s3cret&x=1"), "unix:///s?db=1&password=***&x=1");
  EXPECT_EQ(redact_url("unix:///s?password=s3cret"), "unix:///s?password=***");
  EXPECT_EQ(redact_url("not a url ?password=s3cret"), "not a url ?password=***");
}

TEST(RedactUrl, HidesTheUserinfoOfAMistypedScheme) {
  // No "://" for a parser to find a userinfo after: everything between the
  // scheme-like start and the last '@' is hidden, the user name too.
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"redis:/u:s3cret@h:1", "redis:/***@h:1"},
      {"redis//u:s3cret@h:1", "redis//***@h:1"},
      {"rediss:u:s3cret@h:1", "rediss:***@h:1"},
      {"redis:///u:s3cret@h:1", "redis:///u:***@h:1"},
      {"u:s3cret@h:1", "u:***@h:1"},
      {"s3cret@h", "***@h"},
      {"u:s3cret@redis://h", "u:***@redis://h"},
      {"redis:/u:p@ss@h?password=x", "redis:/***@h?password=***"},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(redact_url(in), out) << in;
  EXPECT_TRUE(url_gives_password("redis:/u:s3cret@h"));
}

TEST(RedactUrl, ToldWhetherAUrlGivesAPassword) {
  EXPECT_TRUE(url_gives_password("redis://:pw@h"));
  EXPECT_TRUE(url_gives_password("unix:///s?password=pw"));
  EXPECT_FALSE(url_gives_password("redis://app@h"));
  EXPECT_FALSE(url_gives_password("redis://h"));
}

}  // namespace
}  // namespace sluice::unit_redact_test
