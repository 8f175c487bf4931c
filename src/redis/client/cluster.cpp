// cluster_client: the slot map, one async_client per node, and the routing
// of each batch in rounds (redirections, retries after a timer's pause,
// split batches written before any is read), all on the router's strand
// (cluster.hpp).
#include "redis/client/cluster.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <charconv>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "redis/client/resp.hpp"

namespace sluice::redis {

namespace asio = boost::asio;

namespace {

using steady = std::chrono::steady_clock;

/// The most nodes the router keeps (each has its own connection); a reply
/// naming more is not believed.
constexpr std::size_t max_nodes = 1024;

/// The most rounds one batch goes through (each follows a redirection,
/// bounded per call, or a pause, bounded by the deadline).
constexpr int max_rounds = 256;

/// A decimal integer in [lo, hi], the whole of `s`.
std::optional<std::int64_t> whole_number(std::string_view s, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

/// What a cluster error reply asks of the router.
struct redirect {
  enum kind_t : std::uint8_t { none, moved, ask, tryagain, clusterdown } kind = none;
  std::uint16_t slot = 0;
  std::string_view address;
};

/// Reads "MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381", "TRYAGAIN
/// ..." and "CLUSTERDOWN ..."; any other error is `none` (the call's own).
redirect classify(std::string_view msg) {
  redirect r;
  if (msg.starts_with("TRYAGAIN")) {
    r.kind = redirect::tryagain;
    return r;
  }
  if (msg.starts_with("CLUSTERDOWN")) {
    r.kind = redirect::clusterdown;
    return r;
  }
  const bool moved = msg.starts_with("MOVED ");
  if (!moved && !msg.starts_with("ASK ")) return r;
  const std::string_view rest = msg.substr(moved ? 6 : 4);
  const auto space = rest.find(' ');
  if (space == std::string_view::npos) return r;
  const auto slot = whole_number(rest.substr(0, space), 0, slot_count - 1);
  if (!slot) return r;
  r.kind = moved ? redirect::moved : redirect::ask;
  r.slot = static_cast<std::uint16_t>(*slot);
  r.address = rest.substr(space + 1);
  return r;
}

/// Whether a reply from a node is its failure, for its breaker: an error
/// reply other than a redirection, TRYAGAIN, or the library's own
/// (`sluice: ...`: about a key's value, not the node). CLUSTERDOWN is one.
bool node_failed(const reply& rep) {
  if (!rep.is_error()) return false;
  const redirect d = classify(rep.str);
  if (d.kind == redirect::moved || d.kind == redirect::ask || d.kind == redirect::tryagain) return false;
  return !rep.str.starts_with("sluice:");
}

/// One node of the cluster: its address, its client, its breaker.
struct node {
  std::string address;  // "host:port"
  std::string host;
  std::uint16_t index = 0;  // in impl::nodes
  std::shared_ptr<async_client> cli;
  std::unique_ptr<remote::circuit_breaker> breaker;  // null: none

  /// Whether a call may be sent to it now (a breaker that is half-open lets
  /// this one through as its probe).
  bool allow() const { return !breaker || breaker->allow_call_now(); }
  /// Whether its breaker is open or half-open (no call is to be sent
  /// without need).
  bool tripped() const noexcept { return breaker && breaker->current() != remote::circuit_breaker::state::closed; }
};

/// One call on its way: where it goes next and why it was sent again.
struct job {
  std::size_t index = 0;  // in the batch's calls
  int slot = -1;          // -1: the call names no key
  node* ask = nullptr;    // the ASK target for the next send, if any
  int redirects = 0;
  call_error last{};  // why it is being sent again (its answer if time runs out)
};

/// One async_fcall_each from its start to its answer.
struct batch {
  std::vector<owned_call> calls;
  std::vector<call_result> out;
  std::vector<job> jobs;  // to send in the next round
  steady::time_point deadline{};
  std::chrono::milliseconds pause{};
  int round = 0;
  each_handler done;
  // The round in flight.
  std::vector<job> again;
  bool wait = false;
  bool want_refresh = false;
  std::size_t outstanding = 0;
};

/// The calls of one round that go to one node (after ASKING or not).
struct group {
  node* target = nullptr;
  bool asking = false;
  std::vector<std::size_t> jobs;  // indices into batch::jobs
};

}  // namespace

struct cluster_client::impl {
  impl(cluster_client& o, asio::any_io_executor ex, cluster_options op)
      : owner(o), strand(asio::make_strand(ex)), opt(std::move(op)) {}

