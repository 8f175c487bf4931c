// Parsing rates, durations and decimal seconds: what people type, and what
// they get wrong.
// The tables are laid out by hand, one row a line:
// clang-format off
#include "sluice/core/rate.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <ratio>

namespace sluice::unit_rate_test {
namespace {

constexpr tick s = 1'000'000'000;

struct rate_row {
  const char* text;
  std::int64_t limit;
  tick window;
};

TEST(ParseRate, AcceptsWhatPeopleWrite) {
  const rate_row rows[] = {
      {"10/60s", 10, 60 * s},         {"10/1m", 10, 60 * s},          {"100/min", 100, 60 * s},
      {"5/s", 5, s},                  {"2/500ms", 2, s / 2},          {"1000/1h", 1000, 3600 * s},
      {"10 per minute", 10, 60 * s},  {"3/10s", 3, 10 * s},           {"0/1s", 0, s},
      {" 7 / 3s ", 7, 3 * s},         {"1/1ns", 1, 1},                {"1/250us", 1, 250'000},
      {"9/1.5s", 9, 3 * s / 2},       {"4 per 2 hours", 4, 7200 * s}, {"1/day", 1, 86400 * s},
      {"12/5 minutes", 12, 300 * s},  {"4611686018427387904/1ns", std::int64_t{1} << 62, 1},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.text);
    auto r = parse_rate(row.text);
    ASSERT_TRUE(r.ok()) << r.err().what();
    EXPECT_EQ(r->limit, row.limit);
    EXPECT_EQ(r->window, row.window);
  }
}

struct bad_row {
  const char* text;
  const char* field;
  const char* says;
};

TEST(ParseRate, RefusesWithTheFieldAndTheReason) {
  const bad_row rows[] = {
      {"10/0s", "window", "must be positive"},
      {"-3/s", "limit", "must not be negative"},
      {"abc", "rate", "expected a whole number at column 1"},
      {"10/60", "window", "needs a unit"},
      {"10/5x", "window", "unknown unit 'x' at column 5"},
      {"10", "rate", "expected '/' or 'per'"},
      {"10/", "window", "is missing"},
      {"", "rate", "is empty"},
      {"1.5/s", "limit", "whole number"},
      {"10/0.5ns", "window", "whole number of nanoseconds"},
      {"4611686018427387905/1s", "limit", "at most 2^62"},
      {"1/200years", "window", "unknown unit"},
      {"99999999999999999999999999999999999/s", "limit", "too large"},
      {"1/9999999999h", "window", "too long"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.text);
    auto r = parse_rate(row.text);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().field, row.field);
    EXPECT_NE(r.err().message.find(row.says), std::string::npos) << r.err().message;
  }
}

TEST(FormatSeconds, ShortestExactDecimal) {
  EXPECT_EQ(format_seconds(0), "0");
  EXPECT_EQ(format_seconds(s / 2), "0.5");
  EXPECT_EQ(format_seconds(52 * s + s / 2), "52.5");
  EXPECT_EQ(format_seconds(1), "0.000000001");
  EXPECT_EQ(format_seconds(-3 * s), "-3");
  EXPECT_EQ(format_seconds(INT64_MAX), "9223372036.854775807");
  EXPECT_EQ(format_seconds(INT64_MIN), "-9223372036.854775808");
}

TEST(ParseSeconds, ExactNanoseconds) {
  tick t = 0;
  ASSERT_TRUE(parse_seconds("12", t));
  EXPECT_EQ(t, 12 * s);
  ASSERT_TRUE(parse_seconds("0.000000001", t));
  EXPECT_EQ(t, 1);
  ASSERT_TRUE(parse_seconds("-1.25", t));
  EXPECT_EQ(t, -5 * s / 4);
  ASSERT_TRUE(parse_seconds("9223372036.854775807", t));
  EXPECT_EQ(t, INT64_MAX);
  ASSERT_TRUE(parse_seconds("-9223372036.854775808", t));
  EXPECT_EQ(t, INT64_MIN);
  for (const char* bad : {"", "abc", "1.", ".5", "1.0000000001", "9223372036.854775808", "1e3", "1,5", "+1", "--1",
                          "1 ", "0x10"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parse_seconds(bad, t));
  }
}

}  // namespace
}  // namespace sluice::unit_rate_test

namespace sluice::unit_rate_test {
namespace {

// Found by fuzz_rate: 30 decimal places times a day's nanoseconds overflowed
// the 128-bit intermediate.
TEST(ParseDuration, LongFractionsOfLargeUnitsDoNotOverflow) {
  auto r = parse_duration("0.123456789012345678901234567890d");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().message, "'0.123456789012345678901234567890d' has too many decimal places");
  auto big = parse_duration("99999999999999999999999d");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.err().message.find("too long"), std::string::npos);
  auto fine = parse_duration("0.50000000000000000000d");
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(*fine, 43200 * tick{1'000'000'000});
}

}  // namespace
}  // namespace sluice::unit_rate_test

namespace sluice::unit_rate_test {
namespace {

using namespace std::chrono_literals;

static_assert(rate{100, 1s} == rate{100, 1'000'000'000});
static_assert(rate{3, std::chrono::minutes{2}}.window == 120 * s);

TEST(ChronoRate, AWindowIsItsNanoseconds) {
  EXPECT_EQ((rate{100, 1s}), (rate{100, s}));
  EXPECT_EQ((rate{2, 500ms}), (rate{2, s / 2}));
  EXPECT_EQ((rate{1, 1ns}), (rate{1, 1}));
  EXPECT_EQ((rate{10, std::chrono::hours{1}}).window, 3600 * s);
  EXPECT_EQ((rate{1, std::chrono::days{1}}).window, 86400 * s);
  // A window past int64 nanoseconds saturates, past 2^62: every policy
  // refuses it, naming the window.
  const rate huge{1, std::chrono::hours{std::numeric_limits<std::int64_t>::max()}};
  EXPECT_EQ(huge.window, std::numeric_limits<tick>::max());
  EXPECT_EQ(make_rate(huge.limit, huge.window).err().field, "window");
  EXPECT_EQ((rate{1, -1s}).window, -s);
  EXPECT_EQ(make_rate(1, (rate{1, -1s}).window).err().field, "window");
}

TEST(ChronoRate, MakeRateTakesAnyIntegralUnitExactly) {
  using thirds = std::chrono::duration<std::int64_t, std::ratio<1, 3>>;
  EXPECT_EQ(make_rate(5, 2s).value(), (rate{5, 2 * s}));
  EXPECT_EQ(make_rate(5, thirds{3}).value(), (rate{5, s}));
  EXPECT_EQ(make_rate(5, std::chrono::duration<std::int64_t, std::pico>{2000}).value(), (rate{5, 2}));
  const auto third = make_rate(5, thirds{1});
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.err().what(), "window: must be a whole number of nanoseconds within int64");
  EXPECT_EQ(make_rate(5, std::chrono::hours{std::numeric_limits<std::int64_t>::max()}).err().field, "window");
  EXPECT_EQ(make_rate(5, 0s).err().what(), "window: must be positive (got 0)");
  EXPECT_EQ(make_rate(5, std::chrono::hours{(std::int64_t{1} << 62) / 3'600'000'000'000 + 1}).err().field, "window");
}

}  // namespace
}  // namespace sluice::unit_rate_test
