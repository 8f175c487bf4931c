// sluice_module.so: sluice inside Redis (docs/redis.md, "The Redis module").
//
// The commands take the Lua library's FCALL arguments (src/redis/lua/main.lua)
// after its function's name, so a client switches by the command's name:
//
//   SLUICE.ONE numkeys state-key [override-key] blob [expected]   (FCALL L_one)
//   SLUICE.DECIDE / SLUICE.PEEK / SLUICE.REPORT numkeys keys... blob [identity]
//   SLUICE.RELEASE / REFUND / REFUND_READ / CAS numkeys keys... args...
//                                            (FCALL L_release, _refund, _refund_read, _cas)
//   SLUICE.INFO                             (what it decides: docs/redis.md)
//   CL.THROTTLE key max_burst count period [quantity]             (redis-cell's)
//
// This file binds engine.hpp and throttle.hpp to the module API: the keys
// (string values only; another type is an error reply), the replies, and
// the effect's replication — each write goes to replicas and the AOF as
// `SET key value [PXAT ms]`, so a replica without the module holds the same
// value and expiry (each key is opened once per call). Only RedisModule_OnLoad is exported (the build hides
// every other symbol). Nothing here throws into Redis: a module fault
// kills the server.
#include <time.h>

#include <array>
#include <charconv>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redis_module/engine.hpp"
#include "redis_module/throttle.hpp"
#include "redismodule.h"

namespace sluice::redis_module {
namespace {

std::int64_t wall_us() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

/// The word "PXAT" of every replicated write's SET, made at load.
RedisModuleString* pxat = nullptr;

std::string_view view(RedisModuleString* s) {
  std::size_t n = 0;
  const char* p = RedisModule_StringPtrLen(s, &n);
  return {p, n};
}

/// Reads the key `k`: false when it holds another type than a string.
bool read_key(RedisModuleKey* k, std::optional<std::string>& value) {
  const int type = RedisModule_KeyType(k);
  if (type == REDISMODULE_KEYTYPE_EMPTY) {
    value.reset();
    return true;
  }
  if (type != REDISMODULE_KEYTYPE_STRING) return false;
  std::size_t n = 0;
  const char* p = RedisModule_StringDMA(k, &n, REDISMODULE_READ);
  value.emplace(p, n);
  return true;
}

/// Sets the key `k` (named `name`, opened for writing) to `value`,
/// expiring at `at` ms since the epoch (REDISMODULE_NO_EXPIRE: never), and
/// replicates the effect as SET … PXAT (the absolute instant written). A
/// string of the same length is overwritten in place
/// (research/redis-module.md: no new object).
void write_key_at(RedisModuleCtx* ctx, RedisModuleKey* k, RedisModuleString* name, std::string_view value,
                  long long at) {
  std::size_t n = 0;
  char* p = nullptr;
  if (RedisModule_KeyType(k) == REDISMODULE_KEYTYPE_STRING && RedisModule_ValueLength(k) == value.size())
    p = RedisModule_StringDMA(k, &n, REDISMODULE_WRITE);
  if (p != nullptr && n == value.size()) {
    std::memcpy(p, value.data(), n);
  } else {
    RedisModuleString* v = RedisModule_CreateString(ctx, value.data(), value.size());
    RedisModule_StringSet(k, v);  // drops any expiry, as SET does
    RedisModule_FreeString(ctx, v);
  }
  if (at != REDISMODULE_NO_EXPIRE) {
    RedisModule_SetAbsExpire(k, at);
    // "PXAT" made once, the instant's digits as one buffer: each costs the
    // replication an allocation less than 'c' and 'l' (docs/redis.md, "What
    // it costs Redis"); the command replicated is the same.
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, at).ptr;
    RedisModule_Replicate(ctx, "SET", "sbsb", name, value.data(), value.size(), pxat, digits,
                          static_cast<std::size_t>(end - digits));
  } else {
    RedisModule_SetExpire(k, REDISMODULE_NO_EXPIRE);
    RedisModule_Replicate(ctx, "SET", "sb", name, value.data(), value.size());
  }
}

/// write_key_at, expiring `px` ms from now (0: never).
void write_key(RedisModuleCtx* ctx, RedisModuleKey* k, RedisModuleString* name, std::string_view value,
               std::int64_t px) {
  write_key_at(ctx, k, name, value, px > 0 ? RedisModule_Milliseconds() + px : REDISMODULE_NO_EXPIRE);
}

/// The keys of one call: argv[first .. first + n), each opened once, on
/// first use (for writing unless `read_only`), and closed at the end.
class module_keyspace final : public keyspace {
 public:
  module_keyspace(RedisModuleCtx* ctx, RedisModuleString** keys, std::size_t n, bool read_only)
      : ctx_(ctx), keys_(keys), n_(n), mode_(read_only ? REDISMODULE_READ : REDISMODULE_READ | REDISMODULE_WRITE) {
    if (n > inline_.size()) {
      many_.assign(n, nullptr);
      open_ = many_.data();
    }
  }
  ~module_keyspace() override {
    for (std::size_t i = 0; i < n_; ++i)
      if (open_[i] != nullptr) RedisModule_CloseKey(open_[i]);
  }
  module_keyspace(const module_keyspace&) = delete;
  module_keyspace& operator=(const module_keyspace&) = delete;

