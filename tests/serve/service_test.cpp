// The service's public face as its front ends call it (service.hpp), the
// check limit counted once (decide.hpp), and the codes of the errors the
// service tells apart (sluice/result.hpp): never their words.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "decide.hpp"
#include "service.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/keyed/memory.hpp"
#include "sluice/keyed/registry.hpp"
#include "sluice/keyed/snapshot.hpp"
#include "stores.hpp"

namespace sluice::serve::serve_service_test {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<service> service_of(const std::string& toml) {
  auto c = parse_config(toml, "t.toml");
  if (!c) {
    ADD_FAILURE() << c.err().what();
    return nullptr;
  }
  auto st = make_store(c->store);
  if (!st) {
    ADD_FAILURE() << st.err().what();
    return nullptr;
  }
  auto svc = service::create(std::move(c).value(), std::move(st).value());
  if (!svc) {
    ADD_FAILURE() << svc.err().what();
    return nullptr;
  }
  return std::move(svc).value();
}

planned_check enforced(std::size_t policy, std::string key) { return {policy, std::move(key), 1, false, 0, false}; }
planned_check shadow(std::size_t policy, std::string key) { return {policy, std::move(key), 1, true, 0, false}; }

TEST(CheckLimit, CountsEachEnforcedPolicyAndKeyOnceAndNoShadowCheck) {
  std::vector<planned_check> cs;
  for (int i = 0; i < 16; ++i) cs.push_back(enforced(0, "k" + std::to_string(i)));
  EXPECT_TRUE(within_check_limit(cs));
  // The same (policy, key) again is the same store check; a shadow check is none.
  cs.push_back(enforced(0, "k3"));
  for (int i = 0; i < 20; ++i) cs.push_back(shadow(0, "s" + std::to_string(i)));
  EXPECT_TRUE(within_check_limit(cs));
  // The same key of another policy is another store check: 17.
  cs.push_back(enforced(1, "k3"));
  EXPECT_FALSE(within_check_limit(cs));
  EXPECT_TRUE(within_check_limit({}));
}

TEST(ErrorCodes, AStoreUrlRefusedAsAWholeSaysSoByItsCode) {
  const store_registry stores;
  store_options o;
  for (const char* url : {"", "etcd://x", "redis://127.0.0.1:6379"}) {  // empty, no store's, not built in
    o.url = url;
    auto st = stores.open(o);
    ASSERT_FALSE(st) << url;
    EXPECT_EQ(st.err().code, error_code::bad_store_url) << url;
  }
  // The service shows the registry's words as store.url's, without its field.
  store_config c;
  c.url = "etcd://x";
  auto st = make_store(c);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.err().what(), "store.url: 'etcd://x' is not a store (memory)");
}

TEST(ErrorCodes, AFullStoreAndOneWithoutOverridesSaySoByTheirCode) {
  memory_store_options mo;
  mo.max_overrides = 1;
  memory_store m(mo);
  auto id = m.define("api", *parse_policy("gcra 10/1s"));
  ASSERT_TRUE(id);
  ASSERT_TRUE(m.set_override_at(*id, "a", *parse_policy("gcra 20/1s"), 1));
  auto full = m.set_override_at(*id, "b", *parse_policy("gcra 20/1s"), 1);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.err().code, error_code::store_full);
  EXPECT_EQ(full.err().field, "overrides");
  // A policy the store does not know is the request's fault, not the store's.
  auto unknown = m.set_override_at(*id + 100, "a", *parse_policy("gcra 20/1s"), 1);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.err().code, error_code::unspecified);
}

TEST(ServiceFace, ASnapshotOfAnotherPolicyStartsThatPolicyFresh) {
  std::string t = (fs::temp_directory_path() / "sluice-service-XXXXXX").string();
  ASSERT_NE(::mkdtemp(t.data()), nullptr);
  const std::string dir = t;
  {
    auto before = service_of("[policies]\napi = \"gcra 10/1s\"\nweb = \"gcra 5/1s\"\n");
    ASSERT_TRUE(before);
    auto saved = before->save_snapshots(dir);
    ASSERT_TRUE(saved) << saved.err().what();
    EXPECT_EQ(saved->policies, 2U);
  }
  // api's limit changed while the service was down: its file is of another
  // policy (told by the error's code), so api starts fresh and web goes on.
  auto after = service_of("[policies]\napi = \"gcra 20/1s\"\nweb = \"gcra 5/1s\"\n");
  ASSERT_TRUE(after);
  auto loaded = after->load_snapshots(dir);
  ASSERT_TRUE(loaded) << loaded.err().what();
  EXPECT_EQ(loaded->policies, 1U);
  ASSERT_EQ(loaded->skipped.size(), 1U);
  EXPECT_EQ(loaded->skipped[0].rfind("api: ", 0), 0U) << loaded->skipped[0];
  auto read = read_snapshot(dir + "/api.snap", *parse_policy("gcra 20/1s"));
  ASSERT_FALSE(read);
  EXPECT_EQ(read.err().code, error_code::other_policy);
  // A corrupt file is no other policy's: an error, nothing loaded.
  {
    std::FILE* f = std::fopen((dir + "/web.snap").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("not a snapshot", f);
    std::fclose(f);
  }
  auto again = service_of("[policies]\napi = \"gcra 20/1s\"\nweb = \"gcra 5/1s\"\n");
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->load_snapshots(dir));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sluice::serve::serve_service_test
