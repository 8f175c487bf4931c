// invalidation_listener: the subscription, its checks and its recovery
// (invalidation.hpp).
#include "redis/store/invalidation.hpp"

#include <sys/ioctl.h>

#include "redis/client/cluster.hpp"
#include "redis/client/sentinel.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <charconv>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace sluice::redis {

namespace asio = boost::asio;

std::string invalidation_channel(std::string_view prefix) {
  std::string c(prefix);
  c.append("invalidate");
  return c;
}

void append_invalidated_key(std::string& message, std::string_view key) {
  message.append(std::to_string(key.size())).append(1, ':').append(key);
}

bool for_each_invalidated_key(std::string_view message, const std::function<void(std::string_view)>& each) {
  while (!message.empty()) {
    const std::size_t colon = message.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    std::size_t n = 0;
    const auto [p, ec] = std::from_chars(message.data(), message.data() + colon, n);
    if (ec != std::errc{} || p != message.data() + colon || n > message.size() - colon - 1) return false;
    each(message.substr(colon + 1, n));
    message.remove_prefix(colon + 1 + n);
  }
  return true;
}

result<subscription_nodes> subscription_nodes_of(const store_options& options, async_backend& backend) {
  if (is_cluster_url(options.url)) {
    auto seeds = parse_cluster_url(options.url);
    if (!seeds) return seeds.err();
    for (auto& seed : seeds.value())
      if (auto e = apply_password(seed, options.password)) return *e;
    return subscription_nodes{[seeds = std::move(seeds).value()](std::size_t attempt) -> std::optional<url> {
                                return seeds[attempt % seeds.size()];
                              },
                              false};
  }
  if (is_sentinel_url(options.url)) {
    auto where = parse_sentinel_url(options.url);
    if (!where) return where.err();
    auto* sentinel = dynamic_cast<sentinel_client*>(&backend);
    if (sentinel == nullptr) return error{"url", "a Sentinel URL without a Sentinel client", error_code::bad_store_url};
    // The master the store's own calls go to ("host:port", "[v6]:port"),
    // logged in to as they are.
    return subscription_nodes{[login = where.value().login, sentinel](std::size_t) -> std::optional<url> {
                                const std::string a = sentinel->master_address();
                                const std::size_t colon = a.rfind(':');
                                if (a.empty() || colon == std::string::npos) return std::nullopt;
                                url u = login;
                                u.host = a.substr(0, colon);
                                if (u.host.size() >= 2 && u.host.front() == '[')
                                  u.host = u.host.substr(1, u.host.size() - 2);
                                const std::string_view port = std::string_view(a).substr(colon + 1);
                                if (std::from_chars(port.data(), port.data() + port.size(), u.port).ec != std::errc{})
                                  return std::nullopt;
                                return u;
                              },
                              true};
  }
  auto one = parse_url(options.url);
  if (!one) return one.err();
  if (auto e = apply_password(one.value(), options.password)) return *e;
  return subscription_nodes{[u = std::move(one).value()](std::size_t) -> std::optional<url> { return u; }, false};
}

namespace {

bool same_node(const url& a, const url& b) {
  return a.host == b.host && a.port == b.port && a.socket_path == b.socket_path;
}

// The pause before subscribing again after a failure: 5 ms doubling to 1 s.
constexpr std::chrono::milliseconds first_pause{5}, last_pause{1000};

}  // namespace

struct invalidation_listener::impl {
  impl(invalidation_listener& o, std::string ch, locate w, bool f, async_client_options b, remote::deny_cache& c)
      : owner(o), channel(std::move(ch)), where(std::move(w)), follow(f), base(std::move(b)), cache(c) {}

  invalidation_listener& owner;
  const std::string channel;
  const locate where;
  const bool follow;
  const async_client_options base;
  remote::deny_cache& cache;