  bool get(std::size_t i, std::optional<std::string>& value) override { return read_key(key(i), value); }
  void put(std::size_t i, std::string_view value, std::int64_t px) override {
    write_key(ctx_, key(i), keys_[i], value, px);
  }
  std::int64_t now_us() override { return wall_us(); }
  void del(std::size_t i) override {
    if (RedisModule_KeyType(key(i)) == REDISMODULE_KEYTYPE_EMPTY) return;  // DEL of no key: no effect
    RedisModule_DeleteKey(key(i));
    RedisModule_Replicate(ctx_, "DEL", "s", keys_[i]);
  }
  void put_keep_ttl(std::size_t i, std::string_view value) override {
    const long long at = RedisModule_KeyType(key(i)) == REDISMODULE_KEYTYPE_EMPTY ? REDISMODULE_NO_EXPIRE
                                                                                  : RedisModule_GetAbsExpire(key(i));
    write_key_at(ctx_, key(i), keys_[i], value, at);
  }
  std::int64_t pttl(std::size_t i) override {
    if (RedisModule_KeyType(key(i)) == REDISMODULE_KEYTYPE_EMPTY) return -2;
    const long long t = RedisModule_GetExpire(key(i));
    return t == REDISMODULE_NO_EXPIRE ? -1 : t;
  }
  void publish(std::string_view channel, std::string_view message) override {
    RedisModuleString* ch = RedisModule_CreateString(ctx_, channel.data(), channel.size());
    RedisModuleString* msg = RedisModule_CreateString(ctx_, message.data(), message.size());
    RedisModule_PublishMessage(ctx_, ch, msg);  // a Cluster's nodes hear it over the bus
    if ((RedisModule_GetContextFlags(ctx_) & REDISMODULE_CTX_FLAGS_CLUSTER) == 0)
      RedisModule_Replicate(ctx_, "PUBLISH", "ss", ch, msg);  // as a function's PUBLISH reaches replicas
    RedisModule_FreeString(ctx_, ch);
    RedisModule_FreeString(ctx_, msg);
  }

 private:
  RedisModuleKey* key(std::size_t i) {
    if (open_[i] == nullptr) open_[i] = static_cast<RedisModuleKey*>(RedisModule_OpenKey(ctx_, keys_[i], mode_));
    return open_[i];
  }

