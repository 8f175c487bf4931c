// What the Redis overrides design (docs/redis.md, "Overrides (not yet)")
// takes from the library as it is, checked against a real redis-server
// before the design is built: the override key
// `<prefix>o:<policy>:{<key>}` shares its check's hash slot, and the
// existing compare-and-set `L_cas` already writes a key's carried state and
// its override key in one step, refusing the whole write when either moved.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redis/slots.hpp"
#include "redis/store_impl.hpp"
#include "redis/test_client.hpp"
#include "support/redis_server.hpp"

namespace sluice::redis {
namespace {

using testing::redis_server;

async_client_options options_for(const std::string& text) {
  async_client_options o;
  o.where = parse_url(text).value();
  return o;
}

/// `L_cas` without a request id over `keys`, with per key its expected,
/// new and px arguments: the status it answers, or -1.
std::int64_t cas(test_client& c, const std::vector<std::string>& keys, const std::vector<std::string>& triples) {
  std::vector<std::string_view> views(keys.begin(), keys.end());
  for (const char* a : {"0", "0", "", ""}) views.emplace_back(a);
  views.insert(views.end(), triples.begin(), triples.end());
  const std::string fn = std::string(lua_library_name) + "_cas";
  auto r = c.fcall({fn, keys.size(), views});
  if (auto* e = std::get_if<call_error>(&r)) {
    ADD_FAILURE() << e->what();
    return -1;
  }
  const auto* arr = std::get<reply>(r).as_array();
  if (arr == nullptr || arr->empty()) return -1;
  return (*arr)[0].as_integer().value_or(-1);
}

std::optional<std::string> get(test_client& c, const std::string& key) {
  auto r = c.call({"GET", key});
  if (!std::holds_alternative<reply>(r)) return std::string("<error>");
  const auto& rep = std::get<reply>(r);
  if (rep.is_nil()) return std::nullopt;
  return std::string(rep.as_string().value_or("<not a string>"));
}

TEST(OverrideDesign, OverrideKeySharesItsCheckSlot) {
  for (const std::string key : {"tenant-1", "a:b", "x{y", "z}"}) {
    const std::string state = "sluice:s:api:{" + key + "}";
    const std::string part = "sluice:s:api:{" + key + "}:1.0";
    const std::string over = "sluice:o:api:{" + key + "}";
    EXPECT_EQ(key_slot(state), key_slot(over)) << key;
    EXPECT_EQ(key_slot(part), key_slot(over)) << key;
  }
  // Except a key that is empty or starts with '}': its hash tag is empty,
  // so Redis hashes each whole key (store.cpp, leaf_slot), and its override
  // key lands elsewhere. The design refuses to override such a key in a
  // Cluster (naming `key`); on one server every key is in one call anyway.
  for (const std::string key : {"", "}z"}) {
    EXPECT_FALSE(braced_key_slot(key).has_value()) << key;
    EXPECT_NE(key_slot("sluice:s:api:{" + key + "}"), key_slot("sluice:o:api:{" + key + "}")) << key;
  }
}

TEST(OverrideDesign, CasWritesStateAndOverrideTogetherOrNothing) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  ASSERT_TRUE(c.set_library(std::string(lua_library_name), std::string(lua_library)).ok());
  const std::vector<std::string> keys = {"sluice:s:api:{k}", "sluice:o:api:{k}"};

  // PUT: the state carried into the override and the override written, no expiry for it.
  ASSERT_EQ(cas(c, keys, {"-", "S1", "60000", "-", "O1", "0"}), 1);
  EXPECT_EQ(get(c, keys[0]), "S1");
  EXPECT_EQ(get(c, keys[1]), "O1");
  auto ttl = c.call({"PTTL", keys[1]});
  ASSERT_TRUE(std::holds_alternative<reply>(ttl));
  EXPECT_EQ(std::get<reply>(ttl).as_integer(), -1);

  // A writer that read before the PUT (no override) loses: nothing written.
  EXPECT_EQ(cas(c, keys, {"=S1", "S9", "0", "-", "", "0"}), 0);
  EXPECT_EQ(get(c, keys[0]), "S1");
  // Nor may a state write that saw the override but another state.
  EXPECT_EQ(cas(c, keys, {"-", "S9", "0", "=O1", "", "0"}), 0);
  EXPECT_EQ(get(c, keys[0]), "S1");

  // Replacing the override: both change together.
  ASSERT_EQ(cas(c, keys, {"=S1", "S2", "0", "=O1", "O2", "0"}), 1);
  EXPECT_EQ(get(c, keys[0]), "S2");
  EXPECT_EQ(get(c, keys[1]), "O2");

  // DELETE racing a PUT that replaced the override: refused, the override stays.
  EXPECT_EQ(cas(c, keys, {"=S2", "S3", "0", "=O1", "-", "0"}), 0);
  EXPECT_EQ(get(c, keys[1]), "O2");
  // DELETE that read what is stored: the state carried back, the override gone.
  ASSERT_EQ(cas(c, keys, {"=S2", "S3", "0", "=O2", "-", "0"}), 1);
  EXPECT_EQ(get(c, keys[0]), "S3");
  EXPECT_EQ(get(c, keys[1]), std::nullopt);
  // A carried state that comes out fresh is deleted with it.
  ASSERT_EQ(cas(c, keys, {"=S3", "-", "0", "-", "O4", "0"}), 1);
  EXPECT_EQ(get(c, keys[0]), std::nullopt);
  EXPECT_EQ(get(c, keys[1]), "O4");
}

}  // namespace
}  // namespace sluice::redis
