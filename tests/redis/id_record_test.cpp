// A request id's record (src/redis/store/id_record.hpp): read back field for field
// as written (as main.lua and carry.cpp write it), every cut that does not
// end at a leaf and every other malformation refused; and on a real server,
// a record edited behind the store's back is an error for a repeat and for
// a refund, never an admit or a refund, and is left as it was.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "redis/store/id_record.hpp"
#include "redis/store/protocol.hpp"
#include "redis/store_support.hpp"
#include "sluice/core/policy_expr.hpp"

namespace sluice::redis_test::redis_id_record_test {
namespace {

using opt_bytes = std::optional<std::string>;

struct leaf_bytes {
  std::string tag;  // 9 bytes
  opt_bytes before;
  opt_bytes after;
};

struct check_bytes {
  opt_bytes override_bytes;  // the override that decided the check, if any
  std::vector<leaf_bytes> leaves;
};

std::optional<std::string_view> view(const opt_bytes& b) {
  return b ? std::optional<std::string_view>(*b) : std::nullopt;
}

/// A record after its identity, written as main.lua writes one; `ends`
/// gets the offset after each leaf (the only places a cut leaves a record).
std::string write_record(tick at, bool admitted, const std::vector<check_bytes>& checks,
                         std::vector<std::size_t>* ends = nullptr) {
  std::int64_t h = 0;
  std::int64_t l = 0;
  redis::split_limbs(at, h, l);
  std::string out = std::to_string(h) + " " + std::to_string(l) + (admitted ? " 1" : " 0");
  for (const auto& c : checks) {
    if (c.override_bytes) {
      out += "|V";
      redis::put_item(out, view(c.override_bytes));
    }
    for (const auto& leaf : c.leaves) {
      out += '|';
      out += leaf.tag;
      redis::put_item(out, view(leaf.before));
      redis::put_item(out, view(leaf.after));
      if (ends != nullptr) ends->push_back(out.size());
    }
  }
  return out;
}

const std::vector<check_bytes> sample_checks = {
    {std::nullopt, {{"A01234567", std::nullopt, std::string("\x01\x02|:-", 5)}, {"B89abcdef", std::string(), "9:"}}},
    {std::string("quota 5|V3:"), {{"C00000000", std::string("12:|V-", 6), std::nullopt}}},
};

TEST(RedisIdRecord, ReadsBackFieldForFieldWhatWasWritten) {
  for (const tick at : {tick{0}, tick{1}, tick{-1}, tick{1} << 32, -(tick{1} << 32) + 5,
                        std::numeric_limits<tick>::min(), std::numeric_limits<tick>::max()})
    for (const bool admitted : {false, true}) {
      const std::string rec = write_record(at, admitted, sample_checks);
      const auto r = redis::read_id_record(rec);
      ASSERT_TRUE(r) << rec;
      EXPECT_EQ(r->at, at);
      EXPECT_EQ(r->admitted, admitted);
      ASSERT_EQ(r->tags.size(), 3U);
      std::size_t i = 0;
      for (const auto& c : sample_checks)
        for (const auto& leaf : c.leaves) {
          EXPECT_EQ(r->tags[i], leaf.tag);
          EXPECT_EQ(r->before[i], view(leaf.before)) << i;
          EXPECT_EQ(r->after[i], view(leaf.after)) << i;
          ++i;
        }
      ASSERT_EQ(r->marks.size(), 1U);
      EXPECT_EQ(r->marks[0].first, 2U);  // before the second check's first leaf
      EXPECT_EQ(r->marks[0].second, *sample_checks[1].override_bytes);
    }
}

TEST(RedisIdRecord, ACutRecordIsReadOnlyWhereALeafEnds) {
  std::vector<std::size_t> ends;
  const std::string rec = write_record(123'456'789'012, true, sample_checks, &ends);
  std::size_t read = 0;
  for (std::size_t n = 0; n <= rec.size(); ++n) {
    const auto r = redis::read_id_record(std::string_view(rec).substr(0, n));
    const auto leaves = static_cast<std::size_t>(std::find(ends.begin(), ends.end(), n) - ends.begin());
    if (leaves == ends.size()) {
      EXPECT_FALSE(r) << "cut at " << n << ": '" << rec.substr(0, n) << "'";
      continue;
    }
    ASSERT_TRUE(r) << "cut at " << n;
    EXPECT_EQ(r->tags.size(), leaves + 1);
    ++read;
  }
  EXPECT_EQ(read, 3U);
}

TEST(RedisIdRecord, EveryOtherMalformationIsRefused) {
  const std::string leaf = "|A01234567--";
  for (const std::string& bad : {
           std::string(),
           std::string("0 0 1"),                  // no leaf
           "0 0" + leaf,                          // no admitted
           "0 0 2" + leaf,                        // admitted neither 0 nor 1
           "0 0 1x" + leaf,                       // junk after it
           " 0 0 1" + leaf,                       // a space first
           "+1 0 1" + leaf,                       // a sign
           "0  0 1" + leaf,                       // two spaces
           "2147483648 0 1" + leaf,               // a high limb of 2^31
           "-2147483649 0 1" + leaf,              // below -2^31
           "0 4294967296 1" + leaf,               // a low limb of 2^32
           "0 -1 1" + leaf,                       // a negative low limb
           std::string("0 0 1|A0123--"),          // a short tag
           std::string("0 0 1|A01234567-"),       // one item of two
           std::string("0 0 1|A01234567-5:abc"),  // an item past the end
           std::string("0 0 1|A01234567-x:abc"),  // a length that is no number
           std::string("0 0 1|A01234567-3abc"),   // no ':'
           "0 0 1" + leaf + "x",                  // junk after a leaf
           "0 0 1" + leaf + "|",                  // a '|' and nothing
           "0 0 1|V-" + leaf,                     // an override of no bytes
           "0 0 1" + leaf + "|V3:abc",            // an override without its leaves
           "0 0 1|V3:abc|V3:abc" + leaf,          // two overrides of one check
           "0 0 1|v3:abc" + leaf,                 // 'v', not 'V': a tag "v3:abc|A0" then junk
       })
    EXPECT_FALSE(redis::read_id_record(bad)) << "'" << bad << "'";
  EXPECT_TRUE(redis::read_id_record("0 0 1" + leaf));
  EXPECT_TRUE(redis::read_id_record("0 0 0|V3:abc" + leaf + leaf));
}

/// Where the identity item at the head of an id key's value ends.
std::size_t identity_end(const std::string& value) {
  std::size_t pos = 0;
  std::optional<std::string_view> identity;
  EXPECT_TRUE(redis::read_item(value, pos, identity) && identity) << value;
  return pos;
}

TEST(RedisIdRecord, AnEditedRecordIsAnErrorForARepeatAndARefundAndStaysAsItWas) {
  store_options o;
  o.key_prefix = fresh_prefix("idrec");
  auto st = open_store(o);
  ASSERT_TRUE(st);
  auto c = raw_client();
  const auto q = st->define("q", parse_policy("quota 10").value()).value();
  const check ch{q, "k"};
  const store_request first{.checks = std::span(&ch, 1), .now = 5, .cost = 1, .id = "r1"};
  ASSERT_TRUE(st->decide_at(first).d.allowed);
  const std::string key = o.key_prefix + "i:r1";
  const std::string good = value_at(c, key);
  ASSERT_NE(good, "(nil)") << "the request id's record was not written";
  const std::size_t head = identity_end(good);
  ASSERT_TRUE(redis::read_id_record(std::string_view(good).substr(head))) << good;
  const std::string body = good.substr(head);
  const std::size_t bar = body.find('|');
  ASSERT_NE(bar, std::string::npos);
  const std::vector<std::string> edits = {
      good.substr(0, good.size() - 1),                                             // cut inside the leaf's last item
      good.substr(0, head) + body.substr(0, bar - 1) + "2" + body.substr(bar),     // admitted 2
      good.substr(0, head) + body.substr(0, bar) + "|A0" + body.substr(bar + 10),  // a short tag
      good + "|V3:abc",                                                            // an override without its leaves
  };
  const auto left = [&] { return st->peek_at(one_check(ch, 6)).d.remaining + 1; };
  std::uint64_t corrupt = st->redis_stats().corrupt;
  for (const auto& v : edits) {
    (void)c.call({"SET", key, v});
    const auto d = st->decide_at({.checks = std::span(&ch, 1), .now = 6, .cost = 1, .id = "r1"});
    EXPECT_EQ(d.from, source::error) << v;
    EXPECT_FALSE(d.d.allowed) << v;
    EXPECT_EQ(st->redis_stats().corrupt, ++corrupt) << v;
    EXPECT_EQ(st->refund_at("r1", 7).status, refund_status::error) << v;
    EXPECT_EQ(st->redis_stats().corrupt, ++corrupt) << v;
    EXPECT_EQ(left(), 9) << v << ": nothing charged, nothing given back";
    EXPECT_EQ(value_at(c, key), v) << "an error wrote";
  }
  // The record as written: the repeat is replayed, then refunded once.
  (void)c.call({"SET", key, good});
  const auto again = st->decide_at({.checks = std::span(&ch, 1), .now = 8, .cost = 1, .id = "r1"});
  EXPECT_EQ(again.from, source::replayed);
  EXPECT_TRUE(again.d.allowed);
  EXPECT_EQ(again.d.remaining, 9);
  EXPECT_EQ(st->refund_at("r1", 9).status, refund_status::refunded);
  EXPECT_EQ(left(), 10);
  EXPECT_EQ(st->redis_stats().corrupt, corrupt);
}

}  // namespace
}  // namespace sluice::redis_test::redis_id_record_test
