// client: connections from a free list, hiredis calls, strict reply
// decoding, reconnect with backoff, and the FUNCTION/EVALSHA library path.
#include "redis/client.hpp"

#include "redis/resp.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <signal.h>
#include <sys/time.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <mutex>
#include <utility>

namespace sluice::redis {

// ---------------------------------------------------------------- reply

std::optional<std::int64_t> reply::as_integer() const noexcept {
  if (kind != type::integer) return std::nullopt;
  return integer;
}
std::optional<std::string_view> reply::as_string() const noexcept {
  if (kind != type::string) return std::nullopt;
  return std::string_view(str);
}
std::optional<std::string_view> reply::as_status() const noexcept {
  if (kind != type::status) return std::nullopt;
  return std::string_view(str);
}
std::optional<std::string_view> reply::as_error() const noexcept {
  if (kind != type::error) return std::nullopt;
  return std::string_view(str);
}
const std::vector<reply>* reply::as_array() const noexcept { return kind == type::array ? &elements : nullptr; }

reply reply::make_integer(std::int64_t v) {
  reply r;
  r.kind = type::integer;
  r.integer = v;
  return r;
}
reply reply::make_string(std::string s) {
  reply r;
  r.kind = type::string;
  r.str = std::move(s);
  return r;
}
reply reply::make_status(std::string s) {
  reply r;
  r.kind = type::status;
  r.str = std::move(s);
  return r;
}
reply reply::make_error(std::string s) {
  reply r;
  r.kind = type::error;
  r.str = std::move(s);
  return r;
}
reply reply::make_array(std::vector<reply> v) {
  reply r;
  r.kind = type::array;
  r.elements = std::move(v);
  return r;
}

std::string_view call_error::name(kind_t k) noexcept {
  switch (k) {
    case timeout:
      return "timeout";
    case io:
      return "io";
    case refused:
      return "refused";
    case auth:
      return "auth";
    case server:
      return "server";
    case protocol:
      return "protocol";
    case breaker:
      return "breaker";
  }
  return "?";
}

std::string call_error::what() const { return std::string(name(kind)) + ": " + message; }

// ---------------------------------------------------------------- connection

/// One hiredis context; not thread-safe (a `client` lends it to one thread at a time).
class connection {
 public:
  connection() = default;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() { drop(); }

  void drop() noexcept {
    if (ctx_ != nullptr) redisFree(ctx_);
    ctx_ = nullptr;
  }

