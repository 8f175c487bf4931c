// Shared by the Redis store's tests: one redis-server for the whole binary
// (started on first use, on a free 127.0.0.1 port, stopped by PID at exit),
// a store on it under a fresh prefix, a raw client of it, and decision
// printing.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <variant>

#include "redis/test_client.hpp"
#include "sluice/redis/store.hpp"
#include "support/redis_module_server.hpp"
#include "support/redis_server.hpp"

namespace sluice::redis_test {

/// The binary's shared server (tests that kill, pause or fill a server start
/// their own).
inline testing::redis_server& shared_server() {
  static testing::redis_server srv;
  return srv;
}

/// The binary's shared server with sluice's Redis module loaded, for the
/// store's module path (started on first use, stopped by PID at exit).
inline testing::redis_server& module_server() {
  static testing::redis_server srv(testing::with_module());
  return srv;
}

/// The path a store's decisions take (docs/redis.md, "The store and the
/// module"): the Lua library (`?module=off`, on the shared server) or the
/// module (`?module=on`, on module_server()).
enum class store_path { library, module };

/// The URL of a store on `path`.
inline std::string url_of(store_path path) {
  return path == store_path::library ? shared_server().url() + "?module=off" : module_server().url() + "?module=on";
}

/// A client of the shared server, for reading and editing keys behind a
/// store's back.
inline redis::test_client raw_client() {
  redis::async_client_options co;
  co.where = redis::parse_url(shared_server().url()).value();
  co.command_timeout = std::chrono::seconds(10);
  return redis::test_client(co);
}

/// The string at `key`, read behind the store's back: "(nil)" when there is
/// none, or when the reply is an error or not a string.
inline std::string value_at(redis::test_client& c, const std::string& key) {
  const auto r = c.call({"GET", key});
  const auto* rep = std::get_if<redis::reply>(&r);
  return rep && rep->as_string() ? std::string(*rep->as_string()) : std::string("(nil)");
}

/// A prefix no other test of this run uses.
inline std::string fresh_prefix(const std::string& what) {
  static std::atomic<int> n{0};
  return "t" + std::to_string(n.fetch_add(1)) + ":" + what + ":";
}

/// A store on `url` (the shared server by default), tick_ns 1.
/// Waits (at most 10 s, yielding) until `done` holds; whether it did.
inline bool eventually(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

inline std::unique_ptr<redis_store> open_store(store_options o = {}, const std::string& url = "") {
  o.url = url.empty() ? shared_server().url() : url;
  if (o.key_prefix == "sluice:") o.key_prefix = fresh_prefix("store");
  auto s = redis_store::open(o);
  if (!s) ADD_FAILURE() << s.err().what();
  return s ? std::move(s).value() : nullptr;
}

/// A store for the long conformance runs: a command timeout of 10 s, so a
/// loaded machine's slow calls are not store failures.
inline std::unique_ptr<redis_store> open_patient_store(store_options o = {}) {
  o.command_timeout = std::chrono::seconds(10);
  return open_store(std::move(o));
}

/// Whether every sliding-buckets part of `p` has at most `most` sub-windows
/// (a bucket ring is read and written whole on every decision).
inline bool buckets_at_most(const any_policy& p, std::int64_t most) {
  if (const auto* b = std::get_if<sliding_buckets>(&p)) return b->buckets() <= most;
  const auto parts = [&](const auto& c) {
    for (const auto& part : c.parts())
      if (!buckets_at_most(part, most)) return false;
    return true;
  };
  if (const auto* a = std::get_if<all_of>(&p)) return parts(*a);
  if (const auto* o = std::get_if<any_of>(&p)) return parts(*o);
  return true;
}

/// A parameterized test's name for its algorithm ("sliding_log", ...).
inline std::string algorithm_test_name(const ::testing::TestParamInfo<algorithm>& i) {
  std::string n(name_of(i.param));
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
}

inline std::string show_tick(tick t) { return t == never ? std::string("never") : std::to_string(t); }

inline std::string show(const decision& d) {
  return std::string("{allowed=") + (d.allowed ? "yes" : "no") + " remaining=" + std::to_string(d.remaining) +
         " retry_after=" + show_tick(d.retry_after) + " reset_after=" + show_tick(d.reset_after) +
         " release_after=" + show_tick(d.release_after) + " part=" + std::to_string(d.part) + "}";
}

/// A request of one check.
inline store_request one_check(const check& c, tick now, std::int64_t cost = 1, std::string_view id = {}) {
  store_request r;
  r.checks = std::span<const check>(&c, 1);
  r.now = now;
  r.cost = cost;
  r.id = id;
  return r;
}

}  // namespace sluice::redis_test
