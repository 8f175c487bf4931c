// sync_client: the backend interface over an async backend on its own I/O
// thread; each call waits on a future for its completion (sync_client.hpp).
#include "redis/sync_client.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <future>
#include <thread>

#include "redis/resp.hpp"

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

sync_client::sync_client(std::unique_ptr<io> loop, std::shared_ptr<async_backend> b, factory make)
    : io_(std::move(loop)), backend_(std::move(b)), make_(std::move(make)) {}

sync_client::~sync_client() {
  backend_->close();
  io_->work.reset();
  if (io_->thread.joinable()) io_->thread.join();
  backend_.reset();
}

result<std::unique_ptr<sync_client>> sync_client::open(async_client_options options) {
  return open([o = std::move(options)](asio::any_io_executor ex) -> result<std::shared_ptr<async_backend>> {
    auto c = async_client::create(std::move(ex), o);
    if (!c) return c.err();
    return std::shared_ptr<async_backend>(std::move(c).value());
  });
}

result<std::unique_ptr<sync_client>> sync_client::open(const factory& make) {
  auto loop = std::make_unique<io>();
  auto b = make(loop->ctx.get_executor());
  if (!b) return b.err();
  return std::unique_ptr<sync_client>(new sync_client(std::move(loop), std::move(b).value(), make));
}

result<bool> sync_client::set_library(std::string name, std::string code) {
  return backend_->set_library(std::move(name), std::move(code));
}

result<std::shared_ptr<async_backend>> sync_client::make_on(asio::any_io_executor ex) const {
  return make_(std::move(ex));
}

call_result sync_client::call(std::span<const std::string_view> argv) {
  std::promise<call_result> p;
  auto f = p.get_future();
  backend_->async_call(argv, [&p](call_result r) { p.set_value(std::move(r)); });
  return f.get();
}

std::vector<call_result> sync_client::fcall_each(std::span<const function_call> calls) {
  std::promise<std::vector<call_result>> p;
  auto f = p.get_future();
  backend_->async_fcall_each(calls, [&p](std::vector<call_result> r) { p.set_value(std::move(r)); });
  return f.get();
}

call_result sync_client::fcall(const function_call& fc) {
  auto v = fcall_each(std::span(&fc, 1));
  call_result& r = v[0];
  if (auto* rep = std::get_if<reply>(&r); rep != nullptr && rep->is_error()) return server_error(std::move(rep->str));
  return std::move(r);
}

std::optional<std::uint64_t> sync_client::count_keys() {
  std::promise<std::optional<std::uint64_t>> p;
  auto f = p.get_future();
  backend_->async_count_keys([&p](std::optional<std::uint64_t> n) { p.set_value(n); });
  return f.get();
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
  std::promise<std::optional<std::vector<std::string>>> p;
  auto f = p.get_future();
  backend_->async_scan(std::move(match), most,
                       [&p](std::optional<std::vector<std::string>> keys) { p.set_value(std::move(keys)); });
  return f.get();
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

result<std::unique_ptr<sync_client>> open_async_backend(const redis_store_options& options, url where) {
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
