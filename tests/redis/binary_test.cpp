// The Redis store's numbers on the wire (src/redis/client/binary.hpp): integers
// below 2^53 to IEEE-754 doubles and back with integer operations only,
// checked against the hardware's own conversion, and strict reading.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "redis/client/binary.hpp"

namespace sluice::redis::redis_binary_test {
namespace {

std::uint64_t hardware_bits(std::int64_t v) { return std::bit_cast<std::uint64_t>(static_cast<double>(v)); }

TEST(RedisBinary, IntegersBelow2To53AreTheHardwaresDoubles) {
  std::mt19937_64 g(53);
  std::size_t checked = 0;
  const auto check = [&](std::int64_t v) {
    ASSERT_EQ(double_bits(v), hardware_bits(v)) << v;
    std::int64_t back = 0;
    ASSERT_TRUE(integer_of(double_bits(v), back)) << v;
    ASSERT_EQ(back, v);
    std::string s;
    put_number(s, v);
    ASSERT_EQ(s.size(), 8U);
    ASSERT_TRUE(get_number(s.data(), back));
    ASSERT_EQ(back, v);
    ++checked;
  };
  for (std::int64_t v = -1000; v <= 1000; ++v) check(v);
  for (int k = 0; k < 53; ++k)
    for (std::int64_t d = -2; d <= 2; ++d) {
      const std::int64_t p = std::int64_t{1} << k;
      if (p + d < p53) check(p + d);
      if (-(p + d) > -p53) check(-(p + d));
    }
  check(p53 - 1);
  check(-(p53 - 1));
  for (int i = 0; i < 200000; ++i) check(static_cast<std::int64_t>(g() % (2 * p53 - 1)) - (p53 - 1));
  EXPECT_GT(checked, 200000U);
}

TEST(RedisBinary, ReadingRefusesWhatIsNotAnIntegerBelow2To53) {
  std::int64_t v = 7;
  const auto bits = [](double d) { return std::bit_cast<std::uint64_t>(d); };
  EXPECT_FALSE(integer_of(bits(0.5), v));
  EXPECT_FALSE(integer_of(bits(-1.25), v));
  EXPECT_FALSE(integer_of(bits(1e-300), v));
  EXPECT_FALSE(integer_of(bits(std::numeric_limits<double>::denorm_min()), v));
  EXPECT_FALSE(integer_of(bits(std::numeric_limits<double>::infinity()), v));
  EXPECT_FALSE(integer_of(bits(-std::numeric_limits<double>::infinity()), v));
  EXPECT_FALSE(integer_of(bits(std::numeric_limits<double>::quiet_NaN()), v));
  EXPECT_FALSE(integer_of(bits(9007199254740992.0), v));   // 2^53
  EXPECT_FALSE(integer_of(bits(-9007199254740992.0), v));  // -2^53
  EXPECT_FALSE(integer_of(bits(1e300), v));
  EXPECT_TRUE(integer_of(bits(-0.0), v));  // as Lua reads it
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(integer_of(bits(4503599627370495.0), v));
  EXPECT_EQ(v, 4503599627370495);
}

}  // namespace
}  // namespace sluice::redis::redis_binary_test