  cluster_client& owner;
  asio::strand<asio::any_io_executor> strand;
  cluster_options opt;

  mutable std::shared_mutex nodes_mu;
  std::vector<std::unique_ptr<node>> nodes;                     // append-only, on the strand; requires nodes_mu
  std::unordered_map<std::string, std::size_t> by_address;      // requires nodes_mu
  std::array<std::atomic<std::uint16_t>, slot_count> owners{};  // node index + 1; 0: unknown

  std::mutex lib_mu;
  std::string lib_name, lib_code;  // requires lib_mu

  // On the strand only.
  bool closed = false;
  bool refreshing = false;
  bool refresh_wanted = true;
  steady::time_point last_refresh{};
  bool refreshed_once = false;
  std::string refresh_error;  // why the last refresh failed
  std::vector<std::function<void()>> refresh_waiters;
  std::unordered_set<asio::steady_timer*> pauses;  // in flight, cancelled by close

  std::atomic<std::uint64_t> moved{0}, asked{0}, tryagain{0}, clusterdown{0}, refused{0}, refreshes{0},
      refresh_failures{0}, breaker_rejected{0};

  void record(node& n, bool failed, bool& success_told, std::optional<failure_reason> why) const {
    if (!n.breaker) return;
    if (failed) {
      if (n.breaker->record_failure_now() && opt.on_breaker_change) opt.on_breaker_change(n.address, false, why);
      success_told = false;
    } else if (!success_told) {
      if (n.breaker->record_success_now() && opt.on_breaker_change)
        opt.on_breaker_change(n.address, true, std::nullopt);
      success_told = true;
    }
  }

  node* node_by_index(std::uint16_t at) const {
    if (at == 0) return nullptr;
    std::shared_lock lock(nodes_mu);
    return at <= nodes.size() ? nodes[at - 1U].get() : nullptr;
  }

  /// The node at "host:port" (`fallback_host` for an empty host), made on
  /// first sight; null for an address the router cannot use.
  node* node_at(std::string_view address, std::string_view fallback_host) {
    const auto colon = address.rfind(':');
    if (colon == std::string_view::npos) return nullptr;
    std::string host(address.substr(0, colon));
    const auto port = whole_number(address.substr(colon + 1), 1, 65535);
    if (!port) return nullptr;
    if (host.empty()) host = std::string(fallback_host);  // "the host you asked"
    if (host.empty() || host == "?") return nullptr;      // an endpoint the node does not know
    const std::string key = host + ":" + std::to_string(*port);
    {
      std::shared_lock lock(nodes_mu);
      if (const auto it = by_address.find(key); it != by_address.end()) return nodes[it->second].get();
      if (nodes.size() >= max_nodes) return nullptr;
    }
    async_client_options co;
    co.where = opt.seeds.empty() ? url{} : opt.seeds.front();
    co.where.host = host;
    co.where.port = static_cast<std::uint16_t>(*port);
    co.where.socket_path.clear();
    co.where.db = 0;
    co.connect_timeout = opt.connect_timeout;
    co.command_timeout = opt.command_timeout;
    co.keepalive = opt.keepalive;
    // On the router's strand: the node's handlers are serialised with ours.
    auto made = async_client::create(strand, std::move(co));
    if (!made) return nullptr;
    auto n = std::make_unique<node>();
    n->address = key;
    n->host = host;
    n->cli = std::move(made).value();
    if (opt.breaker_failures > 0) {
      remote::circuit_breaker_options bo;
      bo.consecutive_failures = opt.breaker_failures;
      bo.cool_down = std::chrono::duration_cast<std::chrono::nanoseconds>(opt.breaker_cool_down).count();
      n->breaker = std::make_unique<remote::circuit_breaker>(bo);
    }
    // Under lib_mu until it is listed: a set_library meanwhile reaches it.
    std::lock_guard lib_lock(lib_mu);
    if (!lib_name.empty()) (void)n->cli->set_library(lib_name, lib_code);  // checked by set_library
    std::unique_lock lock(nodes_mu);
    n->index = static_cast<std::uint16_t>(nodes.size());
    by_address.emplace(key, nodes.size());
    nodes.push_back(std::move(n));
    return nodes.back().get();
  }