  RedisModuleCtx* ctx_;
  RedisModuleString** keys_;
  std::size_t n_;
  std::array<RedisModuleKey*, 4> inline_{};  // the keys of most calls: no allocation
  std::vector<RedisModuleKey*> many_;
  RedisModuleKey** open_ = inline_.data();
  int mode_;
};

void send(RedisModuleCtx* ctx, const reply& r) {
  switch (r.k) {
    case reply::kind::integer:
      RedisModule_ReplyWithLongLong(ctx, r.integer);
      return;
    case reply::kind::bulk:
      RedisModule_ReplyWithStringBuffer(ctx, r.text.data(), r.text.size());
      return;
    case reply::kind::nil:
      RedisModule_ReplyWithNull(ctx);
      return;
    case reply::kind::error:
      RedisModule_ReplyWithError(ctx, r.text.c_str());
      return;
    case reply::kind::array:
      RedisModule_ReplyWithArray(ctx, static_cast<long>(r.items.size()));
      for (const reply& item : r.items) send(ctx, item);
      return;
  }
}

template <entry E>
int sluice_command(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) noexcept {
  try {
    if (argc < 2) return RedisModule_WrongArity(ctx);
    long long n = 0;
    if (RedisModule_StringToLongLong(argv[1], &n) != REDISMODULE_OK || n < 0 || n > argc - 2)
      return RedisModule_ReplyWithError(ctx,
                                        "ERR numkeys must be an integer from 0 to the number of arguments after it");
    // The arguments after the keys (one or two in every call the store
    // sends: on the stack).
    const auto count = static_cast<std::size_t>(argc - 2 - n);
    std::array<std::string_view, 4> few;
    std::vector<std::string_view> many;
    if (count > few.size()) many.resize(count);
    const std::span<std::string_view> args =
        count > few.size() ? std::span<std::string_view>(many) : std::span<std::string_view>(few.data(), count);
    for (std::size_t i = 0; i < count; ++i) args[i] = view(argv[static_cast<std::size_t>(2 + n) + i]);
    module_keyspace ks(ctx, argv + 2, static_cast<std::size_t>(n), read_only(E));
    send(ctx, run(E, ks, static_cast<std::size_t>(n), args));
  } catch (const std::exception& e) {
    RedisModule_ReplyWithError(ctx, (std::string("ERR sluice: ") + e.what()).c_str());
  } catch (...) {
    RedisModule_ReplyWithError(ctx, "ERR sluice: internal error");
  }
  return REDISMODULE_OK;
}

int info_command(RedisModuleCtx* ctx, RedisModuleString**, int argc) noexcept {
  if (argc != 1) return RedisModule_WrongArity(ctx);
  send(ctx, info());
  return REDISMODULE_OK;
}

int throttle_command(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) noexcept {
  try {
    if (argc < 5 || argc > 6) return RedisModule_WrongArity(ctx);
    std::vector<std::string_view> args;
    for (int i = 2; i < argc; ++i) args.push_back(view(argv[i]));
    throttle_args a;
    if (auto e = parse_throttle(args, a)) {
      send(ctx, *e);
      return REDISMODULE_OK;
    }
    module_keyspace ks(ctx, argv + 1, 1, false);
    std::optional<std::string> before;
    if (!ks.get(0, before))
      return RedisModule_ReplyWithError(ctx, "WRONGTYPE Operation against a key holding the wrong kind of value");
    const throttle_result r = throttle(a, before, wall_us());
    if (r.after) ks.put(0, *r.after, r.px);
    send(ctx, r.answer);
  } catch (const std::exception& e) {
    RedisModule_ReplyWithError(ctx, (std::string("ERR sluice: ") + e.what()).c_str());
  } catch (...) {
    RedisModule_ReplyWithError(ctx, "ERR sluice: internal error");
  }
  return REDISMODULE_OK;
}

/// Declares where a command's keys are, for Cluster routing and ACL key
/// patterns: `keynum` (SLUICE.*: numkeys at 1, keys after it) or one key
/// at 1 (CL.THROTTLE).
int describe(RedisModuleCtx* ctx, const char* name, const char* summary, int arity, bool keynum, bool writes) {
  RedisModuleCommand* cmd = RedisModule_GetCommand(ctx, name);
  if (cmd == nullptr) return REDISMODULE_ERR;
  RedisModuleCommandInfo info;
  std::memset(&info, 0, sizeof info);
  info.version = REDISMODULE_COMMAND_INFO_VERSION;
  info.summary = summary;
  info.since = "1.0.0";
  info.arity = arity;
  if (keynum && arity == 1) return RedisModule_SetCommandInfo(cmd, &info);  // no keys (SLUICE.INFO)
  RedisModuleCommandKeySpec specs[2];
  std::memset(specs, 0, sizeof specs);
  specs[0].flags = writes ? (REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_ACCESS | REDISMODULE_CMD_KEY_UPDATE)
                          : (REDISMODULE_CMD_KEY_RO | REDISMODULE_CMD_KEY_ACCESS);
  specs[0].begin_search_type = REDISMODULE_KSPEC_BS_INDEX;
  specs[0].bs.index.pos = 1;
  if (keynum) {
    specs[0].find_keys_type = REDISMODULE_KSPEC_FK_KEYNUM;
    specs[0].fk.keynum.keynumidx = 0;
    specs[0].fk.keynum.firstkey = 1;
    specs[0].fk.keynum.keystep = 1;
  } else {
    specs[0].find_keys_type = REDISMODULE_KSPEC_FK_RANGE;
    specs[0].fk.range.lastkey = 0;
    specs[0].fk.range.keystep = 1;
    specs[0].fk.range.limit = 0;
  }
  info.key_specs = specs;
  return RedisModule_SetCommandInfo(cmd, &info);
}

struct command_def {
  const char* name;
  RedisModuleCmdFunc fn;
  const char* flags;
  const char* summary;
  int arity;
  bool keynum;
  bool writes;
};

}  // namespace
}  // namespace sluice::redis_module

