// sentinel_client: discovery through the sentinels, ROLE, the +switch-master
// subscription and the resending of calls that did not run (sentinel.hpp).
#include "redis/client/sentinel.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <charconv>
#include <cstdio>

#include "redis/client/resp.hpp"
#include "redis/client/sync_client.hpp"
#include "redis/client/tls.hpp"

namespace sluice::redis {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// A reply that says the node is not (or not yet) the master: the call did not run.
bool not_master(std::string_view msg) { return starts_with(msg, "READONLY") || starts_with(msg, "LOADING"); }

// Whether a call's outcome asks for a resend on the next master.
bool resend(const call_result& r) {
  if (const auto* rep = std::get_if<reply>(&r)) return rep->is_error() && not_master(rep->str);
  const auto& e = std::get<call_error>(r);
  return (e.kind == call_error::server && not_master(e.message)) || (e.kind == call_error::refused && !e.maybe_applied);
}

// Whether it tells that the master may have moved.
bool suspicious(const call_result& r) {
  if (resend(r)) return true;
  const auto* e = std::get_if<call_error>(&r);
  return e != nullptr && (e->kind == call_error::io || e->kind == call_error::refused);
}

}  // namespace

struct sentinel_client::impl {
  using master_fn = std::function<void(std::shared_ptr<async_client>, const call_error*)>;
  struct waiter {
    steady::time_point since;
    master_fn go;
  };

  impl(sentinel_client& o, asio::any_io_executor ex, sentinel_options op)
      : owner(o), strand(asio::make_strand(ex)), opt(std::move(op)), ping_timer(strand) {}

  sentinel_client& owner;
  asio::strand<asio::any_io_executor> strand;
  sentinel_options opt;
  std::shared_ptr<tls_context> tls;
  std::vector<std::shared_ptr<async_client>> sentinels;

  // On the strand only.
  std::shared_ptr<async_client> master;
  std::string address;  // master's host:port
  bool discovering = false;
  bool again = false;  // discover once more when the one under way ends
  bool closed = false;
  std::size_t preferred = 0;
  std::vector<waiter> waiters;
  std::shared_ptr<async_client> sub;
  asio::steady_timer ping_timer;
  std::vector<std::pair<std::shared_ptr<asio::steady_timer>, std::shared_ptr<async_client>>> retiring;
  std::string lib_name, lib_code;

  mutable std::mutex addr_mu;
  std::string shown_address;                   // requires addr_mu
  std::shared_ptr<async_client> shown_master;  // requires addr_mu (module_paths)

  std::atomic<std::uint64_t> discoveries{0}, discovery_failures{0}, switches{0}, switch_messages{0}, resent{0};

  result<std::shared_ptr<async_client>> make_client(const url& u) {
    async_client_options o;
    o.where = u;
    o.connect_timeout = opt.connect_timeout;
    o.command_timeout = opt.command_timeout;
    o.tls = tls;
    // Created on the strand: its handlers are serialised with ours.
    return async_client::create(strand, std::move(o));
  }

  void with_master(master_fn go) {
    if (closed) {
      const call_error e{call_error::io, "sentinel: the client is closed", false};
      go(nullptr, &e);
      return;
    }
    if (master && !discovering) {
      go(master, nullptr);
      return;
    }
    waiters.push_back({steady::now(), std::move(go)});
    discover();
  }

  void discover() {
    if (discovering || closed) return;
    discovering = true;
    discoveries.fetch_add(1, std::memory_order_relaxed);
    try_sentinel(0, std::make_shared<std::string>());
  }

