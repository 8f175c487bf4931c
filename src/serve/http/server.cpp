// The HTTP server (server.hpp): Boost.Beast/Asio, one io_context per thread.
// The only translation unit that includes Beast (it costs ~10 s and ~550 MB
// of compiler memory per file).
//
// Boost 1.74 + g++ 12 + -std=c++20: asio/awaitable.hpp uses std::exchange
// without including <utility>, so it comes first.
#include <utility>
// clang-format off
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// clang-format on

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <ostream>
#include <thread>
#include <unordered_set>

#include "framing.hpp"
#include "server.hpp"
#include "target.hpp"

namespace sluice::serve {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

std::string_view sv(beast::string_view s) noexcept { return {s.data(), s.size()}; }

class session;

// One event loop and what lives on it. Touched only from its own thread
// (after run() starts), except `ioc.post`.
struct worker {
  // Declared first, destroyed last: destroying `ioc` destroys the handlers
  // still queued (after a drain timeout), and with them sessions, which
  // erase themselves from this set.
  std::unordered_set<session*> sessions;
  net::io_context ioc{1};
  std::vector<std::pair<std::unique_ptr<tcp::acceptor>, listener_role>> acceptors;
  std::unique_ptr<net::steady_timer> retry_accept;
};

}  // namespace

struct server::impl {
  http_api& api;
  service& svc;
  limits lim;
  server_hooks hooks;
  std::vector<std::unique_ptr<worker>> workers;
  std::vector<bound_address> addrs;
  std::atomic<bool> draining{false};
  std::ostream* log = nullptr;
  tick check_period = 1'000'000'000;  // how often a connection's deadline is checked
  // Whether the store does its I/O on these loops (service::attach_loops).
  bool loops_attached = false;

  impl(http_api& a, limits l, server_hooks h) : api(a), svc(a.svc()), lim(l), hooks(std::move(h)) {
    check_period = std::clamp<tick>(std::min(lim.idle_timeout, lim.request_timeout) / 8, 10'000'000, 1'000'000'000);
  }
  void accept(worker& w, tcp::acceptor& acc, listener_role role);
  // Starts a session on an accepted socket (or closes it past max_connections).
  void admit(worker& w, tcp::socket s, listener_role role);
  void begin_drain();
  // Draining, `w`'s last session ended: the store's connection on `w`
  // goes (detach_loop, idempotent), so that its loop runs out of work and
  // ends. On `w`'s thread, or once no thread runs it.
  void loop_drained(worker& w);
};

namespace {

class session : public std::enable_shared_from_this<session> {
 public:
  session(tcp::socket s, worker& w, server::impl& srv, listener_role role)
      : socket_(std::move(s)), timer_(w.ioc), w_(w), srv_(srv), role_(role) {
    beast::error_code ec;
    const auto ep = socket_.remote_endpoint(ec);
    if (!ec) peer_ = ep.address().to_string();
    srv_.svc.stats().connections.fetch_add(1, std::memory_order_relaxed);
  }
  ~session() {
    w_.sessions.erase(this);
    srv_.svc.stats().connections.fetch_sub(1, std::memory_order_relaxed);
    if (w_.sessions.empty() && srv_.draining.load(std::memory_order_relaxed)) srv_.loop_drained(w_);
  }
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  void start() {
    w_.sessions.insert(this);
    beast::error_code ec;
    socket_.non_blocking(true, ec);
    watch();
    wait_for_request();
  }

  // Draining: a connection with nothing received is closed now; one with a
  // request in flight, or whose next request's bytes have arrived (in our
  // buffer or still in the socket's), has it answered with
  // "Connection: close" (handle reads `draining`), then closes.
  void close_if_idle() {
    if (busy_ || buf_.size() > 0) return;
    beast::error_code ec;
    if (socket_.available(ec) > 0 && !ec) return;  // the pending wait_read will read it
    close();
  }

 private:
  // Timeouts: one deadline per connection, moved on each change of state
  // (a store, no timer syscall per request), checked by one timer that
  // wakes every `check_period`. The idle timeout runs until a request's
  // first byte arrives; from there the whole request must come within the
  // request timeout, however slowly its bytes trickle in; the response must
  // leave within it too.
  void set_deadline(tick timeout) noexcept { deadline_ = steady_clock::now() + timeout; }