  asio::io_context ctx{1};
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ctx);
  asio::steady_timer timer{ctx};
  asio::steady_timer retry{ctx};

  // On the thread only.
  std::shared_ptr<async_client> client;  // the subscribing connection, if any
  url node;                              // where it is
  std::size_t attempt = 0;
  std::chrono::milliseconds pause{0};
  bool stopping = false;

  std::atomic<std::uint64_t> invalidations{0}, subscriptions{0};
  std::mutex wait_mu;  // wait_subscribed
  std::condition_variable wait_cv;
  std::thread thread;
  std::future<void> ended;  // ready when the thread has returned from run()

  // Nothing may answer from the cache, and nothing it held stays.
  void down() {
    owner.up_.store(false);
    owner.fd_.store(-1);
    cache.clear();
  }

  void subscribe() {
    if (stopping || client) return;
    const auto u = where(attempt++);
    if (!u) return again();
    async_client_options o = base;
    o.where = *u;
    o.where.module = module_use::off;  // a subscriber decides nothing: not probed
    o.reading = &owner.reading_;
    auto made = async_client::create(ctx.get_executor(), std::move(o));
    if (!made) return again();
    client = std::move(made).value();
    node = *u;
    auto c = client;
    c->set_push_handler([this, c](reply r) { heard(c, r); });
    c->set_lost_handler([this, c] { lost(c); });
    c->async_call({"SUBSCRIBE", channel}, [this, c](call_result r) {
      if (c != client) return;
      const auto* rep = std::get_if<reply>(&r);
      const auto* arr = rep != nullptr ? rep->as_array() : nullptr;
      if (arr == nullptr || arr->size() != 3 || (*arr)[0].str != "subscribe" || (*arr)[1].str != channel)
        return lost(c);
      // Confirmed: every change from now on reaches this connection. What
      // the cache held may predate one it missed, so it starts empty; the
      // emptying also moves its generation, so a denial whose call went out
      // before now is not cached when its reply comes.
      cache.clear();
      {
        const std::lock_guard lock(wait_mu);
        // Over TLS no read is gated: fd_ stays -1 and the cache never
        // answers (caught_up), though denials are still cached.
        owner.fd_.store(c->gated() ? c->socket_fd() : -1);
        owner.up_.store(true);
      }
      wait_cv.notify_all();
      subscriptions.fetch_add(1, std::memory_order_relaxed);
      pause = std::chrono::milliseconds{0};
    });
  }

  // Subscribes again after a pause that doubles while it fails.
  void again() {
    if (stopping) return;
    pause = pause.count() == 0 ? first_pause : std::min(last_pause, pause * 2);
    retry.expires_after(pause);
    retry.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) subscribe();
    });
  }

  void lost(const std::shared_ptr<async_client>& c) {
    if (c != client) return;
    down();
    client->close();
    client.reset();
    again();
  }

  void heard(const std::shared_ptr<async_client>& c, const reply& r) {
    if (c != client) return;
    const auto* arr = r.as_array();
    if (arr == nullptr || arr->size() != 3 || (*arr)[0].str != "message" || (*arr)[1].str != channel) return;
    invalidations.fetch_add(1, std::memory_order_relaxed);
    // A message it cannot read may have named any key: nothing cached stays.
    if (!for_each_invalidated_key((*arr)[2].str, [this](std::string_view key) { cache.forget_key(key); }))
      cache.clear();
  }

  // Every tick: the connection still answers (a PING within the command
  // timeout) and, when following, is still where `where` says.
  void check() {
    timer.expires_after(invalidation_listener::tick);
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping) return;
      check();
      if (!client) return;
      if (follow) {
        const auto u = where(0);
        if (!u || !same_node(*u, node)) return lost(client);
      }
      auto c = client;
      c->async_call({"PING"}, [this, c](call_result r) {
        if (std::holds_alternative<call_error>(r)) return lost(c);
        heard(c, std::get<reply>(r));  // a message that came before the pong
      });
    });
  }

  void stop() {
    std::promise<void> closed;
    asio::post(ctx, [this, &closed] {
      stopping = true;
      down();
      timer.cancel();
      retry.cancel();
      if (client) client->close();
      closed.set_value();
    });
    closed.get_future().wait();
    // The close's aborted reads and timers run, then the thread ends; a
    // handler still pending after a second (a connect that ignores its
    // cancel) is dropped with the context, never waited on for good.
    asio::post(ctx, [this] { work.reset(); });
    if (ended.wait_for(std::chrono::seconds(1)) != std::future_status::ready) ctx.stop();
    if (thread.joinable()) thread.join();
    client.reset();
  }
};

invalidation_listener::invalidation_listener(std::string channel, locate where, bool follow, async_client_options base,
                                             remote::deny_cache& cache)
    : impl_(std::make_unique<impl>(*this, std::move(channel), std::move(where), follow, std::move(base), cache)) {
  impl& m = *impl_;
  asio::post(m.ctx, [&m] {
    m.subscribe();
    m.check();
  });
  std::promise<void> ended;
  m.ended = ended.get_future();
  m.thread = std::thread([&m, e = std::move(ended)]() mutable {
    m.ctx.run();
    e.set_value();
  });
}

invalidation_listener::~invalidation_listener() { impl_->stop(); }

bool invalidation_listener::caught_up() const noexcept {
  // Why a denial looked up after this returns true is never one that a
  // message which reached this machine before the call has ended (every
  // access seq_cst; docs/redis.md, "The deny cache"):
  //  (a) no byte waits in the socket, then (b) reading_ is false, then the
  //  caller looks the entry up (c). The listener raises reading_ before it
  //  reads a byte and lowers it only after every key of every message read
  //  is forgotten. A message that was in the socket before the call is
  //  either still unread at (a): the call goes to Redis; or the listener
  //  took it, which it did after raising reading_: at (b) the flag is
  //  either still up (the call goes to Redis), or down again, which comes
  //  after its keys were forgotten, so the lookup at (c) misses them.
  // The descriptor is cleared after up_ and before the socket closes, so a
  // descriptor reused meanwhile is read only when up_ is already false.
  const int fd = fd_.load();
  if (fd < 0) return false;
  int waiting = 0;
  if (::ioctl(fd, FIONREAD, &waiting) != 0 || waiting != 0) return false;  // (a)
  if (reading_.load()) return false;                                       // (b)
  return up_.load();
}

bool invalidation_listener::wait_subscribed(std::chrono::milliseconds most) {
  std::unique_lock lock(impl_->wait_mu);
  return impl_->wait_cv.wait_for(lock, most, [this] { return subscribed(); });
}

listener_figures invalidation_listener::figures() const noexcept {
  return listener_figures{subscribed(), impl_->invalidations.load(std::memory_order_relaxed),
                          impl_->subscriptions.load(std::memory_order_relaxed)};
}

}  // namespace sluice::redis