  /// The primary of `slot` (-1: of the lowest slot with a known owner).
  node* owner_of(int slot) const {
    std::uint16_t at = 0;
    if (slot >= 0) {
      at = owners[static_cast<std::size_t>(slot)].load(std::memory_order_relaxed);
    } else {
      for (std::size_t s = 0; s < slot_count && at == 0; ++s) at = owners[s].load(std::memory_order_relaxed);
    }
    return node_by_index(at);
  }

  bool have_map() const { return owners[0].load(std::memory_order_relaxed) != 0; }

  /// Every primary of the slot map, once each, for a command to all of
  /// them; nullopt when a slot has no known owner (an answer would be
  /// short), when one's breaker is open (a hung node would make it wait its
  /// timeout), or once closed. On the strand.
  std::optional<std::vector<node*>> primaries_now() const {
    std::vector<node*> out;
    for (std::size_t s = 0; s < slot_count; ++s) {
      node* n = node_by_index(owners[s].load(std::memory_order_relaxed));
      if (n == nullptr) return std::nullopt;
      if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    }
    for (const node* n : out)
      if (n->tripped() || closed) return std::nullopt;
    return out;
  }

  // ------------------------------------------------------------ the slot map

  /// Calls `then` once the map is fit to route with: at once unless a
  /// refresh is wanted (or `force`: no map yet) and allowed by the rate
  /// limit; when one runs (or starts now), `then` waits for it only with
  /// `force` or `wait`, else it goes on with the map there is.
  void maybe_refresh(bool force, bool wait, std::function<void()> then) {
    if (!force && !refresh_wanted) return then();
    if (!refreshing) {
      if (refreshed_once && steady::now() - last_refresh < opt.refresh_interval) return then();
      start_refresh();
    }
    if (refreshing && (force || wait)) return refresh_waiters.push_back(std::move(then));
    then();
  }

  void start_refresh() {
    // Ask the nodes that serve slots now, then the seeds, then any other.
    std::vector<node*> candidates;
    for (std::size_t s = 0; s < slot_count; ++s) {
      node* n = node_by_index(owners[s].load(std::memory_order_relaxed));
      if (n != nullptr && std::find(candidates.begin(), candidates.end(), n) == candidates.end())
        candidates.push_back(n);
    }
    for (const url& seed : opt.seeds) {
      node* n = node_at(seed.host + ":" + std::to_string(seed.port), "");
      if (n != nullptr && std::find(candidates.begin(), candidates.end(), n) == candidates.end())
        candidates.push_back(n);
    }
    {
      std::shared_lock lock(nodes_mu);
      for (const auto& n : nodes)
        if (std::find(candidates.begin(), candidates.end(), n.get()) == candidates.end()) candidates.push_back(n.get());
    }
    // A node whose breaker is open (hung, or down) is asked last: it would
    // only make this refresh wait for its timeout.
    std::stable_partition(candidates.begin(), candidates.end(), [](const node* n) { return !n->tripped(); });
    refreshing = true;
    refreshed_once = true;
    last_refresh = steady::now();
    try_refresh(std::make_shared<std::vector<node*>>(std::move(candidates)), 0, "no seed node");
  }

  void try_refresh(std::shared_ptr<std::vector<node*>> candidates, std::size_t k, std::string why) {
    if (closed) return end_refresh(false, "the client is closed");
    if (k >= candidates->size()) return end_refresh(false, std::move(why));
    node* n = (*candidates)[k];
    n->cli->async_call({"CLUSTER", "SLOTS"}, [self = owner.shared_from_this(), candidates, k, n](call_result r) {
      impl& m = *self->impl_;
      std::string because;
      if (m.read_map(*n, r, because)) return m.end_refresh(true, {});
      m.try_refresh(candidates, k + 1, std::move(because));
    });
  }