  redisContext* ctx_ = nullptr;
  std::string out_;  // the RESP of the commands being sent
};

namespace {

using steady = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count();
}

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

bool errstr_is(const redisContext* c, int code) { return std::strcmp(c->errstr, std::strerror(code)) == 0; }

// The error of a failed hiredis call on `c`. `connecting`: while establishing
// the connection (nothing of the caller's was sent); `sent`: after the
// caller's command was handed to the socket.
call_error from_context(const redisContext* c, std::string_view where, bool connecting) {
  call_error e;
  e.maybe_applied = !connecting;
  const std::string text = std::string(where) + ": " + c->errstr;
  switch (c->err) {
    case REDIS_ERR_IO:
      if (errstr_is(c, EAGAIN) || errstr_is(c, EWOULDBLOCK) || errstr_is(c, ETIMEDOUT) || errstr_is(c, EINPROGRESS)) {
        e.kind = call_error::timeout;
        e.message = text + (connecting ? " (connect timeout)" : " (no reply within the command timeout)");
      } else if (connecting) {
        e.kind = call_error::refused;
        e.message = text;
      } else {
        e.kind = call_error::io;
        e.message = text;
      }
      break;
    case REDIS_ERR_EOF:
      e.kind = call_error::io;
      e.message = text;
      break;
    case REDIS_ERR_PROTOCOL:
      e.kind = call_error::protocol;
      e.message = text;
      break;
    default:  // REDIS_ERR_OTHER (e.g. cannot resolve), REDIS_ERR_OOM
      e.kind = connecting ? call_error::refused : call_error::io;
      e.message = text;
      break;
  }
  return e;
}

bool append_formatted(redisContext* c, const std::string& buf) {
  return redisAppendFormattedCommand(c, buf.data(), buf.size()) == REDIS_OK;
}

// Reads one reply; nullopt with the context's error on failure. A reply
// hiredis cannot represent is a protocol error.
std::variant<reply, call_error> read_reply(connection& c, std::string_view where) {
  void* raw = nullptr;
  if (redisGetReply(c.ctx_, &raw) != REDIS_OK || raw == nullptr) {
    call_error e = from_context(c.ctx_, where, false);
    c.drop();
    return e;
  }
  reply out;
  const bool ok = convert_reply(static_cast<redisReply*>(raw), out);
  freeReplyObject(raw);
  if (!ok) {
    c.drop();
    return call_error{call_error::protocol, std::string(where) + ": a reply of an unknown RESP type", true};
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- client

struct client::library {
  std::string name;
  std::string code;    // the FUNCTION library
  std::string script;  // its EVAL form
  mutable std::mutex sha_mu;
  mutable std::string sha;  // SHA1 of `script` once SCRIPT LOAD answered; requires sha_mu
};

struct client::lease {
  client* owner = nullptr;
  std::unique_ptr<connection> conn;
  lease() = default;
  lease(client* o, std::unique_ptr<connection> c) : owner(o), conn(std::move(c)) {}
  lease(lease&& other) noexcept : owner(other.owner), conn(std::move(other.conn)) {}
  lease& operator=(lease&&) = delete;
  ~lease() {
    if (conn) owner->release(std::move(conn));
  }
};

client::client(client_options options) : options_(std::move(options)) {
  if (options_.ignore_sigpipe) {
    static std::once_flag once;
    std::call_once(once, [] {
      struct sigaction old {};
      if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && (old.sa_flags & SA_SIGINFO) == 0) {
        struct sigaction ign {};
        ign.sa_handler = SIG_IGN;
        ::sigemptyset(&ign.sa_mask);
        ::sigaction(SIGPIPE, &ign, nullptr);
      }
    });
  }
}

client::~client() = default;

client::lease client::acquire(call_error& err) {
  std::unique_lock lock(pool_mu_);
  if (free_.empty() && (options_.pool_size == 0 || open_ < options_.pool_size)) {
    ++open_;
    return lease(this, std::make_unique<connection>());
  }
  if (free_.empty()) {
    const bool got = pool_cv_.wait_for(lock, options_.command_timeout, [&] { return !free_.empty(); });
    if (!got) {
      err = call_error{
          call_error::timeout,
          "no free connection within the command timeout (pool of " + std::to_string(options_.pool_size) + ")", false};
      return lease();
    }
  }
  auto c = std::move(free_.back());
  free_.pop_back();
  return lease(this, std::move(c));
}

void client::release(std::unique_ptr<connection> c) {
  {
    std::lock_guard lock(pool_mu_);
    free_.push_back(std::move(c));
  }
  pool_cv_.notify_one();
}

void client::note_connect_failure() {
  connect_failures_.fetch_add(1, std::memory_order_relaxed);
  const std::int64_t first = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.reconnect_backoff).count();
  const std::int64_t most =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.reconnect_backoff_max).count();
  std::int64_t b = backoff_ns_.load(std::memory_order_relaxed);
  b = b == 0 ? first : std::min(most, b * 2);
  backoff_ns_.store(b, std::memory_order_relaxed);
  down_until_ns_.store(now_ns() + b, std::memory_order_release);
}

