// async_client: one pipelined connection on Asio — queue, one write for
// everything queued, hiredis's reader, per-call deadlines, connect + TLS +
// login, reconnect with backoff (async_client.hpp). The FUNCTION library
// path is in async_fcall.cpp.
#include "redis/client/async_client.hpp"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <variant>

#include "redis/client/async_impl.hpp"
#include "redis/client/resp.hpp"
#include "redis/client/tls.hpp"

namespace sluice::redis {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using unix_socket = asio::local::stream_protocol::socket;
using tls_stream = asio::ssl::stream<tcp::socket>;
using steady = std::chrono::steady_clock;
using boost::system::error_code;

/// One socket and what belongs to it: the reader, the buffers. Shared with
/// its pending operations, so closing it never frees what they use.
struct transport {
  std::variant<std::monostate, tcp::socket, tls_stream, unix_socket> stream;
  redisReader* reader = redisReaderCreate();
  std::array<char, 64 * 1024> rbuf{};
  std::string wbuf;
  bool tls = false;

  transport() = default;
  transport(const transport&) = delete;
  transport& operator=(const transport&) = delete;
  ~transport() {
    close();
    if (reader != nullptr) redisReaderFree(reader);
  }
  template <class F>
  void with(F&& f) {
    std::visit(
        [&](auto& s) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(s)>, std::monostate>) f(s);
        },
        stream);
  }
  void close() noexcept {
    error_code ec;
    if (auto* t = std::get_if<tcp::socket>(&stream)) t->close(ec);
    if (auto* s = std::get_if<tls_stream>(&stream)) s->lowest_layer().close(ec);
    if (auto* u = std::get_if<unix_socket>(&stream)) u->close(ec);
  }
  /// The plaintext socket's descriptor (-1 over TLS or unconnected).
  int plain_fd() {
    if (auto* t = std::get_if<tcp::socket>(&stream)) return t->native_handle();
    if (auto* u = std::get_if<unix_socket>(&stream)) return u->native_handle();
    return -1;
  }
  tcp::socket* tcp_layer() {
    if (auto* t = std::get_if<tcp::socket>(&stream)) return t;
    if (auto* s = std::get_if<tls_stream>(&stream)) return &s->next_layer();
    return nullptr;
  }
};

struct async_client::impl {
  impl(async_client& o, asio::any_io_executor ex)
      : owner(o),
        strand(asio::make_strand(ex)),
        resolver(strand),
        connect_timer(strand),
        deadline_timer(strand),
        where(o.options_.where.redacted()) {}

  enum class phase : std::uint8_t { idle, connecting, handshake, login, ready, closed };

  async_client& owner;
  asio::strand<asio::any_io_executor> strand;
  tcp::resolver resolver;
  asio::steady_timer connect_timer;
  asio::steady_timer deadline_timer;
  std::string where;
  std::shared_ptr<tls_context> tls;
  std::chrono::nanoseconds stall{};

  // All below: only on the strand.
  phase ph = phase::idle;
  std::shared_ptr<transport> t;
  std::deque<std::unique_ptr<op>> queued;  // not written yet, in order
  std::deque<std::unique_ptr<op>> sent;    // written, awaiting replies, in order
  bool writing = false;
  bool write_scheduled = false;
  bool timer_armed = false;
  steady::time_point armed_at{};
  steady::time_point down_until{};
  std::chrono::nanoseconds backoff{};
  call_error down_error{};
  push_handler push;
  std::function<void()> on_lost;  // set_lost_handler

  // ------------------------------------------------------------ completion

  static void finish(std::unique_ptr<op>& o, batch_result r) {
    if (!o->done) return;
    auto h = std::move(o->done);
    o->done = nullptr;
    h(std::move(r));
  }

  static call_error with_kind(call_error e, bool maybe_applied) {
    e.maybe_applied = maybe_applied;
    return e;
  }

  // ------------------------------------------------------------ submit