  /// Installs the map of a CLUSTER SLOTS reply from `n`; false (and `why`)
  /// when it is an error or has an unexpected shape.
  bool read_map(const node& n, const call_result& r, std::string& why) {
    if (const auto* e = std::get_if<call_error>(&r)) {
      why = n.address + ": " + e->what();
      return false;
    }
    const auto* ranges = std::get<reply>(r).as_array();
    why = n.address + ": CLUSTER SLOTS answered an unexpected shape";
    if (ranges == nullptr) return false;
    std::vector<std::uint16_t> map(slot_count, 0);
    bool any = false;
    for (const reply& range : *ranges) {
      // [start, end, [host, port, id, ...], replicas...]
      const auto* f = range.as_array();
      if (f == nullptr || f->size() < 3) return false;
      const auto start = (*f)[0].as_integer();
      const auto end = (*f)[1].as_integer();
      const auto* primary = (*f)[2].as_array();
      if (!start || !end || *start < 0 || *end < *start || *end >= slot_count || primary == nullptr ||
          primary->size() < 2)
        return false;
      const auto host = (*primary)[0].as_string();
      const auto port = (*primary)[1].as_integer();
      if (!host || !port) return false;
      node* owner_node = node_at(std::string(*host) + ":" + std::to_string(*port), n.host);
      if (owner_node == nullptr) continue;  // an unknown endpoint: those slots stay unknown
      for (auto s = *start; s <= *end; ++s)
        map[static_cast<std::size_t>(s)] = static_cast<std::uint16_t>(owner_node->index + 1U);
      any = true;
    }
    if (!any) return false;
    for (std::size_t s = 0; s < slot_count; ++s) owners[s].store(map[s], std::memory_order_relaxed);
    return true;
  }

  void end_refresh(bool ok, std::string why) {
    refreshing = false;
    if (ok) {
      refreshes.fetch_add(1, std::memory_order_relaxed);
      refresh_wanted = false;
      refresh_error.clear();
    } else {
      refresh_failures.fetch_add(1, std::memory_order_relaxed);
      refresh_error = std::move(why);
    }
    auto ws = std::move(refresh_waiters);
    refresh_waiters.clear();
    for (auto& w : ws) w();
  }

  // ------------------------------------------------------------ routing

  void send_round(const std::shared_ptr<batch>& b) {
    if (closed) {
      const call_error e{call_error::io, "cluster: the client is closed", false};
      for (const job& jb : b->jobs) b->out[jb.index] = e;
      return b->done(std::move(b->out));
    }
    ++b->round;
    b->again.clear();
    b->wait = b->want_refresh = false;
    std::vector<group> groups;
    for (std::size_t j = 0; j < b->jobs.size(); ++j) {
      job& jb = b->jobs[j];
      node* target = jb.ask != nullptr ? jb.ask : owner_of(jb.slot);
      if (target == nullptr) {
        const std::string why = refresh_error.empty() ? "" : "; the slot map's last read failed: " + refresh_error;
        jb.last =
            call_error{call_error::refused, "no node is known to serve slot " + std::to_string(jb.slot) + why, false};
        b->again.push_back(jb);
        b->wait = b->want_refresh = true;
        continue;
      }
      const bool asking = jb.ask != nullptr;
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const group& x) { return x.target == target && x.asking == asking; });
      if (g == groups.end()) g = groups.insert(groups.end(), group{target, asking, {}});
      g->jobs.push_back(j);
    }
    // Every node's pipeline is written before any reply is read (the
    // replies come back on this strand, after this function); a node whose
    // breaker is open gets none.
    b->outstanding = 1;
    for (group& g : groups) {
      if (!g.target->allow()) {
        // Not sent: each call fails at once, and the slot map is read again
        // soon (a failover may have given the node's slots to another).
        breaker_rejected.fetch_add(g.jobs.size(), std::memory_order_relaxed);
        const call_error open{call_error::breaker,
                              "not sent: the circuit breaker of " + g.target->address + " is open after " +
                                  std::to_string(opt.breaker_failures) + " failed calls in a row",
                              false};
        for (std::size_t j : g.jobs) b->out[b->jobs[j].index] = open;
        refresh_wanted = true;
        continue;
      }
      std::vector<function_call> fcs;
      fcs.reserve(g.jobs.size());
      for (std::size_t j : g.jobs) {
        fcs.push_back(b->calls[b->jobs[j].index].call());
      }
      ++b->outstanding;
      auto sent = std::make_shared<group>(std::move(g));
      auto on_replies = [self = owner.shared_from_this(), b, sent](std::vector<call_result> rs) {
        impl& m = *self->impl_;
        m.on_group(*b, *sent, rs);
        if (--b->outstanding == 0) m.end_round(b);
      };
      if (sent->asking) {
        sent->target->cli->async_fcall_each_asking(fcs, std::move(on_replies));
      } else {
        sent->target->cli->async_fcall_each(fcs, std::move(on_replies));
      }
    }
    if (--b->outstanding == 0) end_round(b);
  }