bool client::ensure_connected(connection& c, call_error& err) {
  if (c.ctx_ != nullptr) {
    // A connection that is readable while idle holds an EOF (the server
    // closed it: CLIENT KILL, timeout, restart) or junk: replace it before
    // sending, so a command is never written into a dead socket.
    pollfd p{c.ctx_->fd, POLLIN, 0};
    if (c.ctx_->err == 0 && ::poll(&p, 1, 0) == 0) return true;
    c.drop();
    broken_.fetch_add(1, std::memory_order_relaxed);
  }
  if (now_ns() < down_until_ns_.load(std::memory_order_acquire)) {
    std::lock_guard lock(down_mu_);
    err = call_error{static_cast<call_error::kind_t>(down_kind_.load(std::memory_order_relaxed)),
                     down_message_ + " (backing off before reconnecting)", false};
    return false;
  }
  const url& u = options_.where;
  const std::string where = u.redacted();
  const timeval ct = to_timeval(options_.connect_timeout);
  redisContext* ctx = u.is_unix() ? redisConnectUnixWithTimeout(u.socket_path.c_str(), ct)
                                  : redisConnectWithTimeout(u.host.c_str(), u.port, ct);
  auto fail = [&](call_error e) {
    if (ctx != nullptr) redisFree(ctx);
    {
      std::lock_guard lock(down_mu_);
      down_message_ = e.message;
    }
    down_kind_.store(e.kind, std::memory_order_relaxed);
    note_connect_failure();
    err = std::move(e);
    return false;
  };
  if (ctx == nullptr) return fail(call_error{call_error::io, where + ": out of memory", false});
  if (ctx->err != 0) return fail(from_context(ctx, where, true));
  if (redisSetTimeout(ctx, to_timeval(options_.command_timeout)) != REDIS_OK)
    return fail(from_context(ctx, where, true));
  if (options_.keepalive && !u.is_unix() && redisEnableKeepAlive(ctx) != REDIS_OK)
    return fail(from_context(ctx, where, true));

  // AUTH and SELECT in one round trip.
  std::vector<std::vector<std::string_view>> setup;
  const std::string db = std::to_string(u.db);
  if (!u.user.empty())
    setup.push_back({"AUTH", u.user, u.password});
  else if (!u.password.empty())
    setup.push_back({"AUTH", u.password});
  if (u.db != 0) setup.push_back({"SELECT", db});
  std::string buf;
  for (const auto& cmd : setup) format_command(buf, cmd);
  if (!setup.empty() && !append_formatted(ctx, buf)) return fail(from_context(ctx, where, true));
  for (const auto& cmd : setup) {
    connection tmp;
    tmp.ctx_ = ctx;
    auto r = read_reply(tmp, where);
    if (tmp.ctx_ == nullptr) ctx = nullptr;  // read_reply dropped it
    tmp.ctx_ = nullptr;
    if (auto* e = std::get_if<call_error>(&r)) {
      e->maybe_applied = false;
      return fail(std::move(*e));
    }
    const reply& rep = std::get<reply>(r);
    if (rep.is_error()) {
      call_error e = server_error(where + ": " + std::string(cmd[0]) + " failed: " + rep.str);
      if (cmd[0] == "AUTH") e.kind = call_error::auth;
      return fail(std::move(e));
    }
  }
  c.ctx_ = ctx;
  backoff_ns_.store(0, std::memory_order_relaxed);
  connects_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

call_result client::call(std::initializer_list<std::string_view> argv) {
  return call(std::span<const std::string_view>(argv.begin(), argv.size()));
}

call_result client::call(std::span<const std::string_view> argv) {
  if (argv.empty()) return call_error{call_error::protocol, "an empty command", false};
  call_error err;
  lease l = acquire(err);
  if (!l.conn) return err;
  if (!ensure_connected(*l.conn, err)) return err;
  connection& c = *l.conn;
  c.out_.clear();
  format_command(c.out_, argv);
  if (!append_formatted(c.ctx_, c.out_)) {
    err = from_context(c.ctx_, options_.where.redacted(), false);
    c.drop();
    broken_.fetch_add(1, std::memory_order_relaxed);
    return err;
  }
  auto r = read_reply(c, options_.where.redacted());
  if (auto* e = std::get_if<call_error>(&r)) {
    broken_.fetch_add(1, std::memory_order_relaxed);
    return std::move(*e);
  }
  reply& rep = std::get<reply>(r);
  if (rep.is_error()) return server_error(std::move(rep.str));
  return std::move(rep);
}

std::optional<call_error> client::write_batch(connection& c, std::span<const std::vector<std::string_view>> cmds) {
  c.out_.clear();
  for (const auto& cmd : cmds) format_command(c.out_, cmd);
  // Appended, then written out now (hiredis would write only when a reply is
  // read): a caller may write to several servers before reading any. A
  // blocking write either makes progress or fails (SO_SNDTIMEO), so the
  // loop ends; the count is a second bound.
  bool ok = append_formatted(c.ctx_, c.out_);
  int done = 0;
  for (int i = 0; ok && done == 0 && i < 1'000'000; ++i) ok = redisBufferWrite(c.ctx_, &done) == REDIS_OK;
  if (ok && done != 0) return std::nullopt;
  call_error e = ok ? call_error{call_error::timeout, options_.where.redacted() + ": the write did not end", true}
                    : from_context(c.ctx_, options_.where.redacted(), false);
  c.drop();
  broken_.fetch_add(1, std::memory_order_relaxed);
  return e;
}

batch_result client::read_batch(connection& c, std::size_t count, bool asking) {
  const std::string where = options_.where.redacted();
  std::vector<reply> out;
  out.reserve(count);
  // With `asking`, each call's reply follows the +OK of its ASKING.
  const std::size_t replies = asking ? 2 * count : count;
  for (std::size_t i = 0; i < replies; ++i) {
    auto r = read_reply(c, where);
    if (auto* e = std::get_if<call_error>(&r)) {
      broken_.fetch_add(1, std::memory_order_relaxed);
      e->message += " (after " + std::to_string(i) + " of " + std::to_string(replies) + " replies)";
      return std::move(*e);
    }
    if (!asking || i % 2 == 1) out.push_back(std::move(std::get<reply>(r)));
  }
  return out;
}

std::optional<std::uint64_t> client::count_keys() {
  const auto res = call({"DBSIZE"});
  const auto* rep = std::get_if<reply>(&res);
  if (rep == nullptr || !rep->as_integer() || *rep->as_integer() < 0) return std::nullopt;
  return static_cast<std::uint64_t>(*rep->as_integer());
}

batch_result client::run_batch(connection& c, std::span<const std::vector<std::string_view>> cmds) {
  if (auto e = write_batch(c, cmds)) return std::move(*e);
  return read_batch(c, cmds.size(), false);
}

batch_result client::pipeline(std::span<const std::vector<std::string_view>> commands) {
  if (commands.empty()) return std::vector<reply>{};
  for (const auto& cmd : commands)
    if (cmd.empty()) return call_error{call_error::protocol, "an empty command in a pipeline", false};
  call_error err;
  lease l = acquire(err);
  if (!l.conn) return err;
  if (!ensure_connected(*l.conn, err)) return err;
  return run_batch(*l.conn, commands);
}

// ---------------------------------------------------------------- library

result<bool> client::set_library(std::string name, std::string code) {
  if (auto ok = check_library(name, code); !ok) return ok;
  auto lib = std::make_shared<library>();
  lib->name = std::move(name);
  lib->script = script_form(code);
  lib->code = std::move(code);
  std::lock_guard lock(lib_mu_);
  lib_ = std::move(lib);
  return true;
}

std::shared_ptr<const client::library> client::current_library() const {
  std::lock_guard lock(lib_mu_);
  return lib_;
}

library_mode client::mode() const noexcept {
  return script_mode_.load(std::memory_order_relaxed) ? library_mode::script : library_mode::function;
}

client_stats client::stats() const noexcept {
  return client_stats{connects_.load(std::memory_order_relaxed), connect_failures_.load(std::memory_order_relaxed),
                      broken_.load(std::memory_order_relaxed), library_loads_.load(std::memory_order_relaxed),
                      script_loads_.load(std::memory_order_relaxed)};
}

std::optional<call_error> client::load_library(connection& c, const library& lib) {
  const std::string where = options_.where.redacted();
  if (!script_mode_.load(std::memory_order_relaxed)) {
    library_loads_.fetch_add(1, std::memory_order_relaxed);
    const std::vector<std::string_view> cmd{"FUNCTION", "LOAD", "REPLACE", lib.code};
    auto r = run_batch(c, std::span(&cmd, 1));
    if (auto* e = std::get_if<call_error>(&r)) return std::move(*e);
    const reply& rep = std::get<std::vector<reply>>(r)[0];
    if (!rep.is_error()) return std::nullopt;
    if (!is_function_refused(rep.str))
      return call_error{call_error::server, "FUNCTION LOAD of library " + lib.name + ": " + rep.str, false};
    script_mode_.store(true, std::memory_order_relaxed);  // refused: run it as a script from now on
  }
  script_loads_.fetch_add(1, std::memory_order_relaxed);
  const std::vector<std::string_view> cmd{"SCRIPT", "LOAD", lib.script};
  auto r = run_batch(c, std::span(&cmd, 1));
  if (auto* e = std::get_if<call_error>(&r)) return std::move(*e);
  const reply& rep = std::get<std::vector<reply>>(r)[0];
  if (rep.is_error())
    return call_error{call_error::server, "SCRIPT LOAD of library " + lib.name + ": " + rep.str, false};
  if (!rep.as_string() || rep.str.size() != 40)
    return call_error{call_error::protocol, "SCRIPT LOAD answered without a SHA1", false};
  std::lock_guard lock(lib.sha_mu);
  lib.sha = rep.str;
  return std::nullopt;
}

call_result client::fcall(const function_call& fc) {
  auto r = fcall_pipeline(std::span(&fc, 1));
  if (auto* e = std::get_if<call_error>(&r)) return std::move(*e);
  reply& rep = std::get<std::vector<reply>>(r)[0];
  if (rep.is_error()) return server_error(std::move(rep.str));
  return std::move(rep);
}

/// One batch of FCALLs between send_fcalls and receive_fcalls.
struct client::batch_state {
  explicit batch_state(lease held) : l(std::move(held)) {}
  batch_state(const batch_state&) = delete;
  batch_state& operator=(const batch_state&) = delete;
  ~batch_state() {
    // Replies still unread would be read by the connection's next user.
    if (in_flight && l.conn) l.conn->drop();
  }

  lease l;
  std::span<const function_call> calls;
  std::shared_ptr<const library> lib;
  bool asking = false;
  std::optional<call_error> failed;  // the batch could not be sent
  std::vector<std::string> num_keys;
  std::vector<std::size_t> pending;  // the calls of the round in flight
  std::string sha;                   // the script's SHA1 in script mode
  bool script = false;               // the round in flight runs EVALSHA
  bool loaded = false;               // the library was loaded once for this batch
  bool in_flight = false;            // a round was written and not read
};

client::sent_fcalls::sent_fcalls(std::unique_ptr<batch_state> s) : s_(std::move(s)) {}
client::sent_fcalls::sent_fcalls(sent_fcalls&&) noexcept = default;
client::sent_fcalls& client::sent_fcalls::operator=(sent_fcalls&&) noexcept = default;
client::sent_fcalls::~sent_fcalls() = default;

std::optional<call_error> client::send_round(batch_state& s) {
  connection& c = *s.l.conn;
  s.script = script_mode_.load(std::memory_order_relaxed);
  if (s.script) {
    {
      std::lock_guard lock(s.lib->sha_mu);
      s.sha = s.lib->sha;
    }
    if (s.sha.empty()) {
      if (auto e = load_library(c, *s.lib)) return e;
      s.loaded = true;
      std::lock_guard lock(s.lib->sha_mu);
      s.sha = s.lib->sha;
    }
  }
  std::vector<std::vector<std::string_view>> cmds;
  cmds.reserve(s.pending.size() * (s.asking ? 2 : 1));
  for (std::size_t i : s.pending) {
    const function_call& fc = s.calls[i];
    if (s.asking) cmds.push_back({"ASKING"});
    std::vector<std::string_view> cmd;
    cmd.reserve(fc.keys_then_args.size() + 4);
    if (s.script) {
      cmd.insert(cmd.end(), {"EVALSHA", s.sha, s.num_keys[i]});
      const auto keys = fc.keys_then_args.subspan(0, fc.num_keys);
      cmd.insert(cmd.end(), keys.begin(), keys.end());
      cmd.push_back(fc.function);
      const auto args = fc.keys_then_args.subspan(fc.num_keys);
      cmd.insert(cmd.end(), args.begin(), args.end());
    } else {
      cmd.insert(cmd.end(), {"FCALL", fc.function, s.num_keys[i]});
      cmd.insert(cmd.end(), fc.keys_then_args.begin(), fc.keys_then_args.end());
    }
    cmds.push_back(std::move(cmd));
  }
  if (auto e = write_batch(c, cmds)) return e;
  s.in_flight = true;
  return std::nullopt;
}

client::sent_fcalls client::send_fcalls(std::span<const function_call> calls, bool asking) {
  auto fail = [](call_error e) {
    auto s = std::make_unique<batch_state>(lease());
    s->failed = std::move(e);
    return sent_fcalls(std::move(s));
  };
  if (calls.empty()) return sent_fcalls(std::make_unique<batch_state>(lease()));
  auto lib = current_library();
  if (!lib) return fail(call_error{call_error::protocol, "fcall before set_library", false});
  for (const function_call& fc : calls)
    if (fc.num_keys > fc.keys_then_args.size())
      return fail(call_error{call_error::protocol, "function_call: num_keys exceeds keys_then_args", false});
  call_error err;
  lease l = acquire(err);
  if (!l.conn) return fail(std::move(err));
  if (!ensure_connected(*l.conn, err)) return fail(std::move(err));
  auto s = std::make_unique<batch_state>(std::move(l));
  s->calls = calls;
  s->lib = std::move(lib);
  s->asking = asking;
  s->num_keys.reserve(calls.size());
  s->pending.reserve(calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    s->num_keys.push_back(std::to_string(calls[i].num_keys));
    s->pending.push_back(i);
  }
  if (auto e = send_round(*s)) s->failed = std::move(e);
  return sent_fcalls(std::move(s));
}

batch_result client::receive_fcalls(sent_fcalls sent) {
  batch_state& s = *sent.s_;
  if (s.failed) return std::move(*s.failed);
  if (s.calls.empty()) return std::vector<reply>{};
  connection& c = *s.l.conn;
  std::vector<reply> out(s.calls.size());
  // Round 1 was sent by send_fcalls; a later round re-sends only the calls
  // that met a missing library, once it is loaded (they did not run).
  for (int round = 0;; ++round) {
    auto r = read_batch(c, s.pending.size(), s.asking);
    s.in_flight = false;
    if (auto* e = std::get_if<call_error>(&r)) return std::move(*e);
    auto& replies = std::get<std::vector<reply>>(r);
    std::vector<std::size_t> again;
    bool need_load = false;
    bool refused = false;
    for (std::size_t j = 0; j < s.pending.size(); ++j) {
      reply& rep = replies[j];
      if (rep.is_error()) {
        const bool missing = s.script ? is_noscript(rep.str) : is_function_missing(rep.str);
        const bool refused_here = !s.script && is_function_refused(rep.str);
        if (missing || refused_here) {
          need_load = need_load || missing;
          refused = refused || refused_here;
          again.push_back(s.pending[j]);
        }
      }
      out[s.pending[j]] = std::move(rep);
    }
    if (again.empty() || round >= 2) break;
    if (refused && !s.script) {
      script_mode_.store(true, std::memory_order_relaxed);
      std::lock_guard lock(s.lib->sha_mu);
      s.lib->sha.clear();  // load it as a script before the next round
    } else if (need_load) {
      if (s.loaded) break;  // once per batch: leave the error replies in place
      if (auto e = load_library(c, *s.lib)) return std::move(*e);
      s.loaded = true;
    }
    s.pending = std::move(again);
    if (auto e = send_round(s)) return std::move(*e);
  }
  return out;
}

batch_result client::fcall_pipeline(std::span<const function_call> calls) {
  return receive_fcalls(send_fcalls(calls, false));
}

std::vector<call_result> client::fcall_each(std::span<const function_call> calls) {
  auto r = fcall_pipeline(calls);
  std::vector<call_result> out;
  out.reserve(calls.size());
  if (auto* e = std::get_if<call_error>(&r)) {
    for (std::size_t i = 0; i < calls.size(); ++i) out.emplace_back(*e);
    return out;
  }
  for (auto& rep : std::get<std::vector<reply>>(r)) out.emplace_back(std::move(rep));
  return out;
}

}  // namespace sluice::redis
