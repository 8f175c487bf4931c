#include "store_flag.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "store_kinds.hpp"

namespace sluice::cli {

void add_store_flag(CLI::App& cmd, std::string& spec, std::string* prefix) {
  const store_registry& stores = program_stores();
  std::string help = "where the states live: " + stores.describe();
  const bool remote = stores.has("redis");
  if (remote) help += "; the password may come from $SLUICE_REDIS_PASSWORD instead";
  cmd.add_option("--store", spec, help);
  if (prefix != nullptr && remote)
    cmd.add_option("--store-prefix", *prefix, "a remote store's key prefix (default: a fresh random one per run)");
}

result<made_store> make_store(std::string_view spec, const store_setup& setup) {
  store_options o;
  o.url = std::string(spec);
  o.memory.keyed = setup.keyed;
  const store_scheme* scheme = scheme_of(spec);
  if (scheme != nullptr && scheme->remote) {
    o.key_prefix = setup.key_prefix;
    if (o.key_prefix.empty()) {
      // A fresh prefix per run, so that runs never see each other's keys.
      std::random_device rd;
      char buf[32];
      std::snprintf(buf, sizeof buf, "sluice:run:%08x%08x:", rd(), rd());
      o.key_prefix = buf;
    }
    o.tick_ns = 0;  // a trace's ticks, not real time
    o.unknown_tick_ttl = setup.remote_ttl;
    o.on_failure = failure_mode::fail_closed;
    o.command_timeout = std::chrono::seconds(2);
    o.connect_timeout = std::chrono::seconds(2);
    o.breaker_failures = 0;
    // The password may live outside the URL (docs/redis.md, "URLs, passwords").
    if (const char* pw = std::getenv("SLUICE_REDIS_PASSWORD"); pw != nullptr) o.password = pw;
  }
  auto st = program_stores().open(o);
  // The registry's own errors name "url": here that is --store itself.
  if (!st) return error{"--store", st.err().code == error_code::bad_store_url ? st.err().message : st.err().what()};
  made_store out;
  out.s = std::move(st).value();
  out.memory = dynamic_cast<memory_store*>(out.s.get());
  return out;
}

}  // namespace sluice::cli