  void on_group(batch& b, const group& g, std::vector<call_result>& rs) {
    bool success_told = false;
    for (std::size_t k = 0; k < g.jobs.size(); ++k) {
      job& jb = b.jobs[g.jobs[k]];
      if (auto* e = std::get_if<call_error>(&rs[k])) {
        record(*g.target, true, success_told, reason_of(*e));
        // Refused, or no connection before the connect timeout: nothing was
        // sent, so it may go again. Anything after sending may have run.
        const bool unsent = !e->maybe_applied && (e->kind == call_error::refused || e->kind == call_error::timeout);
        if (!unsent) {
          b.out[jb.index] = std::move(*e);
          continue;
        }
        refused.fetch_add(1, std::memory_order_relaxed);
        jb.last = std::move(*e);
        jb.ask = nullptr;
        b.again.push_back(jb);
        b.wait = b.want_refresh = true;
        continue;
      }
      reply& rep = std::get<reply>(rs[k]);
      const bool failed = node_failed(rep);
      record(*g.target, failed, success_told, failed ? reason_of_reply(rep.str) : std::nullopt);
      const redirect d = rep.is_error() ? classify(rep.str) : redirect{};
      if (d.kind == redirect::none) {
        b.out[jb.index] = std::move(rep);
        continue;
      }
      jb.last = call_error{call_error::server, rep.str, false};
      switch (d.kind) {
        case redirect::moved:
        case redirect::ask: {
          node* to = node_at(d.address, g.target->host);
          if (to == nullptr || ++jb.redirects > opt.max_redirects) {
            jb.last.message += to == nullptr ? " (an address the router cannot use)" : " (too many redirections)";
            b.out[jb.index] = jb.last;
            continue;
          }
          if (d.kind == redirect::moved) {
            moved.fetch_add(1, std::memory_order_relaxed);
            owners[d.slot].store(static_cast<std::uint16_t>(to->index + 1U), std::memory_order_relaxed);
            jb.ask = nullptr;
            b.want_refresh = true;
          } else {
            asked.fetch_add(1, std::memory_order_relaxed);
            jb.ask = to;
          }
          break;
        }
        case redirect::tryagain:
          tryagain.fetch_add(1, std::memory_order_relaxed);
          b.wait = true;  // the ASK target (if any) stays: the migration is under way
          break;
        case redirect::clusterdown:
          clusterdown.fetch_add(1, std::memory_order_relaxed);
          jb.ask = nullptr;
          b.wait = b.want_refresh = true;
          break;
        case redirect::none:
          break;
      }
      b.again.push_back(jb);
    }
  }

  void end_round(const std::shared_ptr<batch>& b) {
    if (b->again.empty()) return b->done(std::move(b->out));
    // Calls sent again keep their order.
    std::sort(b->again.begin(), b->again.end(), [](const job& x, const job& y) { return x.index < y.index; });
    b->jobs = std::move(b->again);
    b->again.clear();
    if (b->want_refresh) refresh_wanted = true;
    const auto give_up = [&] {
      for (const job& jb : b->jobs) b->out[jb.index] = jb.last;
      b->done(std::move(b->out));
    };
    if (closed || b->round >= max_rounds) return give_up();
    if (!b->wait) {
      return maybe_refresh(false, false, [self = owner.shared_from_this(), b] { self->impl_->send_round(b); });
    }
    if (steady::now() + b->pause > b->deadline) return give_up();
    auto timer = std::make_shared<asio::steady_timer>(strand, b->pause);
    b->pause = std::min<std::chrono::milliseconds>(b->pause * 2, std::chrono::milliseconds(50));
    pauses.insert(timer.get());
    timer->async_wait([self = owner.shared_from_this(), b, timer](const boost::system::error_code&) {
      impl& m = *self->impl_;
      m.pauses.erase(timer.get());
      // After a pause the call waits for the refresh it asked for.
      m.maybe_refresh(false, true, [self, b] { self->impl_->send_round(b); });
    });
  }

  void close() {
    closed = true;
    for (asio::steady_timer* t : pauses) t->cancel();
    pauses.clear();
    std::shared_lock lock(nodes_mu);
    for (const auto& n : nodes) n->cli->close();
  }
};

cluster_client::cluster_client(asio::any_io_executor ex, cluster_options options)
    : impl_(std::make_unique<impl>(*this, std::move(ex), std::move(options))) {}

cluster_client::~cluster_client() = default;