  void watch() {
    timer_.expires_after(std::chrono::nanoseconds(srv_.check_period));
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || !self->socket_.is_open()) return;
      if (steady_clock::now() >= self->deadline_) {
        self->srv_.svc.stats().timeouts.fetch_add(1, std::memory_order_relaxed);
        return self->close();
      }
      self->watch();
    });
  }

  void wait_for_request() {
    busy_ = false;
    // A request already received (pipelined, or in the socket's buffer) is
    // answered, even when draining; with nothing received, a draining
    // connection closes.
    if (buf_.size() > 0) return read_request();
    if (srv_.draining.load(std::memory_order_relaxed)) {
      beast::error_code ec;
      if (socket_.available(ec) == 0 || ec) return close();
    }
    set_deadline(srv_.lim.idle_timeout);
    // Wait for readability, then read what is there: unlike async_read_some,
    // no speculative recv that fails with EAGAIN on every keep-alive turn.
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->close();
      beast::error_code e;
      const std::size_t n = self->socket_.read_some(self->buf_.prepare(8192), e);
      if (e == net::error::would_block || e == net::error::try_again) return self->wait_for_request();
      if (e) return self->close();
      self->buf_.commit(n);
      self->read_request();
    });
  }

  void read_request() {
    busy_ = true;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(srv_.lim.header_bytes));
    set_deadline(srv_.lim.request_timeout);
    // A lease id can be longer than server.max_body_bytes admits (long keys,
    // many checks), and every id issued must be releasable: then the header
    // is read first, and only POST /v1/release gets the longer limit.
    const std::size_t release_bytes = srv_.svc.release_body_bytes();
    if (release_bytes <= srv_.lim.body_bytes) {
      parser_->body_limit(srv_.lim.body_bytes);
      // A request whole in the buffer is parsed now, as Beast's read would
      // (put, consume, until done or it needs more), so that it reaches the
      // store in this handler: a call to Redis then goes out before the next
      // request is read (one batch in flight overlaps the two; "The fleet
      // path" in docs/serve.md). Whatever is not whole: Beast's async_read.
      beast::error_code parsed;
      while (buf_.size() > 0 && !parser_->is_done()) {
        const std::size_t used = parser_->put(buf_.data(), parsed);
        buf_.consume(used);
        if (parsed == http::error::need_more) break;
        if (parsed) return on_read(parsed);
        if (used == 0) break;
      }
      if (parser_->is_done()) return on_read({});
      return http::async_read(socket_, buf_, *parser_,
                              [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }
    parser_->body_limit(release_bytes);
    http::async_read_header(socket_, buf_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->on_read(ec);
      std::string buf;
      const bool release = self->role_ == listener_role::decision &&
                           routed_path(sv(self->parser_->get().target()), buf) == "/v1/release";
      if (!release) {
        const auto length = self->parser_->content_length();
        if (length && *length > self->srv_.lim.body_bytes) return self->on_read(http::error::body_limit);
        self->parser_->body_limit(self->srv_.lim.body_bytes);
      }
      http::async_read(self->socket_, self->buf_, *self->parser_,
                       [self](beast::error_code e, std::size_t) { self->on_read(e); });
    });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::header_limit) return fail(431, "request header fields too large");
    if (ec == http::error::body_limit) return fail(413, "request body too large");
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::operation_aborted ||
        ec == net::error::connection_reset)
      return close();
    if (ec) return fail(400, "malformed HTTP request");
    handle();
  }

  void handle() {
    auto& req = parser_->get();
    headers_.clear();
    for (const auto& f : req) headers_.push_back(header_view{sv(f.name_string()), sv(f.value())});
    // Framing Beast accepts but RFC 9112 does not (a coding list not ending
    // in chunked reads as no body, so its body would be read as the next
    // request): 400, and fail() closes the connection.
    if (const auto why = framing_error(headers_, req.version())) return fail(400, *why);
    const http_request hr{sv(req.method_string()), sv(req.target()), headers_, req.body(), peer_};
    bool now = true;
    try {
      // A request that needs the store suspends here: the loop serves
      // other connections, and the answer resumes this one on its loop.
      // The reference moves into the handler posted to this loop, so the
      // store's thread, which calls this, never holds the last one: a
      // session is destroyed on its own loop only.
      now = srv_.api.handle(hr, out_, role_, [self = shared_from_this()]() mutable {
        net::io_context& loop = self->w_.ioc;
        net::post(loop, [s = std::move(self)] { s->respond(); });
      });
    } catch (const std::exception&) {
      // An exception that escapes the service (a bug, or memory running
      // out) costs this request a 500, not the process every connection.
      srv_.svc.stats().count_status(500);
      out_.clear();
      out_.status = 500;
      out_.content_type = "application/json";
      out_.body = "{\"error\":{\"field\":\"request\",\"message\":\"internal error\"}}\n";
    }
    if (now) respond();
  }

  // The answer of the request in parser_ is in out_: send it. Draining, a
  // connection stays open only for requests already received after this
  // one (pipelined, in our buffer or in the socket's): each is answered in
  // turn, and the last answer says "Connection: close".
  void respond() {
    const auto& req = parser_->get();
    bool keep = req.keep_alive();
    if (keep && srv_.draining.load(std::memory_order_relaxed)) {
      beast::error_code ec;
      keep = buf_.size() > 0 || (socket_.available(ec) > 0 && !ec);
    }
    head_ = req.method() == http::verb::head;
    write(out_, keep, req.version());
  }

  void fail(unsigned status, std::string_view why) {
    srv_.svc.stats().count_status(status);
    srv_.svc.stats().bad_requests.fetch_add(1, std::memory_order_relaxed);
    out_.clear();
    head_ = false;
    out_.status = status;
    out_.content_type = "application/json";
    out_.body = std::string("{\"error\":{\"field\":\"request\",\"message\":\"") + std::string(why) + "\"}}\n";
    write(out_, false, 11);
  }

  // The response is formatted by hand into one reused buffer (status line,
  // fields, body) and sent with one write: cheaper than Beast's serializer,
  // and the values are the service's own (no request bytes, no CR/LF).
  void write(const http_response& r, bool keep_alive, unsigned version) {
    keep_alive_ = keep_alive;
    std::string& b = wire_;
    b.clear();
    b += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    b += std::to_string(r.status);
    b += ' ';
    const auto reason = http::obsolete_reason(static_cast<http::status>(r.status));
    b.append(reason.data(), reason.size());
    b += "\r\n";
    for (const auto& f : r.fields) {
      b += f.name;
      b += ": ";
      b += f.value;
      b += "\r\n";
    }
    if (!r.content_type.empty()) {
      b += "Content-Type: ";
      b += r.content_type;
      b += "\r\n";
    }
    if (r.status != 204 && r.status != 304 && r.status >= 200) {
      b += "Content-Length: ";
      b += std::to_string(r.body.size());
      b += "\r\n";
    }
    if (!keep_alive) {
      b += "Connection: close\r\n";
    } else if (version == 10) {
      b += "Connection: keep-alive\r\n";
    }
    b += "\r\n";
    if (r.status != 204 && r.status != 304 && !head_) b += r.body;  // HEAD: the length, no body
    set_deadline(srv_.lim.request_timeout);
    net::async_write(socket_, net::buffer(wire_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec || !self->keep_alive_) return self->close();
      self->wait_for_request();
    });
  }

  void close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    socket_.close(ec);
    timer_.cancel();
  }

  tcp::socket socket_;
  net::steady_timer timer_;
  tick deadline_ = 0;
  worker& w_;
  server::impl& srv_;
  listener_role role_;
  std::string peer_;
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string wire_;
  bool keep_alive_ = true;
  bool head_ = false;  // the request being answered is a HEAD
  http_response out_;
  std::vector<header_view> headers_;
  bool busy_ = false;
};

}  // namespace

