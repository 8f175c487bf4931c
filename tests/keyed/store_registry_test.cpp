// store_registry (store/registry.hpp): the memory store built in, schemes
// read from the URL alone, and the errors for a URL of a store left out of
// the build and for one that names no store (its password never shown).
#include "sluice/keyed/registry.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sluice/core/gcra.hpp"

namespace sluice::keyed_store_registry_test {
namespace {

TEST(StoreRegistry, SchemeOfReadsThePartBeforeTheSeparator) {
  ASSERT_NE(scheme_of("memory"), nullptr);
  EXPECT_FALSE(scheme_of("memory")->remote);
  EXPECT_EQ(scheme_of("redis://h:1")->name, "redis");
  EXPECT_EQ(scheme_of("rediss://h:1")->name, "rediss");
  EXPECT_EQ(scheme_of("unix:///tmp/r.sock")->name, "unix");
  EXPECT_EQ(scheme_of("redis+cluster://a:1,b:2")->name, "redis+cluster");
  EXPECT_EQ(scheme_of("redis+sentinel://a:1/m")->name, "redis+sentinel");
  EXPECT_EQ(scheme_of("rediss+sentinel://a:1/m")->name, "rediss+sentinel");
  for (const store_scheme& s : known_store_schemes)
    if (s.name != "memory") {
      EXPECT_TRUE(s.remote) << s.name;
    }
  // Spelled otherwise, or with the wrong separator: no store.
  EXPECT_EQ(scheme_of("memory://"), nullptr);
  EXPECT_EQ(scheme_of("redis"), nullptr);
  EXPECT_EQ(scheme_of("REDIS://h:1"), nullptr);
  EXPECT_EQ(scheme_of("redis:/h:1"), nullptr);
  EXPECT_EQ(scheme_of("etcd://x"), nullptr);
  EXPECT_EQ(scheme_of(""), nullptr);
}

TEST(StoreRegistry, OpensTheMemoryStoreBuiltIn) {
  const store_registry stores;
  EXPECT_TRUE(stores.has("memory"));
  EXPECT_FALSE(stores.has("redis"));
  EXPECT_EQ(stores.describe(), "memory");
  manual_clock clock;
  store_options o;
  o.memory.clock = &clock;
  auto st = stores.open(o);
  ASSERT_TRUE(st) << st.err().what();
  ASSERT_NE(dynamic_cast<memory_store*>(st->get()), nullptr);
  // The options reach the store: it reads the manual clock given.
  clock.advance(1234);
  EXPECT_EQ((*st)->now(), 1234);
  const auto id = (*st)->define("api", any_policy{gcra::make(rate{1, 1000}, 1).value()});
  ASSERT_TRUE(id);
  const check c{*id, "k"};
  EXPECT_TRUE((*st)->decide_at({.checks = {&c, 1}, .now = 0, .cost = 1, .id = {}}).d.allowed);
  EXPECT_FALSE((*st)->decide_at({.checks = {&c, 1}, .now = 1, .cost = 1, .id = {}}).d.allowed);
  // The memory store keeps no figures of its own.
  EXPECT_FALSE((*st)->figures().has_value());
}

TEST(StoreRegistry, AStoreLeftOutOfTheBuildIsNamedWithItsTargetAndNoPassword) {
  const store_registry stores;
  store_options o;
  o.url = "redis://user:hunter2@10.0.0.1:6379/0";
  auto st = stores.open(o);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.err().field, "url");
  EXPECT_NE(st.err().message.find("'redis://user:***@10.0.0.1:6379/0'"), std::string::npos) << st.err().message;
  EXPECT_NE(st.err().message.find("built without the redis:// store (sluice::redis"), std::string::npos)
      << st.err().message;
  EXPECT_EQ(st.err().message.find("hunter2"), std::string::npos) << st.err().message;
}

TEST(StoreRegistry, AnUnknownSchemeIsNotAStoreAndListsWhatOpens) {
  const store_registry stores;
  store_options o;
  o.url = "etcd://root:pw@x";
  auto st = stores.open(o);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.err().field, "url");
  EXPECT_EQ(st.err().message, "'etcd://root:***@x' is not a store (memory)");
  o.url = "mem\x1bory";
  EXPECT_EQ(stores.open(o).err().message, "'mem\\x1bory' is not a store (memory)");
  o.url = "";
  EXPECT_EQ(stores.open(o).err().message, "is empty (memory)");
}

result<std::unique_ptr<store>> open_fake_redis(const store_options& o) {
  return error{"host", "fake opener for " + o.url};
}

TEST(StoreRegistry, AnOpenerIsRegisteredForAKnownRemoteSchemeOnly) {
  store_registry stores;
  EXPECT_FALSE(stores.add("etcd", &open_fake_redis));
  EXPECT_FALSE(stores.add("memory", &open_fake_redis));
  EXPECT_FALSE(stores.add("redis", nullptr));
  EXPECT_TRUE(stores.add("redis+cluster", &open_fake_redis));
  EXPECT_TRUE(stores.add("redis", &open_fake_redis));
  EXPECT_TRUE(stores.has("redis"));
  // Listed in known_store_schemes' order, whatever the order of registration.
  EXPECT_EQ(stores.describe(),
            "memory, redis://[user:password@]host[:port][/db], redis+cluster://host:port[,host:port...]");
  store_options o;
  o.url = "redis://h:1";
  auto st = stores.open(o);
  ASSERT_FALSE(st);
  // The store's own error, as it gave it.
  EXPECT_EQ(st.err().field, "host");
  EXPECT_EQ(st.err().message, "fake opener for redis://h:1");
  // Two registries never share openers.
  EXPECT_FALSE(store_registry{}.has("redis"));
}

}  // namespace
}  // namespace sluice::keyed_store_registry_test
