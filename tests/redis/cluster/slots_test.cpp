// Key → slot (redis/slots.hpp) against a real cluster's CLUSTER KEYSLOT:
// random keys, with and without braces in every position, and the rules of
// the hash tag; the one-tag-per-slot table.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "redis/cluster/cluster_support.hpp"

namespace sluice::redis_test::cluster_slots_test {
namespace {

TEST(ClusterSlots, Crc16IsXmodem) {
  EXPECT_EQ(redis::crc16("123456789"), 0x31C3);  // the XMODEM check value (the cluster spec's too)
  EXPECT_EQ(redis::crc16(""), 0);
}

TEST(ClusterSlots, HashTagRule) {
  EXPECT_EQ(redis::hash_tag("{user1000}.following"), "user1000");
  EXPECT_EQ(redis::hash_tag("foo{}{bar}"), "foo{}{bar}");  // empty first tag: the whole key
  EXPECT_EQ(redis::hash_tag("foo{{bar}}zap"), "{bar");
  EXPECT_EQ(redis::hash_tag("foo{bar}{zap}"), "bar");
  EXPECT_EQ(redis::hash_tag("nobrace"), "nobrace");
  EXPECT_EQ(redis::hash_tag("open{only"), "open{only");
  EXPECT_EQ(redis::braced_key_slot(""), std::nullopt);
  EXPECT_EQ(redis::braced_key_slot("}x"), std::nullopt);
  EXPECT_EQ(redis::braced_key_slot("{tenant}:alice"), redis::key_slot("{tenant"));
  EXPECT_EQ(redis::braced_key_slot("alice"), redis::key_slot("alice"));
}

TEST(ClusterSlots, AgreesWithClusterKeyslotOnARealServer) {
  auto c = node_client(shared_cluster(), 0);
  std::mt19937_64 g(12);
  const std::string alphabet("ab{}{}:x\xff\0", 10);
  std::vector<std::string> keys = {"", "foo", "bar", "{user1000}.following", "{}", "{}{a}", "a{b}c", "{{a}}"};
  for (int i = 0; i < 3000; ++i) {
    std::string k;
    const auto len = g() % 12;
    for (std::size_t j = 0; j < len; ++j) k.push_back(alphabet[g() % alphabet.size()]);
    keys.push_back(k);
  }
  std::vector<std::vector<std::string_view>> cmds;
  for (const auto& k : keys) cmds.push_back({"CLUSTER", "KEYSLOT", k});
  std::size_t agree = 0;
  for (std::size_t first = 0; first < cmds.size(); first += 500) {
    const auto part = std::span(cmds).subspan(first, std::min<std::size_t>(500, cmds.size() - first));
    auto r = c->pipeline(part);
    ASSERT_TRUE(std::holds_alternative<std::vector<redis::reply>>(r)) << std::get<redis::call_error>(r).what();
    const auto& replies = std::get<std::vector<redis::reply>>(r);
    for (std::size_t i = 0; i < part.size(); ++i) {
      const auto want = replies[i].as_integer();
      ASSERT_TRUE(want) << replies[i].str;
      EXPECT_EQ(redis::key_slot(keys[first + i]), *want) << "key \"" << keys[first + i] << "\"";
      agree += redis::key_slot(keys[first + i]) == *want;
    }
  }
  std::printf("key_slot agrees with CLUSTER KEYSLOT on %zu of %zu keys\n", agree, keys.size());
}

TEST(ClusterSlots, EverySlotHasATag) {
  for (std::uint16_t s = 0; s < redis::slot_count; ++s) {
    const std::string_view t = redis::slot_tag(s);
    ASSERT_FALSE(t.empty()) << s;
    ASSERT_EQ(t.find_first_of("{}"), std::string_view::npos);
    ASSERT_EQ(redis::key_slot("x{" + std::string(t) + "}y"), s);
  }
}

}  // namespace
}  // namespace sluice::redis_test::cluster_slots_test
