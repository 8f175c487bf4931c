// A program of its own that opens its store by URL through the store
// registry, with the Redis store linked from sluice::redis: what a
// find_package(sluice COMPONENTS redis) consumer writes. Run by the consumer
// tests with no Redis about: it decides on the memory store, and checks that
// a redis:// URL opens a Redis store (which connects lazily) whose refused
// first call the failure mode answers.
#include <sluice/core/gcra.hpp>
#include <sluice/keyed/registry.hpp>
#include <sluice/redis/store.hpp>

#include <cstdio>

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "consumer_store: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  sluice::store_registry stores;
  sluice::register_redis_stores(stores);
  if (!stores.has("redis") || !stores.has("redis+cluster")) return fail("the Redis schemes are not registered");

  auto memory = stores.open({});
  if (!memory) return fail(memory.err().what().c_str());
  const auto policy = sluice::gcra::make(sluice::rate{1, 1'000'000'000}, 2);
  if (!policy) return fail(policy.err().what().c_str());
  const auto id = (*memory)->define("api", sluice::any_policy{*policy});
  if (!id) return fail(id.err().what().c_str());
  const sluice::check c{*id, "client-1", 0};
  int admitted = 0;
  for (int i = 0; i < 3; ++i)
    admitted += (*memory)->decide_at({.checks = {&c, 1}, .now = 0, .cost = 1, .id = {}}).d.allowed ? 1 : 0;
  if (admitted != 2) return fail("the memory store did not admit exactly its burst");

  // Port 1 on the loopback: nothing listens, so the call is refused at once.
  sluice::store_options o;
  o.url = "redis://127.0.0.1:1";
  o.on_failure = sluice::failure_mode::fail_open;
  o.breaker_failures = 0;
  auto remote = stores.open(o);
  if (!remote) return fail(remote.err().what().c_str());
  if (dynamic_cast<sluice::redis_store*>(remote->get()) == nullptr) return fail("redis:// did not open a redis_store");
  const auto rid = (*remote)->define("api", sluice::any_policy{*policy});
  if (!rid) return fail(rid.err().what().c_str());
  const sluice::check rc{*rid, "client-1", 0};
  const sluice::store_decision d = (*remote)->decide({.checks = {&rc, 1}, .now = 0, .cost = 1, .id = {}});
  if (d.from != sluice::source::fail_open || !d.d.allowed) return fail("a refused call was not answered fail-open");
  if (!(*remote)->figures()) return fail("the Redis store gave no figures");
  std::printf("memory: %d of 3 admitted; redis://127.0.0.1:1: %s\n", admitted,
              std::string(sluice::name_of(d.from)).c_str());
  return 0;
}