  void exec(std::unique_ptr<op> o) {
    const auto now = steady::now();
    if (ph == phase::closed) {
      finish(o, call_error{call_error::io, where + ": the client is closed", false});
      return;
    }
    if (ph == phase::idle) {
      if (now < down_until) {
        call_error e = down_error;
        e.message += " (backing off before reconnecting)";
        e.maybe_applied = false;
        finish(o, std::move(e));
        return;
      }
      start_connect();
    }
    o->deadline = now + owner.options_.command_timeout;
    if (ph != phase::ready) o->deadline += owner.options_.connect_timeout;
    arm(o->deadline);
    queued.push_back(std::move(o));
    if (ph != phase::ready) return;
    if (holding()) return write_or_hold(now);
    schedule_write();
  }

  // ------------------------------------------------------------ batches in flight

  static constexpr std::chrono::microseconds poll_every{20};
  steady::time_point last_poll{};
  std::size_t batches_out = 0;  // writes whose last reply is not in yet (ops with ends_batch in `sent`)

  [[nodiscard]] bool holding() const {
    const auto& o = owner.options_;
    return o.batches_in_flight > 0 && !o.caller_driven && o.reading == nullptr && t && t->plain_fd() >= 0;
  }
  [[nodiscard]] bool room_for_a_batch() const { return batches_out < owner.options_.batches_in_flight; }

  // Fewer batches of ours at the server than allowed: written now. Else
  // held; and a look at the socket (the oldest batch's replies may be in:
  // consume writes what is held).
  void write_or_hold(steady::time_point now) {
    if (writing) return;
    if (room_for_a_batch()) return start_write();
    if (in_read || now - last_poll < poll_every) return;
    last_poll = now;
    read_now();
  }

  // ------------------------------------------------------------ writing

  void schedule_write() {
    if (owner.options_.caller_driven) {
      start_write();  // nothing else is queued by another thread: write now
      return;
    }
    if (write_scheduled || writing || ph != phase::ready) return;
    write_scheduled = true;
    asio::post(strand, [self = owner.shared_from_this()] {
      self->impl_->write_scheduled = false;
      self->impl_->start_write();
    });
  }

  void start_write() {
    if (writing || ph != phase::ready) return;
    t->wbuf.clear();
    const auto now = steady::now();
    std::uint64_t commands = 0;
    while (!queued.empty()) {
      auto o = std::move(queued.front());
      queued.pop_front();
      if (!o->done) continue;  // timed out before it was written
      t->wbuf += o->bytes;
      std::string().swap(o->bytes);
      o->written = true;
      o->written_at = now;
      commands += o->expected;
      sent.push_back(std::move(o));
    }
    if (t->wbuf.empty()) return;
    sent.back()->ends_batch = true;
    ++batches_out;
    write(t, commands);
  }

  void write(const std::shared_ptr<transport>& tr, std::uint64_t commands) {
    writing = true;
    owner.writes_.fetch_add(1, std::memory_order_relaxed);
    owner.commands_.fetch_add(commands, std::memory_order_relaxed);
    if ((owner.options_.caller_driven || holding()) && !tr->tls && write_now(*tr)) {
      writing = false;  // all of it went out in this call: no completion to wait for
      return;
    }
    tr->with([&](auto& s) {
      asio::async_write(s, asio::buffer(tr->wbuf),
                        [self = owner.shared_from_this(), tr](const error_code& ec, std::size_t) {
                          impl& m = *self->impl_;
                          if (tr != m.t) return;  // a connection since closed
                          m.writing = false;
                          if (ec) {
                            m.lost(call_error{call_error::io, m.where + ": write: " + m.describe(ec), true});
                            return;
                          }
                          // Held calls wait for room (consume writes them when a batch is answered).
                          if (m.ph == phase::ready && (!m.holding() || m.room_for_a_batch())) m.start_write();
                        });
    });
  }

  // A caller-driven plaintext connection writes at once, without blocking:
  // true when every byte went out. What would block (or failed) is left in
  // `wbuf` for async_write, which reports a failure as for any write.
  static bool write_now(transport& tr) {
    std::size_t n = 0;
    tr.with([&](auto& s) {
      if constexpr (!std::is_same_v<std::decay_t<decltype(s)>, tls_stream>) {
        error_code ec;
        if (!s.non_blocking()) s.non_blocking(true, ec);  // once per connection (an ioctl)
        if (!ec) n = s.write_some(asio::buffer(tr.wbuf), ec);
        if (ec) n = 0;
      }
    });
    if (n == tr.wbuf.size()) return true;
    tr.wbuf.erase(0, n);
    return false;
  }

