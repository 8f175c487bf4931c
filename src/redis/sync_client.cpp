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

sync_client::sync_client(std::unique_ptr<io> loop, std::shared_ptr<async_backend> b)
    : io_(std::move(loop)), backend_(std::move(b)) {}

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
  return std::unique_ptr<sync_client>(new sync_client(std::move(loop), std::move(b).value()));
}

result<bool> sync_client::set_library(std::string name, std::string code) {
  return backend_->set_library(std::move(name), std::move(code));
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
