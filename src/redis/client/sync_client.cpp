// sync_client: the backend interface over an async backend; a call waits
// on a connection its caller drives (one server) or on the I/O thread's
// answer (sync_client.hpp).
#include "redis/client/sync_client.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <future>
#include <string>
#include <thread>

#include "redis/client/resp.hpp"
#include "redis/client/tls.hpp"

namespace sluice::redis {

namespace asio = boost::asio;

struct sync_client::io {
  asio::io_context ctx{1};
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ctx);
  std::thread thread;
  io() : thread([this] { ctx.run(); }) {}
  io(const io&) = delete;
  io& operator=(const io&) = delete;
  ~io() {
    work.reset();
    if (thread.joinable()) thread.join();
  }
};

/// A connection driven by the thread that calls on it: its client's
/// handlers run only while that thread runs `ctx`, so nothing is handed
/// between threads. Idle, it waits in the sync_client's pool.
struct sync_client::caller_connection {
  asio::io_context ctx{1};
  std::shared_ptr<async_client> c;
  std::chrono::steady_clock::time_point idle_since{};  // when it was last handed back
  caller_connection() = default;
  caller_connection(const caller_connection&) = delete;
  caller_connection& operator=(const caller_connection&) = delete;
  ~caller_connection() {
    if (!c) return;
    c->close();
    c.reset();
    // The close, and the aborted reads and timers it leaves, run here, so
    // the client and its socket go before the context they belong to.
    ctx.restart();
    ctx.run_for(std::chrono::seconds(1));
  }
};

sync_client::sync_client(std::unique_ptr<io> loop, std::shared_ptr<async_backend> b, factory make)
    : io_(std::move(loop)), backend_(std::move(b)), make_(std::move(make)) {}

sync_client::~sync_client() {
  {
    std::lock_guard lock(mu_);
    made_.clear();
    idle_.clear();  // no call is in flight: every caller connection is idle
  }
  backend_->close();
  io_->work.reset();
  if (io_->thread.joinable()) io_->thread.join();
  backend_.reset();
  if (wake_ >= 0) ::close(wake_);
}

void sync_client::close() {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    // Each caller connection's close is posted to its own context: a lent
    // one's caller runs it once woken, an idle one's when it is dropped.
    for (async_client* c : made_) c->close();
  }
  if (wake_ >= 0) (void)::eventfd_write(wake_, 1);  // stays readable: every later wait wakes at once too
  backend_->close();
}

result<std::unique_ptr<sync_client>> sync_client::open(async_client_options options) {
  // One TLS context (its CA and certificate files read once) for every
  // connection: the I/O thread's, the callers', each loop's.
  if (options.where.tls.on && !options.tls) {
    auto made = tls_context::make(options.where.tls);
    if (!made) return made.err();
    options.tls = std::move(made).value();
  }
  if (!options.module) options.module = std::make_shared<module_state>();  // one path for every connection
  auto c = open([o = options](asio::any_io_executor ex) -> result<std::shared_ptr<async_backend>> {
    auto made = async_client::create(std::move(ex), o);
    if (!made) return made.err();
    return std::shared_ptr<async_backend>(std::move(made).value());
  });
  if (!c) return c.err();
  auto s = std::move(c).value();
  options.caller_driven = true;
  s->wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->wake_ < 0) return error{"redis", std::string("eventfd: ") + std::strerror(errno)};
  options.wake_fd = s->wake_;
  s->direct_ = std::move(options);
  return s;
}

result<std::unique_ptr<sync_client>> sync_client::open(const factory& make) {
  auto loop = std::make_unique<io>();
  auto b = make(loop->ctx.get_executor());
  if (!b) return b.err();
  return std::unique_ptr<sync_client>(new sync_client(std::move(loop), std::move(b).value(), make));
}

namespace {

/// Gives `b` the library set on its sync_client, if one is.
result<bool> give_library(async_backend& b, const std::optional<std::pair<std::string, std::string>>& lib) {
  if (!lib) return true;
  return b.set_library(lib->first, lib->second);
}

}  // namespace

result<bool> sync_client::set_library(std::string name, std::string code) {
  auto ok = backend_->set_library(name, code);
  if (!ok) return ok;
  std::lock_guard lock(mu_);
  for (async_client* c : made_) (void)c->set_library(name, code);  // checked above
  library_.emplace(std::move(name), std::move(code));
  return true;
}