  void try_sentinel(std::size_t k, std::shared_ptr<std::string> why) {
    if (closed) return;
    if (k == sentinels.size()) return failed(*why);
    const std::size_t idx = (preferred + k) % sentinels.size();
    const std::string who = opt.where.sentinels[idx].redacted();
    sentinels[idx]->async_call(
        {"SENTINEL", "get-master-addr-by-name", opt.where.master},
        [self = owner.shared_from_this(), k, idx, who, why](call_result r) {
          impl& m = *self->impl_;
          auto next = [&](const std::string& because) {
            *why += (why->empty() ? "" : "; ") + who + ": " + because;
            m.try_sentinel(k + 1, why);
          };
          if (auto* e = std::get_if<call_error>(&r)) return next(e->what());
          const auto* arr = std::get<reply>(r).as_array();
          if (arr == nullptr || arr->size() != 2 || !(*arr)[0].as_string() || !(*arr)[1].as_string())
            return next("does not know a master named \"" + m.opt.where.master + "\"");
          const std::string host((*arr)[0].str);
          std::uint16_t port = 0;
          const auto& ps = (*arr)[1].str;
          if (auto [p, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), port); ec != std::errc{} || port == 0)
            return next("named a port that is not one: \"" + ps + "\"");
          m.check_role(k, idx, host, port, why);
        });
  }

  void check_role(std::size_t k, std::size_t idx, const std::string& host, std::uint16_t port,
                  std::shared_ptr<std::string> why) {
    const std::string addr =
        (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
    std::shared_ptr<async_client> c;
    if (master && addr == address) {
      c = master;
    } else {
      url u = opt.where.login;
      u.host = host;
      u.port = port;
      auto made = make_client(u);
      if (!made) {
        *why += (why->empty() ? "" : "; ") + addr + ": " + made.err().what();
        return try_sentinel(k + 1, why);
      }
      c = std::move(made).value();
      if (!lib_name.empty()) (void)c->set_library(lib_name, lib_code);  // checked by set_library
    }
    c->async_call({"ROLE"}, [self = owner.shared_from_this(), k, idx, addr, c, why](call_result r) {
      impl& m = *self->impl_;
      std::string role;
      if (auto* e = std::get_if<call_error>(&r)) {
        role = e->what();
      } else if (const auto* arr = std::get<reply>(r).as_array();
                 arr != nullptr && !arr->empty() && (*arr)[0].as_string()) {
        role = (*arr)[0].str;
      }
      if (role == "master") return m.install(c, addr, idx);
      if (c != m.master) c->close();
      *why += (why->empty() ? "" : "; ") + addr + " (named by the sentinels) is not the master: ROLE " + role;
      m.try_sentinel(k + 1, why);
    });
  }

  void install(std::shared_ptr<async_client> c, const std::string& addr, std::size_t idx) {
    if (closed) {
      c->close();
      return;
    }
    if (c != master) {
      if (master) {
        // Its calls have until their deadlines; then it goes.
        auto tm = std::make_shared<asio::steady_timer>(strand, opt.connect_timeout + opt.command_timeout);
        auto old = master;
        retiring.emplace_back(tm, old);
        tm->async_wait([self = owner.shared_from_this(), tm, old](const boost::system::error_code&) {
          old->close();
          auto& r = self->impl_->retiring;
          std::erase_if(r, [&](const auto& p) { return p.first == tm; });
        });
      }
      if (!address.empty() && addr != address) switches.fetch_add(1, std::memory_order_relaxed);
      master = std::move(c);
      address = addr;
      std::lock_guard lock(addr_mu);
      shown_address = addr;
      shown_master = master;
    }
    preferred = idx;
    discovering = false;
    if (again) {
      again = false;
      discover();
      return;
    }
    auto ws = std::move(waiters);
    waiters.clear();
    const auto now = steady::now();
    for (auto& w : ws) {
      if (now - w.since > opt.command_timeout) {
        const call_error e{call_error::timeout,
                           "sentinel: no master found within the command timeout (" +
                               std::to_string(opt.command_timeout.count()) + " ms); not sent",
                           false};
        w.go(nullptr, &e);
      } else {
        w.go(master, nullptr);
      }
    }
    subscribe();
  }

  void failed(const std::string& why) {
    discovering = false;
    again = false;
    discovery_failures.fetch_add(1, std::memory_order_relaxed);
    const call_error e{call_error::refused, "sentinel: no master \"" + opt.where.master + "\" found: " + why, false};
    auto ws = std::move(waiters);
    waiters.clear();
    for (auto& w : ws) w.go(nullptr, &e);
  }

  // ------------------------------------------------------------ +switch-master

  void subscribe() {
    if (sub || closed) return;
    auto made = make_client(opt.where.sentinels[preferred]);
    if (!made) return;
    sub = std::move(made).value();
    auto s = sub;
    s->set_push_handler([self = owner.shared_from_this()](reply r) { self->impl_->on_message(r); });
    s->async_call({"SUBSCRIBE", "+switch-master"}, [self = owner.shared_from_this(), s](call_result r) {
      if (std::holds_alternative<call_error>(r)) self->impl_->unsubscribed(s);
    });
    arm_ping();
  }

  void arm_ping() {
    ping_timer.expires_after(opt.ping_interval);
    ping_timer.async_wait([self = owner.shared_from_this()](const boost::system::error_code& ec) {
      impl& m = *self->impl_;
      if (ec || m.closed || !m.sub) return;
      auto s = m.sub;
      s->async_call({"PING"}, [self, s](call_result r) {
        impl& mm = *self->impl_;
        if (std::holds_alternative<call_error>(r)) return mm.unsubscribed(s);
        mm.on_message(std::get<reply>(r));  // a message that came before the pong
      });
      m.arm_ping();
    });
  }

  // The subscription broke: another sentinel next time, and a discovery (a
  // switch may have been missed).
  void unsubscribed(const std::shared_ptr<async_client>& s) {
    if (s != sub) return;
    sub->close();
    sub.reset();
    preferred = (preferred + 1) % sentinels.size();
    discover();
  }

  void on_message(const reply& r) {
    const auto* arr = r.as_array();
    if (arr == nullptr || arr->size() != 3 || (*arr)[0].str != "message" || (*arr)[1].str != "+switch-master") return;
    // "<name> <old ip> <old port> <new ip> <new port>"
    const std::string& text = (*arr)[2].str;
    if (text.substr(0, text.find(' ')) != opt.where.master) return;
    switch_messages.fetch_add(1, std::memory_order_relaxed);
    if (discovering)
      again = true;  // the discovery under way may have asked before the switch
    else
      discover();
  }

  void close() {
    closed = true;
    ping_timer.cancel();
    for (auto& s : sentinels) s->close();
    if (sub) sub->close();
    if (master) master->close();
    for (auto& [tm, old] : retiring) {
      tm->cancel();
      old->close();
    }
    retiring.clear();
    const call_error e{call_error::io, "sentinel: the client is closed", false};
    auto ws = std::move(waiters);
    waiters.clear();
    for (auto& w : ws) w.go(nullptr, &e);
  }
};

