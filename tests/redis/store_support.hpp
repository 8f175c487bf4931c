// Shared by the Redis store's tests: one redis-server for the whole binary
// (started on first use, on a free 127.0.0.1 port, stopped by PID at exit),
// a store on it under a fresh prefix, a raw client of it, and decision
// printing.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
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

/// The URL query of a store on `path`.
inline std::string query_of(store_path path) { return path == store_path::library ? "?module=off" : "?module=on"; }

/// The shared server of `path`: module_server() for the module's.
inline testing::redis_server& server_of(store_path path) {
  return path == store_path::library ? shared_server() : module_server();
}

/// The options of a server of a test's own on `path` (the module loaded on
/// the module's).
inline testing::redis_server_options server_options_of(store_path path) {
  return path == store_path::library ? testing::redis_server_options{} : testing::with_module();
}

/// The URL of a store on `path`.
inline std::string url_of(store_path path) { return server_of(path).url() + query_of(path); }

/// A client of `srv` (the shared server by default), for reading and
/// editing keys behind a store's back.
inline redis::test_client raw_client(const testing::redis_server& srv = shared_server()) {
  redis::async_client_options co;
  co.where = redis::parse_url(srv.url()).value();
  co.where.module = redis::module_use::off;
  co.command_timeout = std::chrono::seconds(10);
  return redis::test_client(co);
}

/// A field of `command`'s line in INFO commandstats of the server of `c`
/// ("calls", "failed_calls"); 0 when it has not run.
inline std::uint64_t command_stat(redis::test_client& c, const std::string& command, const std::string& field) {
  const auto r = c.call({"INFO", "commandstats"});
  const auto* rep = std::get_if<redis::reply>(&r);
  if (rep == nullptr || !rep->as_string()) return 0;
  const std::string_view text = *rep->as_string();
  const auto line = text.find("cmdstat_" + command + ":");
  if (line == std::string_view::npos) return 0;
  const auto at = text.find(field + "=", line);
  if (at == std::string_view::npos || at > text.find('\n', line)) return 0;
  std::uint64_t n = 0;
  std::from_chars(text.data() + at + field.size() + 1, text.data() + text.size(), n);
  return n;
}

/// How many times `command` (lower case: "sluice.refund", "fcall") ran on
/// the server of `c` and answered no error (a connection's probe of the
/// module at its login is an error reply: not counted).
inline std::uint64_t calls_of(redis::test_client& c, const std::string& command) {
  return command_stat(c, command, "calls") - command_stat(c, command, "failed_calls");
}

/// How many times `command` ran there and answered an error.
inline std::uint64_t failed_calls_of(redis::test_client& c, const std::string& command) {
  return command_stat(c, command, "failed_calls");
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

/// Whether the deny cache answers a repeat of the denial `r` soon: the cache
/// may pass a request to the store at any time (its subscription not yet
/// confirmed, or its listener reading: docs/redis.md, "The deny cache"), so
/// not necessarily the first repeat; a denial charges nothing. Every repeat
/// must be denied.
template <class Store>
bool cache_answers_denial(Store& st, const store_request& r) {
  return eventually([&] {
    const store_decision again = st.decide_at(r);
    EXPECT_FALSE(again.d.allowed);
    return again.from == source::deny_cache;
  });
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
inline std::unique_ptr<redis_store> open_patient_store(store_options o = {}, const std::string& url = "") {
  o.command_timeout = std::chrono::seconds(10);
  return open_store(std::move(o), url);
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

/// A test's name for its path: "library" or "module".
inline std::string path_test_name(const ::testing::TestParamInfo<store_path>& i) {
  return i.param == store_path::library ? "library" : "module";
}

/// A test's name for its algorithm and path: the algorithm's, with
/// "_module" on the module's path.
inline std::string algorithm_path_test_name(const ::testing::TestParamInfo<std::tuple<algorithm, store_path>>& i) {
  return algorithm_test_name({std::get<0>(i.param), i.index}) +
         (std::get<1>(i.param) == store_path::module ? "_module" : "");
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
