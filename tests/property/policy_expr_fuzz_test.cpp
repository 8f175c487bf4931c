// Policy expressions under fire: random garbage and random mutations of
// valid expressions never crash, every error names a column within the text
// (1 to size + 1), and whatever parses prints back to a canonical form that
// parses to itself. Seeded, so every run sees the same inputs.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sluice/core/policy_expr.hpp"

namespace sluice::property_policy_expr_fuzz_test {
namespace {

const std::vector<std::string> valid = {
    "token-bucket 10/1s burst=5",
    "gcra 1/1s",
    "fixed-window 1000/1h",
    "fixed-window 10/1m origin=30s",
    "sliding-log 5/10s",
    "sliding-counter 5/10s",
    "sliding-buckets 5/10s buckets=5",
    "leaky-queue 2/1s queue=15",
    "quota 100",
    "always-allow",
    "always-deny",
    "all(token-bucket 10/1s burst=5, fixed-window 1000/1h)",
    "any(quota 100, gcra 1/1s)",
    "all(any(quota 1, gcra 1 per 2 minutes burst=3), all(sliding-log 2/500ms))",
};

/// Pieces that make mutations likely to reach deep into the grammar.
const std::vector<std::string> pieces = {
    "all(",
    "any(",
    ")",
    "(",
    ",",
    " ",
    "=",
    "/",
    "per ",
    "burst=",
    "queue=",
    "buckets=",
    "origin=",
    "0",
    "1",
    "-",
    ".",
    "s",
    "ms",
    "h",
    "x",
    "gcra",
    "quota",
    "9999999999999999999999",
    "4611686018427387905",
    "\t",
    "\n",
    "token-bucket 1/1s",
    "\x01",
    "\xff",
    "'",
    "\\",
    "1.5",
    "1e3",
};

/// The column an error names, or 0 if it names none.
std::size_t column_of(const std::string& message) {
  const std::string key = " at column ";
  const std::size_t at = message.find(key);
  if (at == std::string::npos) return 0;
  std::size_t col = 0;
  for (std::size_t i = at + key.size(); i < message.size() && message[i] >= '0' && message[i] <= '9'; ++i)
    col = col * 10 + static_cast<std::size_t>(message[i] - '0');
  return col;
}

/// Checks one input: an error names a column in [1, size + 1]; a success
/// prints canonically and reparses to the same text.
void check(const std::string& text) {
  auto p = parse_policy(text);
  if (!p.ok()) {
    EXPECT_EQ(p.err().field, "policy") << text;
    const std::size_t col = column_of(p.err().message);
    EXPECT_GE(col, 1U) << text << " -> " << p.err().what();
    EXPECT_LE(col, text.size() + 1) << text << " -> " << p.err().what();
    return;
  }
  const std::string canonical = format_policy(*p);
  auto again = parse_policy(canonical);
  ASSERT_TRUE(again.ok()) << text << " -> " << canonical << " -> " << again.err().what();
  EXPECT_EQ(format_policy(*again), canonical) << text;
}

TEST(PolicyExprFuzz, RandomBytesNeverCrashAndPointInsideTheText) {
  std::mt19937_64 rng(404);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> len(0, 40);
  for (int n = 0; n < 20000; ++n) {
    std::string text;
    const int k = len(rng);
    for (int i = 0; i < k; ++i) text.push_back(static_cast<char>(byte(rng)));
    check(text);
  }
}

TEST(PolicyExprFuzz, RandomPiecesNeverCrashAndPointInsideTheText) {
  std::mt19937_64 rng(405);
  std::uniform_int_distribution<std::size_t> piece(0, pieces.size() - 1);
  std::uniform_int_distribution<int> len(0, 12);
  for (int n = 0; n < 20000; ++n) {
    std::string text;
    const int k = len(rng);
    for (int i = 0; i < k; ++i) text += pieces[piece(rng)];
    check(text);
  }
}

TEST(PolicyExprFuzz, MutationsOfValidExpressionsNeverCrash) {
  std::mt19937_64 rng(406);
  std::uniform_int_distribution<std::size_t> which(0, valid.size() - 1);
  std::uniform_int_distribution<std::size_t> piece(0, pieces.size() - 1);
  std::uniform_int_distribution<int> op(0, 4);
  std::uniform_int_distribution<int> count(1, 4);
  std::size_t parsed = 0;
  for (int n = 0; n < 30000; ++n) {
    std::string text = valid[which(rng)];
    for (int m = count(rng); m > 0; --m) {
      const std::size_t at = std::uniform_int_distribution<std::size_t>(0, text.size())(rng);
      switch (op(rng)) {
        case 0:  // delete a run
          text.erase(at, std::uniform_int_distribution<std::size_t>(1, 6)(rng));
          break;
        case 1:  // insert a piece
          text.insert(at, pieces[piece(rng)]);
          break;
        case 2:  // replace one byte
          if (at < text.size()) text[at] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
          break;
        case 3:  // duplicate a run
          text.insert(at, text.substr(at, std::uniform_int_distribution<std::size_t>(1, 10)(rng)));
          break;
        default:  // splice in another valid expression
          text.insert(at, valid[which(rng)]);
          break;
      }
    }
    check(text);
    if (parse_policy(text).ok()) ++parsed;
  }
  // The mutations must exercise both outcomes.
  EXPECT_GT(parsed, 100U);
  EXPECT_LT(parsed, 29000U);
}

TEST(PolicyExprFuzz, EveryValidExpressionIsCanonicalOrBecomesSo) {
  for (const auto& text : valid) check(text);
}

}  // namespace
}  // namespace sluice::property_policy_expr_fuzz_test
