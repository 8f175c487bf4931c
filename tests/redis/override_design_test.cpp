// What the Redis overrides design (docs/redis.md, "Overrides (not yet)")
// takes from the library as it is, checked against a real redis-server
// before the design is built: the override key
// `<prefix>o:<policy>:{<key>}` shares its check's hash slot, and the
// existing compare-and-set `L_cas` already writes a key's carried state and
// its override key in one step, refusing the whole write when either moved.
// Then the library's override check (main.lua: `L_one`'s second key, the
// 'V' token of `L_decide`, `L_peek` and `L_report`): a call built for
// another override than the one stored decides and writes nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redis/client/binary.hpp"
#include "redis/client/slots.hpp"
#include "redis/client_support.hpp"
#include "redis/store/protocol.hpp"
#include "redis/store/store_impl.hpp"
#include "redis/test_client.hpp"
#include "sluice/core/gcra.hpp"
#include "support/redis_server.hpp"

namespace sluice::redis::redis_override_design_test {
namespace {

using testing::redis_server;

using client_support::options_for;

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

/// A GCRA of 2 per 10 ticks, burst 2: its plan.
plan two_per_ten() { return plan::make(any_policy{gcra::make(rate{2, 10}, 2).value()}).value(); }

/// The head every call's blob starts with: now's limbs, tns 0, base 0, `batch`.
std::string head(tick now, std::int64_t batch) {
  std::string b;
  put_limbs(b, now);
  put_number(b, 0);
  put_number(b, 0);
  put_number(b, batch);
  return b;
}

/// A call of function `fn` (without the library's name): its reply.
reply run(test_client& c, std::string_view fn, std::vector<std::string> keys, std::vector<std::string> argv) {
  std::vector<std::string_view> views(keys.begin(), keys.end());
  views.insert(views.end(), argv.begin(), argv.end());
  const std::string name = std::string(lua_library_name) + "_" + std::string(fn);
  auto r = c.fcall({name, keys.size(), views});
  if (auto* e = std::get_if<call_error>(&r)) {
    ADD_FAILURE() << e->what();
    return reply{};
  }
  return std::get<reply>(std::move(r));
}

std::int64_t status(const reply& r) {
  const auto* arr = r.as_array();
  return arr == nullptr || arr->empty() ? -1 : (*arr)[0].as_integer().value_or(-1);
}

/// {6, v, stored}: v and the stored bytes ("" when none); {-1, ""} else.
std::pair<std::int64_t, std::string> moved(const reply& r) {
  const auto* arr = r.as_array();
  if (arr == nullptr || arr->size() != 3 || (*arr)[0].as_integer() != 6) return {-1, ""};
  return {(*arr)[1].as_integer().value_or(-1), std::string((*arr)[2].as_string().value_or(""))};
}

TEST(OverrideDesign, OneDecidesOnlyForTheOverrideItWasBuiltFor) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  ASSERT_TRUE(c.set_library(std::string(lua_library_name), std::string(lua_library)).ok());
  const plan p = two_per_ten();
  const auto blob = [&](tick now, std::int64_t batch) {
    std::string b = head(now, batch);
    p.append_leaf(0, now, 1, b);
    return b;
  };
  const std::string st = "sluice:s:api:{k}";
  const std::string ov = "sluice:o:api:{k}";
  // No override key named: as before.
  EXPECT_EQ(status(run(c, "one", {st}, {blob(0, 0)})), 1);
  // Named and absent, expected absent: decided.
  EXPECT_EQ(status(run(c, "one", {st, ov}, {blob(0, 0), "-"})), 1);
  const auto before = get(c, st);
  ASSERT_TRUE(before.has_value());
  // An override appears: the call built without it decides nothing.
  ASSERT_TRUE(std::holds_alternative<reply>(c.call({"SET", ov, "O1"})));
  EXPECT_EQ(moved(run(c, "one", {st, ov}, {blob(1, 0), "-"})), std::make_pair(std::int64_t{1}, std::string("O1")));
  EXPECT_EQ(moved(run(c, "one", {st, ov}, {blob(1, 0), "=O2"})), std::make_pair(std::int64_t{1}, std::string("O1")));
  EXPECT_EQ(get(c, st), before);
  // Built for it: decided (denied here: 2 admitted at 0, the third at 1 waits).
  EXPECT_EQ(status(run(c, "one", {st, ov}, {blob(1, 0), "=O1"})), 0);
  // Deleted: a call built for it is refused, the stored bytes nil.
  ASSERT_TRUE(std::holds_alternative<reply>(c.call({"DEL", ov})));
  EXPECT_EQ(moved(run(c, "one", {st, ov}, {blob(5, 0), "=O1"})), std::make_pair(std::int64_t{1}, std::string()));
  // Its pipeline batch stops there: the next call of batch 9 is skipped.
  EXPECT_EQ(status(run(c, "one", {st, ov}, {blob(5, 9), "=O1"})), 6);
  EXPECT_EQ(status(run(c, "one", {st, ov}, {blob(5, 9), "-"})), 4);
  EXPECT_EQ(get(c, st), before);
  EXPECT_EQ(status(run(c, "one", {st, ov}, {blob(5, 0), "-"})), 1);
}

TEST(OverrideDesign, DecidePeekReportCheckEveryOverrideBeforeWriting) {
  redis_server srv;
  test_client c(options_for(srv.url()));
  ASSERT_TRUE(c.set_library(std::string(lua_library_name), std::string(lua_library)).ok());
  const plan p = two_per_ten();
  // 'A' 2 over two checks, each behind its 'V' (nullopt: none expected).
  const auto blob = [&](tick now, bool has_id, std::optional<std::string> want_a, std::optional<std::string> want_b,
                        bool report) {
    std::string b = head(now, 0);
    put_number(b, has_id ? 1 : 0);
    put_number(b, 60000);
    b.push_back('A');
    put_number(b, 2);
    for (const auto& want : {want_a, want_b}) {
      b.push_back('V');
      put_number(b, want ? static_cast<std::int64_t>(want->size()) : -1);
      if (want) b.append(*want);
      p.append_tree(now, 1, b, report);
    }
    return b;
  };
  const std::string sa = "sluice:s:api:{a}", oa = "sluice:o:api:{a}";
  const std::string sb = "sluice:s:api:{b}", ob = "sluice:o:api:{b}";
  const std::vector<std::string> keys = {oa, sa, ob, sb};

  auto r = run(c, "decide", keys, {blob(0, false, std::nullopt, std::nullopt, false)});
  EXPECT_EQ(status(r), 1);
  ASSERT_NE(r.as_array(), nullptr);
  EXPECT_EQ(r.as_array()->size(), 5u);  // {1, before, after} per leaf: the reply as before
  const auto a0 = get(c, sa);
  const auto b0 = get(c, sb);
  ASSERT_TRUE(a0 && b0);

  // b gets an override: a request built without it writes neither check.
  ASSERT_TRUE(std::holds_alternative<reply>(c.call({"SET", ob, "Y"})));
  for (const char* fn : {"decide", "peek", "report"})
    EXPECT_EQ(moved(run(c, fn, keys, {blob(0, false, std::nullopt, std::nullopt, fn == std::string("report"))})),
              std::make_pair(std::int64_t{2}, std::string("Y")))
        << fn;
  // Nor a request id's record.
  const std::string id = "sluice:i:r1";
  EXPECT_EQ(moved(run(c, "decide", {id, oa, sa, ob, sb}, {blob(0, true, std::nullopt, "X", false), "identity"})),
            std::make_pair(std::int64_t{2}, std::string("Y")));
  EXPECT_EQ(get(c, id), std::nullopt);
  EXPECT_EQ(get(c, sa), a0);
  EXPECT_EQ(get(c, sb), b0);
  // The first check that moved is named: a expected "Z" but holds none.
  EXPECT_EQ(moved(run(c, "decide", keys, {blob(0, false, "Z", "X", false)})),
            std::make_pair(std::int64_t{1}, std::string()));

  // Built for what is stored: decided and written, the id recorded.
  EXPECT_EQ(status(run(c, "decide", {id, oa, sa, ob, sb}, {blob(0, true, std::nullopt, "Y", false), "identity"})), 1);
  EXPECT_TRUE(get(c, id).has_value());
  EXPECT_NE(get(c, sa), a0);
  EXPECT_EQ(status(run(c, "peek", keys, {blob(0, false, std::nullopt, "Y", false)})), 0);  // both spent at 0
  EXPECT_EQ(status(run(c, "report", keys, {blob(0, false, std::nullopt, "Y", true)})), 1);
}

}  // namespace
}  // namespace sluice::redis::redis_override_design_test