void server::impl::accept(worker& w, tcp::acceptor& acc, listener_role role) {
  acc.async_accept([this, &w, &acc, role](beast::error_code ec, tcp::socket s) {
    if (ec == net::error::operation_aborted) return;
    if (!ec && draining.load(std::memory_order_relaxed)) {
      // Accepted before the acceptor closed: its request (if it sent one)
      // is answered, then the session closes.
      return admit(w, std::move(s), role);
    }
    if (draining.load(std::memory_order_relaxed)) return;
    if (ec) {
      // Out of descriptors (EMFILE) and the like: wait a little, then accept again.
      if (!w.retry_accept) w.retry_accept = std::make_unique<net::steady_timer>(w.ioc);
      w.retry_accept->expires_after(std::chrono::milliseconds(50));
      w.retry_accept->async_wait([this, &w, &acc, role](beast::error_code e) {
        if (!e) accept(w, acc, role);
      });
      return;
    }
    admit(w, std::move(s), role);
    accept(w, acc, role);
  });
}

void server::impl::admit(worker& w, tcp::socket s, listener_role role) {
  auto& m = svc.stats();
  beast::error_code ignored;
  if (m.connections.load(std::memory_order_relaxed) >= static_cast<std::int64_t>(lim.max_connections)) {
    m.connections_refused.fetch_add(1, std::memory_order_relaxed);
    s.close(ignored);
    return;
  }
  s.set_option(tcp::no_delay(true), ignored);
  std::make_shared<session>(std::move(s), w, *this, role)->start();
}