  // ------------------------------------------------------------ reading

  void start_read(const std::shared_ptr<transport>& tr) {
    if ((owner.options_.reading != nullptr || holding()) && tr->plain_fd() >= 0) return gated_read(tr);
    tr->with([&](auto& s) {
      s.async_read_some(asio::buffer(tr->rbuf),
                        [self = owner.shared_from_this(), tr](const error_code& ec, std::size_t n) {
                          impl& m = *self->impl_;
                          if (tr != m.t) return;
                          if (ec) {
                            const bool eof = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
                            std::string why = eof ? "the server closed the connection" : m.describe(ec);
                            m.lost(call_error{call_error::io, m.where + ": read: " + why, true});
                            return;
                          }
                          if (m.consume(tr, n)) m.start_read(tr);
                        });
    });
  }

  // async_client_options::reading: waits for the socket without reading
  // it, raises the flag, reads everything there is (read_now delivers each
  // whole reply), lowers the flag, waits again. One batch in flight reads
  // the same way, without a flag: read_now may then also run from a call
  // (write_or_hold), and no byte is ever read by two paths out of order. The reactor reports
  // readiness by edge and a wait is never tried at once, so the next wait
  // is queued in the handler that made the last recv: with one thread
  // running the context, no epoll_wait runs between them, and a byte that
  // came after that recv is reported to the queued wait.
  void gated_read(const std::shared_ptr<transport>& tr) {
    tr->with([&](auto& s) {
      if constexpr (!std::is_same_v<std::decay_t<decltype(s)>, tls_stream>) {
        s.async_wait(asio::socket_base::wait_read, [self = owner.shared_from_this(), tr](const error_code& ec) {
          impl& m = *self->impl_;
          if (tr != m.t) return;
          if (ec) {
            m.lost(call_error{call_error::io, m.where + ": wait: " + m.describe(ec), true});
            return;
          }
          std::atomic<bool>* reading = self->options_.reading;
          if (reading != nullptr) reading->store(true);
          m.read_now();
          if (reading != nullptr) reading->store(false);
          if (tr == m.t) m.start_read(tr);
        });
      }
    });
  }

  // Feeds `n` bytes of `tr->rbuf` to the reader and delivers every whole
  // reply; false when the connection is gone (lost here, or by a handler).
  bool consume(const std::shared_ptr<transport>& tr, std::size_t n) {
    if (redisReaderFeed(tr->reader, tr->rbuf.data(), n) != REDIS_OK) {
      lost(call_error{call_error::protocol, where + ": " + std::string(tr->reader->errstr), true});
      return false;
    }
    while (tr == t) {
      void* raw = nullptr;
      if (redisReaderGetReply(tr->reader, &raw) != REDIS_OK) {
        lost(call_error{call_error::protocol, where + ": " + std::string(tr->reader->errstr), true});
        return false;
      }
      if (raw == nullptr) break;
      reply r;
      const bool ok = convert_reply(static_cast<redisReply*>(raw), r);
      freeReplyObject(raw);
      if (!ok) {
        lost(call_error{call_error::protocol, where + ": a reply of an unknown RESP type", true});
        return false;
      }
      deliver(std::move(r));
    }
    // Batches in flight: the oldest one's last reply is in, what was held goes now.
    if (tr == t && ph == phase::ready && room_for_a_batch() && !queued.empty() && !writing && holding()) start_write();
    return tr == t;
  }

  // ------------------------------------------------------------ caller reads
  //
  // A caller-driven plaintext connection is read by its caller, never by
  // the reactor (no read is queued on it): a wait is one ppoll until the
  // socket is readable or the next deadline, then recv until a short read.
  // With the write, a round trip is three system calls (hiredis's write,
  // poll, read); through the reactor it was five (an epoll_wait for what
  // came while idle, sendto, epoll_wait, recvfrom and the next async read's
  // speculative recvfrom). Timers, the connect, a write that would block
  // and TLS still run on the context.
  //
  // Before a call, a connection idle for `idle_check_after` or more is
  // peeked at (one recv) for a server's EOF, so that the call goes out on a
  // new connection instead of failing on the closed one. A connection in
  // continuous use is not: a close then almost always cuts a call in
  // flight anyway, and the peek would be a fourth system call a round trip.
  static constexpr std::chrono::milliseconds idle_check_after{1};
  steady::time_point last_read{};