// ---------------------------------------------------------------- sentinel_client

sentinel_client::sentinel_client(asio::any_io_executor ex, sentinel_options options)
    : impl_(std::make_unique<impl>(*this, std::move(ex), std::move(options))) {}

sentinel_client::~sentinel_client() = default;

result<std::shared_ptr<sentinel_client>> sentinel_client::create(asio::any_io_executor ex, sentinel_options options) {
  if (options.where.sentinels.empty()) return error{"sentinel", "none given"};
  std::shared_ptr<sentinel_client> c(new sentinel_client(std::move(ex), std::move(options)));
  impl& m = *c->impl_;
  if (m.opt.where.login.tls.on) {
    auto t = tls_context::make(m.opt.where.login.tls);
    if (!t) return t.err();
    m.tls = std::move(t).value();
  }
  for (const url& s : m.opt.where.sentinels) {
    auto made = m.make_client(s);
    if (!made) return made.err();
    m.sentinels.push_back(std::move(made).value());
  }
  return c;
}

result<bool> sentinel_client::set_library(std::string name, std::string code) {
  if (auto ok = check_library(name, code); !ok) return ok;
  asio::post(impl_->strand, [self = shared_from_this(), name, code] {
    impl& m = *self->impl_;
    m.lib_name = name;
    m.lib_code = code;
    if (m.master) (void)m.master->set_library(name, code);
  });
  return true;
}

void sentinel_client::async_call(std::span<const std::string_view> argv, call_handler done) {
  auto args = std::make_shared<std::vector<std::string>>(argv.begin(), argv.end());
  auto attempt = std::make_shared<std::function<void(bool)>>();
  // The closure holds itself weakly; the calls in flight hold it.
  *attempt = [self = shared_from_this(), args, done = std::move(done), weak = std::weak_ptr(attempt)](bool last) {
    auto me = weak.lock();
    self->impl_->with_master(
        [self, args, done, attempt = me, last](std::shared_ptr<async_client> m, const call_error* e) {
          if (e != nullptr) {
            return done(*e);
          }
          std::vector<std::string_view> views(args->begin(), args->end());
          m->async_call(views, [self, done, attempt, last](call_result r) {
            impl& im = *self->impl_;
            if (!last && resend(r)) {
              im.resent.fetch_add(1, std::memory_order_relaxed);
              if (!im.discovering) im.discover();
              return (*attempt)(true);
            }
            if (suspicious(r)) im.discover();
            done(std::move(r));
          });
        });
  };
  asio::post(impl_->strand, [attempt] { (*attempt)(false); });
}