void server::impl::begin_drain() {
  if (draining.exchange(true)) return;
  svc.set_draining();
  for (auto& wp : workers) {
    worker* w = wp.get();
    net::post(w->ioc, [this, w] {
      for (auto& [acc, role] : w->acceptors) {
        // Connections the kernel has accepted (in the listen queue) may have
        // sent their request: take them and answer it, instead of letting
        // the close reset them.
        beast::error_code ec;
        acc->non_blocking(true, ec);
        while (!ec) {
          tcp::socket s(w->ioc);
          acc->accept(s, ec);
          if (!ec) admit(*w, std::move(s), role);
        }
        acc->close(ec);
      }
      if (w->retry_accept) w->retry_accept->cancel();
      // Copy: closing a session may end it, which erases it from the set.
      std::vector<session*> open(w->sessions.begin(), w->sessions.end());
      for (session* s : open) s->close_if_idle();
      if (w->sessions.empty()) loop_drained(*w);
    });
  }
}

void server::impl::loop_drained(worker& w) {
  if (loops_attached) svc.detach_loop(w.ioc);
}

server::server(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
server::~server() = default;

const std::vector<bound_address>& server::addresses() const noexcept { return impl_->addrs; }

result<std::unique_ptr<server>> server::bind(http_api& api, const config& c, server_hooks hooks) {
  auto p = std::make_unique<impl>(api, c.lim, std::move(hooks));
  const unsigned threads = c.threads != 0 ? c.threads : std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < threads; ++i) p->workers.push_back(std::make_unique<worker>());
  // One listening socket per address, bound without SO_REUSEPORT: a second
  // process on a port this one holds fails to bind (EADDRINUSE) instead of
  // splitting its traffic (docs/serve.md). The other loops accept on
  // duplicates of the same socket.
  const auto open = [&](worker& w, const listen_address& a, listener_role role) -> result<std::uint16_t> {
    const std::string where =
        (a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port);
    beast::error_code ec;
    const tcp::endpoint ep(net::ip::make_address(a.host, ec), a.port);
    if (ec) return error{"listen", where + ": " + ec.message()};
    auto acc = std::make_unique<tcp::acceptor>(w.ioc);
    acc->open(ep.protocol(), ec);
    if (!ec) acc->set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acc->bind(ep, ec);
    if (!ec) acc->listen(net::socket_base::max_listen_connections, ec);
    if (ec) return error{"listen", where + ": " + ec.message()};
    const std::uint16_t port = acc->local_endpoint().port();
    w.acceptors.emplace_back(std::move(acc), role);
    return port;
  };
  const auto share = [&](worker& w, tcp::acceptor& first, listener_role role) -> result<bool> {
    const int fd = ::fcntl(first.native_handle(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return error{"listen", std::string("cannot share the listening socket: ") + std::strerror(errno)};
    beast::error_code ec;
    auto acc = std::make_unique<tcp::acceptor>(w.ioc);
    acc->assign(first.local_endpoint().protocol(), fd, ec);
    if (ec) {
      ::close(fd);
      return error{"listen", "cannot share the listening socket: " + ec.message()};
    }
    w.acceptors.emplace_back(std::move(acc), role);
    return true;
  };
  for (const auto& a : c.listen) {
    listen_address actual = a;
    auto port = open(*p->workers[0], actual, listener_role::decision);
    if (!port) return port.err();
    actual.port = *port;
    tcp::acceptor& first = *p->workers[0]->acceptors.back().first;
    for (std::size_t i = 1; i < p->workers.size(); ++i)
      if (auto shared = share(*p->workers[i], first, listener_role::decision); !shared) return shared.err();
    p->addrs.push_back(bound_address{actual, listener_role::decision});
  }
  if (c.admin) {
    auto port = open(*p->workers[0], *c.admin, listener_role::admin);
    if (!port) return port.err();
    listen_address actual = *c.admin;
    actual.port = *port;
    p->addrs.push_back(bound_address{actual, listener_role::admin});
  }
  return std::unique_ptr<server>(new server(std::move(p)));
}

void server::run(std::ostream& log) {
  impl& p = *impl_;
  p.log = &log;
  worker& first = *p.workers[0];
  for (auto& w : p.workers)
    for (auto& [acc, role] : w->acceptors) p.accept(*w, *acc, role);
  // A remote store that can do its I/O on these loops does: a request's
  // store call is written, read and answered on its own loop's thread.
  {
    std::vector<net::io_context*> loops;
    for (auto& w : p.workers) loops.push_back(&w->ioc);
    if (auto attached = p.svc.attach_loops(loops)) {
      p.loops_attached = *attached;
    } else {
      log << "sluice serve: the store keeps its own I/O thread: " << attached.err().what() << "\n";
    }
  }

  net::signal_set signals(first.ioc, SIGTERM, SIGINT, SIGHUP);
  // The caller may have blocked these signals until now (so that one sent
  // before the handlers were in place is not lost): unblock them, before
  // the other loops' threads start and inherit the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  for (const auto& a : p.addrs) {
    const std::string host =
        a.address.host.find(':') != std::string::npos ? "[" + a.address.host + "]" : a.address.host;
    log << "sluice serve: listening on http://" << host << ":" << a.address.port
        << (a.role == listener_role::admin ? " (admin)" : " (decisions)") << "\n";
  }
  log << "sluice serve: " << p.workers.size() << (p.workers.size() == 1 ? " thread" : " threads") << ", ready"
      << std::endl;
  net::steady_timer drain_deadline(first.ioc);
  net::steady_timer interval(first.ioc);
  std::function<void()> wait_signal;
  wait_signal = [&] {
    signals.async_wait([&](beast::error_code ec, int sig) {
      if (ec) return;
      if (sig == SIGHUP) {
        auto r = p.svc.reload();
        if (r) {
          log << "sluice serve: reloaded " << p.svc.current()->file << " (" << r->added.size() << " added, "
              << r->changed.size() << " changed, " << r->kept.size() << " kept)";
          for (const auto& n : r->notes) log << "; " << n;
          log << std::endl;
        } else {
          log << "sluice serve: reload refused, the running configuration stays: " << r.err().what() << std::endl;
        }
        return wait_signal();
      }
      log << "sluice serve: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ", draining" << std::endl;
      p.begin_drain();
      interval.cancel();
      drain_deadline.expires_after(std::chrono::nanoseconds(p.lim.drain_timeout));
      drain_deadline.async_wait([&](beast::error_code e) {
        if (e) return;
        log << "sluice serve: drain timeout, closing the remaining connections" << std::endl;
        for (auto& w : p.workers) w->ioc.stop();
      });
      // The deadline must not keep the loop alive once everything drained:
      // a watcher ends it when the loops' other work is gone.
      signals.cancel();
    });
  };
  wait_signal();
  std::function<void()> tick_interval;
  if (p.hooks.interval > 0 && p.hooks.on_interval) {
    tick_interval = [&] {
      interval.expires_after(std::chrono::nanoseconds(p.hooks.interval));
      interval.async_wait([&](beast::error_code ec) {
        if (ec || p.draining.load()) return;
        p.hooks.on_interval();
        tick_interval();
      });
    };
    tick_interval();
  }

  std::vector<std::thread> threads;
  std::atomic<std::size_t> running{p.workers.size()};
  for (std::size_t i = 1; i < p.workers.size(); ++i) {
    threads.emplace_back([&p, i, &running] {
      p.workers[i]->ioc.run();
      running.fetch_sub(1);
    });
  }
  // The first loop also owns the drain deadline: it ends when every session
  // of every loop is gone (the last loop to finish cancels the deadline).
  net::steady_timer idle_check(first.ioc);
  std::function<void()> watch;
  watch = [&] {
    if (!p.draining.load()) {
      idle_check.expires_after(std::chrono::milliseconds(50));
      idle_check.async_wait([&](beast::error_code ec) {
        if (!ec) watch();
      });
      return;
    }
    if (!first.sessions.empty() || running.load() > 1) {
      idle_check.expires_after(std::chrono::milliseconds(10));
      idle_check.async_wait([&](beast::error_code ec) {
        if (!ec) watch();
      });
      return;
    }
    drain_deadline.cancel();
  };
  watch();
  first.ioc.run();
  for (auto& w : p.workers) w->ioc.stop();
  for (auto& t : threads) t.join();
  // After a drain timeout, a loop may still hold the store's connection
  // and calls waiting on it: detaching fails them, and running what is
  // ready (no waiting) hands their answers over, so that none is left
  // waiting on a loop that no longer runs.
  if (p.loops_attached) {
    for (auto& w : p.workers) {
      p.loop_drained(*w);
      w->ioc.restart();
      while (w->ioc.poll() > 0) {
      }
    }
  }
  // Answers still waiting on the store (each within its deadline) are
  // posted to loops that no longer run: they must come before the loops go.
  p.svc.quiesce();
  log << "sluice serve: stopped" << std::endl;
}

}  // namespace sluice::serve