  [[nodiscard]] bool caller_reads() const { return owner.options_.caller_driven && t && !t->tls; }

  bool caller_idle() {
    if (!caller_reads() || ph != phase::ready || writing) return false;
    if (steady::now() - last_read < idle_check_after) return true;  // in use, not idle
    char c = 0;
    if (::recv(t->plain_fd(), &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return true;  // nothing came while idle
    read_now();     // a server's EOF (the call then goes on a new connection), an error, or stray bytes
    return true;
  }

  bool caller_wait() {
    if (!caller_reads() || writing || (ph != phase::login && ph != phase::ready)) return false;
    auto until = timer_armed ? armed_at : steady::time_point::max();
    if (ph == phase::login) until = std::min(until, connect_timer.expiry());
    const auto now = steady::now();
    if (until == steady::time_point::max() || now >= until) return false;  // the context runs the due timer
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - now).count();
    const timespec ts{static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)};
    pollfd p[2] = {{t->plain_fd(), POLLIN, 0}, {owner.options_.wake_fd, POLLIN, 0}};
    const int r = ::ppoll(p, owner.options_.wake_fd >= 0 ? 2 : 1, &ts, nullptr);
    if (r > 0 && (p[1].revents & POLLIN) != 0) return false;  // closed from another thread: the context runs the close
    if (r < 0 && errno != EINTR) {
      lost(call_error{call_error::io,
                      where + ": poll: " + error_code(errno, boost::system::system_category()).message(), true});
      return true;
    }
    if (r > 0 && p[0].revents != 0) {
      read_now();
      last_read = steady::now();
    }
    return true;
  }

  bool in_read = false;  // read_now is running (a handler it calls may make a call)