result<std::shared_ptr<cluster_client>> cluster_client::create(asio::any_io_executor ex, cluster_options options) {
  if (options.seeds.empty()) return error{"seed", "none given"};
  return std::shared_ptr<cluster_client>(new cluster_client(std::move(ex), std::move(options)));
}

result<bool> cluster_client::set_library(std::string name, std::string code) {
  if (auto ok = check_library(name, code); !ok) return ok;
  std::lock_guard lib_lock(impl_->lib_mu);
  impl_->lib_name = name;
  impl_->lib_code = code;
  std::shared_lock lock(impl_->nodes_mu);
  for (const auto& n : impl_->nodes)
    if (auto ok = n->cli->set_library(name, code); !ok) return ok;
  return true;
}

void cluster_client::set_on_breaker_change(
    std::function<void(const std::string& node, bool healthy, std::optional<failure_reason> why)> f) {
  impl_->opt.on_breaker_change = std::move(f);
}

void cluster_client::async_fcall_each(std::span<const function_call> calls, each_handler done) {
  if (calls.empty()) return done({});
  auto b = std::make_shared<batch>();
  b->calls.reserve(calls.size());
  b->jobs.resize(calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const function_call& fc = calls[i];
    b->calls.emplace_back(fc);  // its module command and letters too: each node picks its path
    b->jobs[i].index = i;
    if (fc.num_keys > 0 && !fc.keys_then_args.empty()) b->jobs[i].slot = key_slot(fc.keys_then_args.front());
  }
  b->out.resize(calls.size());
  b->deadline = steady::now() + impl_->opt.command_timeout;
  b->pause = impl_->opt.retry_pause;
  b->done = std::move(done);
  asio::post(impl_->strand, [self = shared_from_this(), b] {
    impl& m = *self->impl_;
    m.maybe_refresh(!m.have_map(), false, [self, b] { self->impl_->send_round(b); });
  });
}

void cluster_client::async_call(std::span<const std::string_view> argv, call_handler done) {
  auto args = std::make_shared<std::vector<std::string>>(argv.begin(), argv.end());
  asio::post(impl_->strand, [self = shared_from_this(), args, done = std::move(done)]() mutable {
    impl& m = *self->impl_;
    m.maybe_refresh(!m.have_map(), false, [self, args, done = std::move(done)]() mutable {
      impl& mm = *self->impl_;
      node* n = mm.closed ? nullptr : mm.owner_of(-1);
      if (n == nullptr)
        return done(call_error{
            call_error::refused,
            mm.closed ? "cluster: the client is closed" : "cluster: no node is known to serve a slot", false});
      std::vector<std::string_view> views(args->begin(), args->end());
      n->cli->async_call(views, std::move(done));
    });
  });
}

void cluster_client::async_count_keys(count_handler done) {
  asio::post(impl_->strand, [self = shared_from_this(), done = std::move(done)]() mutable {
    impl& m = *self->impl_;
    m.maybe_refresh(!m.have_map(), false, [self, done = std::move(done)]() mutable {
      const auto found = self->impl_->primaries_now();
      if (!found) return done(std::nullopt);
      const std::vector<node*>& primaries = *found;
      struct sum {
        std::size_t left = 0;
        std::uint64_t total = 0;
        bool failed = false;
        count_handler done;
      };
      auto s = std::make_shared<sum>(sum{primaries.size(), 0, false, std::move(done)});
      for (node* n : primaries)
        n->cli->async_count_keys([s](std::optional<std::uint64_t> k) {
          if (k) {
            s->total += *k;
          } else {
            s->failed = true;
          }
          if (--s->left == 0) s->done(s->failed ? std::nullopt : std::optional<std::uint64_t>(s->total));
        });
    });
  });
}

void cluster_client::async_call_every_primary(std::span<const std::string_view> argv, each_handler done) {
  std::vector<std::string> args(argv.begin(), argv.end());
  asio::post(impl_->strand, [self = shared_from_this(), args = std::move(args), done = std::move(done)]() mutable {
    impl& m = *self->impl_;
    m.maybe_refresh(!m.have_map(), false, [self, args = std::move(args), done = std::move(done)]() mutable {
      const auto found = self->impl_->primaries_now();
      if (!found) return done({});
      const std::vector<node*>& primaries = *found;
      struct gathered {
        std::mutex mu;  // each primary's handler runs on its own client's strand
        std::size_t left = 0;
        std::vector<call_result> out;
        each_handler done;
      };
      auto g = std::make_shared<gathered>();
      g->left = primaries.size();
      g->done = std::move(done);
      const std::vector<std::string_view> views(args.begin(), args.end());
      for (node* n : primaries)
        n->cli->async_call(views, [g](call_result r) {
          std::unique_lock lock(g->mu);
          g->out.push_back(std::move(r));
          if (--g->left != 0) return;
          auto out = std::move(g->out);
          lock.unlock();
          g->done(std::move(out));
        });
    });
  });
}

