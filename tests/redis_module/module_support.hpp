// Shared by the Redis module's tests: a redis-server with sluice_module.so
// loaded (a real server on a free 127.0.0.1 port, stopped by PID), the
// Lua library's function names, the request argument as the store builds
// it (redis/store/protocol.hpp), and replies printed for comparison.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "redis/client/binary.hpp"
#include "redis/client_support.hpp"
#include "redis/store/protocol.hpp"
#include "redis/test_client.hpp"
#include "support/redis_module_server.hpp"
#include "support/redis_server.hpp"

namespace sluice::redis {
extern const std::string_view lua_library;
extern const std::string_view lua_library_name;
}  // namespace sluice::redis

namespace sluice::module_support {

using testing::module_path;
using testing::with_module;

/// The test binary's server with the module (tests that need another
/// configuration start their own): started on first use, stopped by PID at exit.
inline testing::redis_server& shared_server() {
  static testing::redis_server srv(with_module());
  return srv;
}

/// A client of `srv` with the Lua library loaded.
inline redis::test_client client_of(const testing::redis_server& srv, const std::string& url = "") {
  // A patient client: WAIT, a replica's sync and a loaded machine take
  // longer than the client's default 100 ms.
  redis::test_client c(redis::client_support::options_for(url.empty() ? srv.url() : url, std::chrono::seconds(10)));
  const auto r = c.set_library(std::string(redis::lua_library_name), std::string(redis::lua_library));
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().what());
  return c;
}

/// The Lua library's function `suffix` ("one", "decide", "peek", "report").
inline std::string lua_function(std::string_view suffix) {
  return std::string(redis::lua_library_name) + "_" + std::string(suffix);
}

/// The request header of `_one`: th tl tns base batch.
inline std::string one_header(tick now, std::int64_t tns, std::int64_t base, std::int64_t batch = 0) {
  std::string b;
  redis::put_limbs(b, now);
  redis::put_number(b, tns);
  redis::put_number(b, base);
  redis::put_number(b, batch);
  return b;
}

/// The request header of `_decide`/`_peek`/`_report`: th tl tns base batch has_id id_ttl_ms.
inline std::string tree_header(tick now, std::int64_t tns, std::int64_t base, bool has_id = false,
                               std::int64_t id_ttl_ms = 0, std::int64_t batch = 0) {
  std::string b = one_header(now, tns, base, batch);
  redis::put_number(b, has_id ? 1 : 0);
  redis::put_number(b, id_ttl_ms);
  return b;
}

/// A reply as text: integers, "nil", strings as their length and bytes in
/// hex, errors as "ERR<" message ">", arrays in brackets.
inline std::string show(const redis::reply& r) {
  switch (r.kind) {
    case redis::reply::type::nil:
      return "nil";
    case redis::reply::type::integer:
      return std::to_string(r.integer);
    case redis::reply::type::error:
      return "ERR<" + r.str + ">";
    case redis::reply::type::status:
      return "+" + r.str;
    case redis::reply::type::string: {
      static const char* hex = "0123456789abcdef";
      std::string s = "s" + std::to_string(r.str.size()) + ":";
      for (const unsigned char ch : r.str) {
        s += hex[ch >> 4];
        s += hex[ch & 15];
      }
      return s;
    }
    case redis::reply::type::array: {
      std::string s = "[";
      for (std::size_t i = 0; i < r.elements.size(); ++i) s += (i ? " " : "") + show(r.elements[i]);
      return s + "]";
    }
  }
  return "?";
}

/// A call's reply (an error reply as a reply of kind error), or a failed test.
inline redis::reply answer(redis::call_result r) {
  if (auto* e = std::get_if<redis::call_error>(&r)) {
    if (e->kind == redis::call_error::server) return redis::reply::make_error(e->message);
    ADD_FAILURE() << e->what();
    return redis::reply{};
  }
  return std::get<redis::reply>(std::move(r));
}

/// One command; its reply as text (show).
inline std::string run(redis::test_client& c, const std::vector<std::string>& argv) {
  std::vector<std::string_view> v(argv.begin(), argv.end());
  return show(answer(c.call(std::span<const std::string_view>(v))));
}

/// An FCALL of the library's `suffix` over `keys` then `args`; its reply as text.
inline std::string fcall(redis::test_client& c, std::string_view suffix, const std::vector<std::string>& keys,
                         const std::vector<std::string>& args) {
  const std::string fn = lua_function(suffix);
  std::vector<std::string_view> v;
  for (const auto& k : keys) v.push_back(k);
  for (const auto& a : args) v.push_back(a);
  return show(answer(c.fcall({fn, keys.size(), v})));
}

/// The module's command ("SLUICE." + suffix in capitals) over the same.
inline std::string module_call(redis::test_client& c, std::string_view suffix, const std::vector<std::string>& keys,
                               const std::vector<std::string>& args) {
  std::string name = "SLUICE.";
  for (const char ch : suffix) name += static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 32 : ch);
  std::vector<std::string> argv{name, std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return run(c, argv);
}

/// The blob of _release: th tl tns nh nl, then each key's tag.
inline std::string release_blob(tick now, std::uint64_t nonce, const redis::plan& pl) {
  std::string b;
  redis::put_limbs(b, now);
  redis::put_number(b, 1);
  redis::put_number(b, static_cast<std::int64_t>(nonce >> 32));
  redis::put_number(b, static_cast<std::int64_t>(nonce & 0xFFFFFFFFULL));
  for (const auto& leaf : pl.leaves()) b.append(leaf.tag_view());
  return b;
}

/// A request sent to both: the Lua library on `lua:` keys, the module on
/// `mod:` keys; replies, values and TTLs compared.
class twin {
 public:
  explicit twin(redis::test_client& c) : c_(c) {}

  /// Sends `suffix` over `keys` (without prefix) with `args`; "" when both
  /// answer alike and leave the same values and TTLs.
  std::string send(const std::string& suffix, const std::vector<std::string>& keys,
                   const std::vector<std::string>& args) {
    std::vector<std::string> lk, mk;
    for (const auto& k : keys) {
      lk.push_back("lua:" + k);
      mk.push_back("mod:" + k);
    }
    const std::string a = fcall(c_, suffix, lk, args);
    const std::string b = module_call(c_, suffix, mk, args);
    ++calls;
    if (a != b) return suffix + ": the library answered " + a + ", the module " + b;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::string va = run(c_, {"GET", lk[i]});
      const std::string vb = run(c_, {"GET", mk[i]});
      if (va != vb) return suffix + ": key " + keys[i] + " holds " + va + " (library), " + vb + " (module)";
      const std::string ta = run(c_, {"PTTL", lk[i]});
      const std::string tb = run(c_, {"PTTL", mk[i]});
      const long long da = std::atoll(ta.c_str()), db = std::atoll(tb.c_str());
      if ((da < 0) != (db < 0) || std::llabs(da - db) > 50)
        return suffix + ": key " + keys[i] + " expires in " + ta + " ms (library), " + tb + " ms (module)";
      if (da > 0) ++with_ttl;
    }
    if (a.find("ERR<") != std::string::npos) ++errors;
    return "";
  }

  std::size_t calls = 0, with_ttl = 0, errors = 0;

 private:
  redis::test_client& c_;
};

}  // namespace sluice::module_support