  void read_now() {
    if (in_read) return;
    in_read = true;
    struct done_reading {
      bool& flag;
      ~done_reading() { flag = false; }
    } guard{in_read};
    const auto tr = t;
    for (;;) {
      const ssize_t n = ::recv(tr->plain_fd(), tr->rbuf.data(), tr->rbuf.size(), MSG_DONTWAIT);
      if (n > 0) {
        if (!consume(tr, static_cast<std::size_t>(n)) || static_cast<std::size_t>(n) < tr->rbuf.size()) return;
        continue;  // a full buffer: there may be more
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      const std::string why =
          n == 0 ? "the server closed the connection" : error_code(errno, boost::system::system_category()).message();
      lost(call_error{call_error::io, where + ": read: " + why, true});
      return;
    }
  }

  void deliver(reply r) {
    owner.replies_.fetch_add(1, std::memory_order_relaxed);
    if (sent.empty()) {
      if (push) {
        push(std::move(r));
        return;
      }
      lost(call_error{call_error::protocol, where + ": a reply no command asked for", true});
      return;
    }
    op& o = *sent.front();
    o.got.push_back(std::move(r));
    if (o.got.size() < o.expected) return;
    auto done = std::move(sent.front());
    sent.pop_front();
    if (done->ends_batch) --batches_out;
    if (!done->done) {
      owner.late_replies_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    finish(done, std::move(done->got));
  }

  // ------------------------------------------------------------ deadlines

  void arm(steady::time_point at) {
    if (timer_armed && armed_at <= at) return;
    timer_armed = true;
    armed_at = at;
    deadline_timer.expires_at(at);
    deadline_timer.async_wait([self = owner.shared_from_this()](const error_code& ec) {
      if (ec == asio::error::operation_aborted) return;
      self->impl_->on_deadline();
    });
  }

  void on_deadline() {
    timer_armed = false;
    const auto now = steady::now();
    std::vector<std::unique_ptr<op>> expired;  // unwritten: removed
    std::vector<op*> expired_sent;             // written: keep their place
    for (auto it = queued.begin(); it != queued.end();) {
      if ((*it)->done && (*it)->deadline <= now) {
        expired.push_back(std::move(*it));
        it = queued.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& o : sent)
      if (o->done && !o->internal && o->deadline <= now) expired_sent.push_back(o.get());
    const bool stalled = ph == phase::ready && !sent.empty() && sent.front()->written_at + stall <= now;
    // Re-arm before calling anyone (a handler may submit).
    steady::time_point next = steady::time_point::max();
    for (auto& o : queued)
      if (o->done) next = std::min(next, o->deadline);
    for (auto& o : sent)
      if (o->done && !o->internal && o->deadline > now) next = std::min(next, o->deadline);
    if (ph == phase::ready && !sent.empty() && !stalled) next = std::min(next, sent.front()->written_at + stall);
    if (next != steady::time_point::max()) arm(next);

    const auto ms = std::to_string(owner.options_.command_timeout.count());
    for (op* o : expired_sent) {
      owner.timeouts_.fetch_add(1, std::memory_order_relaxed);
      auto h = std::move(o->done);
      o->done = nullptr;
      h(call_error{call_error::timeout, where + ": no reply within the command timeout (" + ms + " ms)", true});
    }
    for (auto& o : expired) {
      owner.timeouts_.fetch_add(1, std::memory_order_relaxed);
      finish(o, call_error{call_error::timeout,
                           where + ": not sent within the command timeout (" + ms +
                               (ph == phase::ready ? " ms; held behind a batch in flight)" : " ms; connecting)"),
                           false});
    }
    if (stalled && ph == phase::ready)
      lost(call_error{call_error::io,
                      where + ": no reply for " +
                          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(stall).count()) +
                          " ms: connection closed",
                      true});
  }

  // ------------------------------------------------------------ connecting

  void start_connect() {
    ph = phase::connecting;
    auto tr = std::make_shared<transport>();
    t = tr;
    const url& u = owner.options_.where;
    connect_timer.expires_after(owner.options_.connect_timeout);
    connect_timer.async_wait([self = owner.shared_from_this(), tr](const error_code& ec) {
      impl& m = *self->impl_;
      if (ec || tr != m.t || m.ph == phase::ready) return;
      const auto ms = std::to_string(m.owner.options_.connect_timeout.count());
      std::string why = m.ph == phase::handshake ? "no TLS handshake within the connect timeout (" + ms +
                                                       " ms): a plaintext port, or a hung server?"
                        : m.ph == phase::login ? "no answer to the login within the connect timeout (" + ms + " ms)"
                                               : "connect timeout (" + ms + " ms)";
      m.connect_failed(call_error{call_error::timeout, m.where + ": " + why, false});
    });
    auto on_connect = [self = owner.shared_from_this(), tr](const error_code& ec) {
      impl& m = *self->impl_;
      if (tr != m.t) return;
      if (ec) {
        m.connect_failed(call_error{call_error::refused, m.where + ": connect: " + ec.message(), false});
        return;
      }
      m.connected();
    };
    if (u.is_unix()) {
      tr->stream.emplace<unix_socket>(strand);
      std::get<unix_socket>(tr->stream)
          .async_connect(asio::local::stream_protocol::endpoint(u.socket_path), std::move(on_connect));
      return;
    }
    if (u.tls.on) {
      tr->stream.emplace<tls_stream>(strand, tls->native());
      tr->tls = true;
    } else {
      tr->stream.emplace<tcp::socket>(strand);
    }
    error_code ec;
    const auto addr = asio::ip::make_address(u.host, ec);
    if (!ec) {
      tr->tcp_layer()->async_connect(tcp::endpoint(addr, u.port), std::move(on_connect));
      return;
    }
    resolver.async_resolve(
        u.host, std::to_string(u.port),
        [self = owner.shared_from_this(), tr, on_connect](const error_code& rec,
                                                          const tcp::resolver::results_type& hosts) mutable {
          impl& m = *self->impl_;
          if (tr != m.t) return;
          if (rec) {
            m.connect_failed(call_error{call_error::refused, m.where + ": resolve: " + rec.message(), false});
            return;
          }
          asio::async_connect(*tr->tcp_layer(), hosts,
                              [on_connect](const error_code& cec, const tcp::endpoint&) { on_connect(cec); });
        });
  }

  void connected() {
    const url& u = owner.options_.where;
    if (tcp::socket* s = t->tcp_layer()) {
      error_code ec;
      s->set_option(tcp::no_delay(true), ec);
      if (owner.options_.keepalive) {
        s->set_option(asio::socket_base::keep_alive(true), ec);
        // hiredis's redisKeepAlive(15): idle 15 s, probes every 5 s, 3 of them.
        const int idle = 15, intvl = 5, cnt = 3;
        ::setsockopt(s->native_handle(), IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
        ::setsockopt(s->native_handle(), IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
        ::setsockopt(s->native_handle(), IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
      }
    }
    if (!t->tls) {
      if (!caller_reads()) start_read(t);
      login();
      return;
    }
    ph = phase::handshake;
    auto& s = std::get<tls_stream>(t->stream);
    if (!tls->prepare(s.native_handle(), u.host)) {
      connect_failed(call_error{call_error::refused, where + ": TLS: the name to verify is refused by OpenSSL", false});
      return;
    }
    s.async_handshake(asio::ssl::stream_base::client, [self = owner.shared_from_this(), tr = t](const error_code& ec) {
      impl& m = *self->impl_;
      if (tr != m.t) return;
      if (ec) {
        auto& st = std::get<tls_stream>(tr->stream);
        m.connect_failed(
            call_error{call_error::refused,
                       m.where + ": " + m.tls->explain(st.native_handle(), ec, m.owner.options_.where.host), false});
        return;
      }
      m.start_read(tr);
      m.login();
    });
  }

  // AUTH and SELECT (and PING over TLS), then the module's probe
  // (module.hpp; not with module=off), in one write; user commands wait.
  void login() {
    const url& u = owner.options_.where;
    std::vector<std::vector<std::string_view>> setup;
    const std::string db = std::to_string(u.db);
    if (!u.user.empty())
      setup.push_back({"AUTH", u.user, u.password});
    else if (!u.password.empty())
      setup.push_back({"AUTH", u.password});
    if (u.db != 0) setup.push_back({"SELECT", db});
    // Only a connection that carries the library's calls asks (the store's).
    const bool ask = u.module != module_use::off && owner.current_library() != nullptr;
    const auto probe = ask ? module_probe() : std::vector<std::vector<std::string_view>>{};
    if (setup.empty() && probe.empty() && t->tls) setup.push_back({"PING"});
    if (setup.empty() && probe.empty()) {
      ready();
      return;
    }
    ph = phase::login;
    auto o = std::make_unique<op>();
    o->internal = true;
    o->expected = setup.size() + probe.size();
    std::vector<std::string> names;
    for (const auto& cmd : setup) {
      format_command(t->wbuf, cmd);
      names.emplace_back(cmd[0]);
    }
    for (const auto& cmd : probe) format_command(t->wbuf, cmd);
    o->written = true;
    o->written_at = steady::now();
    o->done = [self = owner.shared_from_this(), tr = t, names](batch_result r) {
      impl& m = *self->impl_;
      if (tr != m.t) return;
      if (auto* e = std::get_if<call_error>(&r)) {
        call_error f = *e;
        f.maybe_applied = false;
        if (f.kind == call_error::io) f.kind = call_error::refused;
        m.connect_failed(std::move(f));
        return;
      }
      const auto& replies = std::get<std::vector<reply>>(r);
      for (std::size_t i = 0; i < names.size(); ++i)
        if (replies[i].is_error()) {
          call_error f = server_error(m.where + ": " + names[i] + " failed: " + replies[i].str);
          if (names[i] == "AUTH") f.kind = call_error::auth;
          m.connect_failed(std::move(f));
          return;
        }
      const url& w = m.owner.options_.where;
      if (names.size() < replies.size()) {
        const auto lib = m.owner.current_library();
        module_caps caps = read_module_probe(replies.data() + names.size(), replies.size() - names.size(),
                                             lib ? std::string_view(lib->name) : std::string_view());
        if (w.module == module_use::on && !caps.complete()) {
          // This connection fails; the path the others share is left as it
          // is (their calls meet the same refusal, and fail, on their own).
          m.connect_failed(call_error{
              call_error::refused,
              m.where + ": module=on, but the server runs no sluice module for this user (" + caps.why + ")", false});
          return;
        }
        m.owner.set_module(std::move(caps));
      }
      m.ready();
    };
    sent.push_back(std::move(o));
    write(t, setup.size() + probe.size());
  }

  void ready() {
    ph = phase::ready;
    connect_timer.cancel();
    backoff = {};
    owner.connects_.fetch_add(1, std::memory_order_relaxed);
    // Calls that waited for the connection get their full command timeout from now.
    const auto now = steady::now();
    for (auto& o : queued) o->deadline = std::max(o->deadline, now + owner.options_.command_timeout);
    schedule_write();
  }

  // A connect, handshake or login failed: nothing of the callers' was sent.
  void connect_failed(call_error e) {
    owner.connect_failures_.fetch_add(1, std::memory_order_relaxed);
    const std::chrono::nanoseconds first = owner.options_.reconnect_backoff;
    const std::chrono::nanoseconds most = owner.options_.reconnect_backoff_max;
    backoff = backoff.count() == 0 ? first : std::min(most, backoff * 2);
    down_until = steady::now() + backoff;
    down_error = e;
    drop(std::move(e), false);
  }

  // An established connection broke: the calls written to it may have run.
  void lost(call_error e) {
    if (ph == phase::connecting || ph == phase::handshake || ph == phase::login) {
      // Over TLS 1.3 a refused client certificate shows on the first read.
      e.kind = e.kind == call_error::protocol ? e.kind : call_error::refused;
      connect_failed(std::move(e));
      return;
    }
    owner.broken_.fetch_add(1, std::memory_order_relaxed);
    drop(std::move(e), true);
    if (on_lost) on_lost();
  }

  // Closes the connection; fails the written calls with `e` and, when the
  // connect failed, the queued ones too (else they go out on a new one).
  void drop(call_error e, bool established) {
    if (t) t->close();
    t.reset();
    writing = false;
    connect_timer.cancel();
    if (ph != phase::closed) ph = phase::idle;
    std::vector<std::unique_ptr<op>> failed;
    for (auto& o : sent) failed.push_back(std::move(o));
    sent.clear();
    batches_out = 0;
    if (!established || ph == phase::closed) {
      for (auto& o : queued) failed.push_back(std::move(o));
      queued.clear();
    }
    const bool reconnect = !queued.empty();
    for (auto& o : failed) {
      if (o->internal) continue;
      finish(o, with_kind(e, o->written && established));
    }
    if (reconnect && ph == phase::idle) start_connect();
  }

  std::string describe(const error_code& ec) const {
    if (t && t->tls && ec.category() == asio::error::get_ssl_category()) return tls->explain(nullptr, ec, "");
    return ec.message();
  }
};

// ---------------------------------------------------------------- async_client

async_client::async_client(asio::any_io_executor ex, async_client_options options)
    : options_(std::move(options)), impl_(std::make_unique<impl>(*this, std::move(ex))) {
  const auto st = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(1000), 4 * options_.command_timeout);
  impl_->stall = options_.stall_timeout.count() > 0 ? options_.stall_timeout : st;
}

async_client::~async_client() = default;

result<std::shared_ptr<async_client>> async_client::create(asio::any_io_executor ex, async_client_options options) {
  std::shared_ptr<tls_context> tls = options.tls;
  if (options.where.tls.on && !tls) {
    auto made = tls_context::make(options.where.tls);
    if (!made) return made.err();
    tls = std::move(made).value();
  }
  if (!options.module) options.module = std::make_shared<module_state>();
  std::shared_ptr<async_client> c(new async_client(std::move(ex), std::move(options)));
  c->impl_->tls = std::move(tls);
  return c;
}

void async_client::submit(std::unique_ptr<op> o) {
  if (options_.caller_driven) {
    impl_->exec(std::move(o));  // the caller is the only thread that runs the context
    return;
  }
  if (options_.batches_in_flight > 0 && !options_.where.tls.on) {
    // On the loop's own thread the call is queued (and maybe written) now,
    // before the loop reads its next request. (TLS keeps one write a pass:
    // holding its calls was measured no faster, docs/serve.md.)
    asio::dispatch(impl_->strand,
                   [self = shared_from_this(), o = std::move(o)]() mutable { self->impl_->exec(std::move(o)); });
    return;
  }
  asio::post(impl_->strand,
             [self = shared_from_this(), o = std::move(o)]() mutable { self->impl_->exec(std::move(o)); });
}

void async_client::async_call(std::span<const std::string_view> argv, call_handler done) {
  if (argv.empty()) {
    done(call_error{call_error::protocol, "an empty command", false});
    return;
  }
  auto o = std::make_unique<op>();
  format_command(o->bytes, argv);
  o->done = [h = std::move(done)](batch_result r) {
    if (auto* e = std::get_if<call_error>(&r)) return h(std::move(*e));
    reply& rep = std::get<std::vector<reply>>(r)[0];
    if (rep.is_error()) return h(server_error(std::move(rep.str)));
    h(std::move(rep));
  };
  submit(std::move(o));
}

void async_client::async_pipeline(std::span<const std::vector<std::string_view>> commands, batch_handler done) {
  if (commands.empty()) {
    done(std::vector<reply>{});
    return;
  }
  auto o = std::make_unique<op>();
  for (const auto& cmd : commands) {
    if (cmd.empty()) {
      done(call_error{call_error::protocol, "an empty command in a pipeline", false});
      return;
    }
    format_command(o->bytes, cmd);
  }
  o->expected = commands.size();
  o->done = std::move(done);
  submit(std::move(o));
}

void async_client::submit_formatted(std::string bytes, std::size_t replies, batch_handler done) {
  auto o = std::make_unique<op>();
  o->bytes = std::move(bytes);
  o->expected = replies;
  o->done = std::move(done);
  submit(std::move(o));
}

void async_client::close() {
  asio::post(impl_->strand, [self = shared_from_this()] {
    impl& m = *self->impl_;
    m.ph = impl::phase::closed;
    m.deadline_timer.cancel();
    m.resolver.cancel();
    m.drop(call_error{call_error::io, m.where + ": the client is closed", true}, true);
    m.push = nullptr;
    m.on_lost = nullptr;
  });
}

void async_client::set_push_handler(push_handler h) {
  asio::post(impl_->strand,
             [self = shared_from_this(), h = std::move(h)]() mutable { self->impl_->push = std::move(h); });
}

void async_client::set_lost_handler(std::function<void()> h) {
  asio::post(impl_->strand,
             [self = shared_from_this(), h = std::move(h)]() mutable { self->impl_->on_lost = std::move(h); });
}

int async_client::socket_fd() const {
  const auto& t = impl_->t;
  if (!t) return -1;
  if (const int fd = t->plain_fd(); fd >= 0) return fd;
  auto* layer = t->tcp_layer();
  return layer != nullptr && layer->is_open() ? layer->native_handle() : -1;
}

bool async_client::gated() const {
  const auto& t = impl_->t;
  return options_.reading != nullptr && t && t->plain_fd() >= 0;
}

bool async_client::caller_idle() { return impl_->caller_idle(); }

bool async_client::caller_wait() { return impl_->caller_wait(); }

asio::any_io_executor async_client::executor() const { return impl_->strand; }

library_mode async_client::mode() const noexcept {
  return script_mode_.load(std::memory_order_relaxed) ? library_mode::script : library_mode::function;
}

async_stats async_client::stats() const noexcept {
  auto ld = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return async_stats{ld(connects_), ld(connect_failures_), ld(broken_),       ld(writes_),        ld(commands_),
                     ld(replies_),  ld(timeouts_),         ld(late_replies_), ld(library_loads_), ld(script_loads_)};
}

std::vector<module_path_view> async_client::module_paths() const {
  const url& u = options_.where;
  module_path_view v;
  v.node = u.is_unix()
               ? u.socket_path
               : (u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host) + ":" + std::to_string(u.port);
  v.use = u.module;
  v.caps = module();
  v.module_calls = options_.module->module_calls();
  v.library_calls = options_.module->library_calls();
  return {std::move(v)};
}

module_caps async_client::module() const { return options_.module->caps(); }

void async_client::set_module(module_caps caps) { options_.module->set(std::move(caps)); }

}  // namespace sluice::redis