std::unique_ptr<sync_client::caller_connection> sync_client::take_connection() {
  std::lock_guard lock(mu_);
  if (closed_) return nullptr;  // the closed backend fails the call at once
  if (!idle_.empty()) {
    auto c = std::move(idle_.back());  // the most recently used: its connection is likeliest open
    idle_.pop_back();
    return c;
  }
  auto conn = std::make_unique<caller_connection>();
  auto made = async_client::create(conn->ctx.get_executor(), *direct_);
  if (!made) return nullptr;  // cannot happen after open made one; the I/O thread answers then
  conn->c = std::move(made).value();
  (void)give_library(*conn->c, library_);  // checked by set_library
  made_.push_back(conn->c.get());
  return conn;
}

void sync_client::give_back(std::unique_ptr<caller_connection> c) {
  std::vector<std::unique_ptr<caller_connection>> aged;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    c->idle_since = now;
    if (const auto limit = direct_->caller_idle_close; limit.count() > 0) {
      // The pool is a stack (take_connection takes the most recent), so
      // its front has been idle longest: the aged ones are a prefix.
      std::size_t n = 0;
      while (n < idle_.size() && now - idle_[n]->idle_since >= limit) {
        retire(*idle_[n]);
        aged.push_back(std::move(idle_[n]));
        ++n;
      }
      idle_.erase(idle_.begin(), idle_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    if (closed_) {
      retire(*c);  // a closed client keeps no connection
      aged.push_back(std::move(c));
    } else {
      idle_.push_back(std::move(c));
    }
  }
  aged.clear();  // closed outside the lock: each runs its own context to close
}

void sync_client::forget(std::unique_ptr<caller_connection> c) {
  {
    std::lock_guard lock(mu_);
    retire(*c);
  }
  c.reset();
}

void sync_client::retire(const caller_connection& c) {
  retired_ += c.c->stats();
  retired_script_ = retired_script_ || c.c->mode() == library_mode::script;
  std::erase(made_, c.c.get());
}

template <class T, class Start, class Lost>
T sync_client::wait(Start&& start, Lost&& lost) {
  auto conn = direct_ ? take_connection() : nullptr;
  if (!conn) {
    std::promise<T> p;
    auto f = p.get_future();
    start(*backend_, [&p](T r) { p.set_value(std::move(r)); });
    return f.get();
  }
  std::optional<T> out;
  asio::io_context& ctx = conn->ctx;
  ctx.restart();  // a run that found no work at all left the context stopped
  if (!conn->c->caller_idle()) {
    ctx.poll();  // what came while it was idle (a server's EOF: the call goes on a new connection)
    ctx.restart();
  }
  try {
    start(*conn->c, [&out](T r) { out.emplace(std::move(r)); });
    while (!out) {
      if (conn->c->caller_wait()) continue;  // the socket was waited on and read
      if (ctx.run_one() == 0) break;
    }
  } catch (...) {
    forget(std::move(conn));  // its calls are failed while `out` still lives; the pool never sees it again
    throw;
  }
  give_back(std::move(conn));
  if (!out) return lost();  // run out of work unanswered: a handler was dropped
  return std::move(*out);
}

std::optional<async_stats> sync_client::stats() const {
  const auto* main = dynamic_cast<const async_client*>(backend_.get());
  if (main == nullptr) return std::nullopt;
  async_stats s = main->stats();
  std::lock_guard lock(mu_);
  s += retired_;
  for (const async_client* c : made_) s += c->stats();
  return s;
}

std::vector<module_path_view> sync_client::module_paths() const {
  return backend_->module_paths();  // one server: its callers' connections share the I/O thread's state
}

std::optional<library_mode> sync_client::mode() const {
  const auto* main = dynamic_cast<const async_client*>(backend_.get());
  if (main == nullptr) return std::nullopt;
  std::lock_guard lock(mu_);
  bool script = retired_script_ || main->mode() == library_mode::script;
  for (const async_client* c : made_) script = script || c->mode() == library_mode::script;
  return script ? library_mode::script : library_mode::function;
}

result<std::shared_ptr<async_backend>> sync_client::make_on(asio::any_io_executor ex) const {
  auto b = make_(std::move(ex));
  if (!b) return b.err();
  // A loop's own connection holds its calls behind the batches in flight
  // (one unless the URL says more), so that the loop's work and the
  // server's overlap (docs/serve.md, "The fleet path").
  if (auto* a = dynamic_cast<async_client*>(b.value().get())) a->hold_batches();
  std::lock_guard lock(mu_);
  if (auto lib = give_library(**b, library_); !lib) return lib.err();
  return std::move(b).value();
}

namespace {

call_error lost_call() { return call_error{call_error::io, "the call was dropped unanswered", true}; }

}  // namespace

call_result sync_client::call(std::span<const std::string_view> argv) {
  return wait<call_result>([&](async_backend& b, auto done) { b.async_call(argv, std::move(done)); },
                           [] { return call_result(lost_call()); });
}

std::vector<call_result> sync_client::fcall_each(std::span<const function_call> calls) {
  return wait<std::vector<call_result>>(
      [&](async_backend& b, auto done) { b.async_fcall_each(calls, std::move(done)); },
      [&] { return std::vector<call_result>(calls.size(), call_result(lost_call())); });
}

call_result sync_client::fcall(const function_call& fc) {
  auto v = fcall_each(std::span(&fc, 1));
  call_result& r = v[0];
  if (auto* rep = std::get_if<reply>(&r); rep != nullptr && rep->is_error()) return server_error(std::move(rep->str));
  return std::move(r);
}

std::optional<std::uint64_t> sync_client::count_keys() {
  return wait<std::optional<std::uint64_t>>([](async_backend& b, auto done) { b.async_count_keys(std::move(done)); },
                                            [] { return std::optional<std::uint64_t>(); });
}

void async_backend::async_count_keys(count_handler done) {
  static constexpr std::string_view dbsize[] = {"DBSIZE"};
  async_call(dbsize, [h = std::move(done)](const call_result& res) {
    const auto* rep = std::get_if<reply>(&res);
    if (rep == nullptr || !rep->as_integer() || *rep->as_integer() < 0) return h(std::nullopt);
    h(static_cast<std::uint64_t>(*rep->as_integer()));
  });
}

std::optional<std::vector<std::string>> sync_client::scan(std::string match, std::size_t most) {
  return wait<std::optional<std::vector<std::string>>>(
      [&](async_backend& b, auto done) { b.async_scan(std::move(match), most, std::move(done)); },
      [] { return std::optional<std::vector<std::string>>(); });
}

std::vector<call_result> sync_client::call_every_primary(std::span<const std::string_view> argv) {
  return wait<std::vector<call_result>>(
      [&](async_backend& b, auto done) { b.async_call_every_primary(argv, std::move(done)); },
      [] { return std::vector<call_result>(); });
}

void async_backend::async_call_every_primary(std::span<const std::string_view> argv, each_handler done) {
  async_call(argv, [h = std::move(done)](call_result res) {
    std::vector<call_result> one;
    one.push_back(std::move(res));
    h(std::move(one));
  });
}

namespace {

/// One SCAN in progress: the cursor's next step until it comes back to 0
/// or enough keys are found.
struct scan_job : std::enable_shared_from_this<scan_job> {
  async_backend* b = nullptr;
  std::string match;
  std::size_t most = 0;
  std::vector<std::string> found;
  keys_handler done;

  void step(const std::string& cursor) {
    const std::string_view argv[] = {"SCAN", cursor, "MATCH", match, "COUNT", "1000"};
    b->async_call(argv, [self = shared_from_this()](const call_result& res) {
      const auto* rep = std::get_if<reply>(&res);
      const auto* arr = rep != nullptr ? rep->as_array() : nullptr;
      if (arr == nullptr || arr->size() != 2 || !(*arr)[0].as_string() || (*arr)[1].as_array() == nullptr)
        return self->done(std::nullopt);
      for (const auto& k : *(*arr)[1].as_array()) {
        const auto s = k.as_string();
        if (!s) return self->done(std::nullopt);
        self->found.emplace_back(*s);
      }
      const std::string next(*(*arr)[0].as_string());
      if (next == "0" || self->found.size() >= self->most) return self->done(std::move(self->found));
      self->step(next);
    });
  }
};

}  // namespace

void async_backend::async_scan(std::string match, std::size_t most, keys_handler done) {
  auto j = std::make_shared<scan_job>();
  j->b = this;
  j->match = std::move(match);
  j->most = most;
  j->done = std::move(done);
  j->step("0");
}

void warn_if_unverified(const url& where) {
  if (!where.tls.on || where.tls.verify) return;
  std::fprintf(stderr,
               "sluice: warning: %s: verify=no: the server's TLS certificate is not checked; anyone on the path "
               "can read and change the traffic\n",
               where.redacted().c_str());
}

result<std::unique_ptr<sync_client>> open_async_backend(const store_options& options, url where) {
  warn_if_unverified(where);
  async_client_options o;
  o.where = std::move(where);
  o.connect_timeout = options.connect_timeout;
  o.command_timeout = options.command_timeout;
  auto c = sync_client::open(std::move(o));
  if (!c) return c.err();
  return std::move(c).value();
}

}  // namespace sluice::redis