void cluster_client::async_scan(std::string match, std::size_t most, keys_handler done) {
  asio::post(
      impl_->strand, [self = shared_from_this(), match = std::move(match), most, done = std::move(done)]() mutable {
        impl& m = *self->impl_;
        m.maybe_refresh(!m.have_map(), false, [self, match = std::move(match), most, done = std::move(done)]() mutable {
          const auto found = self->impl_->primaries_now();
          if (!found) return done(std::nullopt);
          const std::vector<node*>& primaries = *found;
          struct merged {
            std::size_t left = 0;
            std::vector<std::string> keys;
            bool failed = false;
            keys_handler done;
          };
          auto s = std::make_shared<merged>();
          s->left = primaries.size();
          s->done = std::move(done);
          // Each primary's handler runs on its own client's strand: the merge
          // is guarded.
          auto mu = std::make_shared<std::mutex>();
          for (node* n : primaries)
            n->cli->async_scan(match, most, [s, mu](std::optional<std::vector<std::string>> k) {
              std::unique_lock lock(*mu);
              if (k) {
                for (auto& x : *k) s->keys.push_back(std::move(x));
              } else {
                s->failed = true;
              }
              if (--s->left != 0) return;
              lock.unlock();
              s->done(s->failed ? std::nullopt : std::optional<std::vector<std::string>>(std::move(s->keys)));
            });
        });
      });
}

void cluster_client::async_refresh(std::function<void(bool)> done) {
  asio::post(impl_->strand, [self = shared_from_this(), done = std::move(done)]() mutable {
    impl& m = *self->impl_;
    if (!m.refreshing) m.start_refresh();
    if (!m.refreshing) return done(m.refresh_error.empty());  // no node to ask
    m.refresh_waiters.push_back([self, done = std::move(done)] { done(self->impl_->refresh_error.empty()); });
  });
}

void cluster_client::close() {
  asio::post(impl_->strand, [self = shared_from_this()] { self->impl_->close(); });
}

std::vector<std::pair<std::string, remote::circuit_breaker::state>> cluster_client::breaker_states() const {
  std::vector<std::pair<std::string, remote::circuit_breaker::state>> out;
  std::shared_lock lock(impl_->nodes_mu);
  for (const auto& n : impl_->nodes)
    if (n->breaker) out.emplace_back(n->address, n->breaker->current());
  return out;
}

std::vector<module_path_view> cluster_client::module_paths() const {
  std::vector<module_path_view> out;
  std::shared_lock lock(impl_->nodes_mu);
  for (const auto& n : impl_->nodes) {
    auto one = n->cli->module_paths();
    one.front().node = n->address;
    out.push_back(std::move(one.front()));
  }
  return out;
}

std::string cluster_client::owner_of(std::uint16_t slot) const {
  const node* n = impl_->owner_of(slot < slot_count ? slot : 0);
  return n == nullptr ? std::string() : n->address;
}

cluster_stats cluster_client::stats() const noexcept {
  const impl& m = *impl_;
  cluster_stats s;
  s.moved = m.moved.load(std::memory_order_relaxed);
  s.asked = m.asked.load(std::memory_order_relaxed);
  s.tryagain = m.tryagain.load(std::memory_order_relaxed);
  s.clusterdown = m.clusterdown.load(std::memory_order_relaxed);
  s.refused = m.refused.load(std::memory_order_relaxed);
  s.refreshes = m.refreshes.load(std::memory_order_relaxed);
  s.refresh_failures = m.refresh_failures.load(std::memory_order_relaxed);
  s.breaker_rejected = m.breaker_rejected.load(std::memory_order_relaxed);
  std::shared_lock lock(m.nodes_mu);
  s.nodes = m.nodes.size();
  for (const auto& n : m.nodes) {
    if (!n->breaker) continue;
    s.breaker_trips += n->breaker->times_opened();
    s.breakers_open += n->tripped() ? 1 : 0;
  }
  return s;
}

}  // namespace sluice::redis