extern "C" __attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx* ctx, RedisModuleString**,
                                                                         int) {
  using namespace sluice::redis_module;
  if (RedisModule_Init(ctx, "sluice", module_version, REDISMODULE_APIVER_1) == REDISMODULE_ERR) return REDISMODULE_ERR;
  if (RedisModule_SetCommandInfo == nullptr || RedisModule_SetAbsExpire == nullptr ||
      RedisModule_GetAbsExpire == nullptr) {
    RedisModule_Log(ctx, "warning", "sluice: needs Redis 7.0 or later (SetCommandInfo, SetAbsExpire)");
    return REDISMODULE_ERR;
  }
  pxat = RedisModule_CreateString(nullptr, "PXAT", 4);
  const command_def defs[] = {
      {"sluice.one", sluice_command<entry::one>, "write deny-oom fast",
       "Decides one check as the Lua library's _one function", -3, true, true},
      {"sluice.decide", sluice_command<entry::decide>, "write deny-oom",
       "Decides a request as the Lua library's _decide function", -3, true, true},
      {"sluice.peek", sluice_command<entry::peek>, "readonly",
       "Answers a request without consuming, as the Lua library's _peek function", -3, true, false},
      {"sluice.report", sluice_command<entry::report>, "write deny-oom",
       "Charges a request as the Lua library's _report function", -3, true, true},
      {"sluice.release", sluice_command<entry::release>, "write deny-oom",
       "Releases a lease as the Lua library's _release function", -3, true, true},
      {"sluice.refund", sluice_command<entry::refund>, "write deny-oom",
       "Writes a refund once as the Lua library's _refund function", -3, true, true},
      {"sluice.refund_read", sluice_command<entry::refund_read>, "readonly",
       "Reads a refund's keys as the Lua library's _refund_read function", -2, true, false},
      {"sluice.cas", sluice_command<entry::cas>, "write deny-oom",
       "Compares and sets as the Lua library's _cas function", -6, true, true},
      {"sluice.info", info_command, "readonly fast", "What the loaded module decides (its version and leaf letters)", 1,
       true, false},
      {"cl.throttle", throttle_command, "write deny-oom fast", "redis-cell's CL.THROTTLE, decided by sluice's GCRA", -5,
       false, true},
  };
  for (const command_def& d : defs) {
    const int first = d.keynum ? 0 : 1;  // keynum: declared by key specs only
    if (RedisModule_CreateCommand(ctx, d.name, d.fn, d.flags, first, first, first) == REDISMODULE_ERR)
      return REDISMODULE_ERR;
    if (describe(ctx, d.name, d.summary, d.arity, d.keynum, d.writes) == REDISMODULE_ERR) return REDISMODULE_ERR;
  }
  return REDISMODULE_OK;
}