void sentinel_client::async_fcall_each(std::span<const function_call> calls, each_handler done) {
  struct job {
    std::vector<owned_call> calls;
    std::vector<call_result> out;
    each_handler done;
  };
  auto j = std::make_shared<job>();
  j->calls.reserve(calls.size());
  for (const auto& fc : calls) {
    j->calls.emplace_back(fc);  // its module command and letters too: the master's connection picks the path
  }
  j->out.resize(calls.size());
  j->done = std::move(done);
  auto attempt = std::make_shared<std::function<void(std::vector<std::size_t>, bool)>>();
  *attempt = [self = shared_from_this(), j, weak = std::weak_ptr(attempt)](std::vector<std::size_t> which, bool last) {
    auto me = weak.lock();
    self->impl_->with_master(
        [self, j, attempt = me, which, last](std::shared_ptr<async_client> m, const call_error* e) {
          if (e != nullptr) {
            for (std::size_t i : which) j->out[i] = *e;
            return j->done(std::move(j->out));
          }
          std::vector<function_call> fcs;
          fcs.reserve(which.size());
          for (std::size_t i : which) {
            fcs.push_back(j->calls[i].call());
          }
          m->async_fcall_each(fcs, [self, j, attempt, which, last](std::vector<call_result> rs) {
            impl& im = *self->impl_;
            std::vector<std::size_t> again;
            bool moved = false;
            for (std::size_t k = 0; k < which.size(); ++k) {
              moved = moved || suspicious(rs[k]);
              if (!last && resend(rs[k])) again.push_back(which[k]);
              j->out[which[k]] = std::move(rs[k]);
            }
            if (moved && !im.discovering) im.discover();
            if (!again.empty()) {
              im.resent.fetch_add(again.size(), std::memory_order_relaxed);
              return (*attempt)(std::move(again), true);
            }
            j->done(std::move(j->out));
          });
        });
  };
  std::vector<std::size_t> all(calls.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (all.empty()) return j->done({});
  asio::post(impl_->strand, [attempt, all = std::move(all)]() mutable { (*attempt)(std::move(all), false); });
}

void sentinel_client::close() {
  asio::post(impl_->strand, [self = shared_from_this()] { self->impl_->close(); });
}

std::vector<module_path_view> sentinel_client::module_paths() const {
  std::lock_guard lock(impl_->addr_mu);
  if (!impl_->shown_master) return {};
  auto out = impl_->shown_master->module_paths();
  out.front().node = impl_->shown_address;
  return out;
}

std::string sentinel_client::master_address() const {
  std::lock_guard lock(impl_->addr_mu);
  return impl_->shown_address;
}

sentinel_stats sentinel_client::stats() const noexcept {
  const impl& m = *impl_;
  auto ld = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return sentinel_stats{ld(m.discoveries), ld(m.discovery_failures), ld(m.switches), ld(m.switch_messages),
                        ld(m.resent)};
}

result<std::unique_ptr<sync_client>> open_sentinel_backend(const store_options& options) {
  auto where = parse_sentinel_url(options.url);
  if (!where) return where.err();
  warn_if_unverified(where.value().login);
  sentinel_options so;
  so.where = std::move(where).value();
  so.connect_timeout = options.connect_timeout;
  so.command_timeout = options.command_timeout;
  auto c = sync_client::open([so](asio::any_io_executor ex) -> result<std::shared_ptr<async_backend>> {
    auto s = sentinel_client::create(std::move(ex), so);
    if (!s) return s.err();
    return std::shared_ptr<async_backend>(std::move(s).value());
  });
  if (!c) return c.err();
  return std::move(c).value();
}

}  // namespace sluice::redis
