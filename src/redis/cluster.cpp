// cluster_client: the slot map, per-node clients, and the routing loop
// (redirections, retries after a pause, split batches written before read).
#include "redis/cluster.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <thread>
#include <utility>

namespace sluice::redis {
namespace {

using steady = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count();
}

/// The most nodes the router keeps (each has its own connections); a reply
/// naming more is not believed.
constexpr std::size_t max_nodes = 1024;

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

}  // namespace

/// One node of the cluster: its address and its own client (pool).
struct cluster_client::node {
  std::string address;  // "host:port"
  std::string host;
  std::uint16_t index = 0;  // in nodes_
  std::unique_ptr<client> cli;
  std::unique_ptr<remote::circuit_breaker> breaker;  // null: none

  /// Whether a call may be sent to it now (a breaker that is half-open lets
  /// this one through as its probe).
  bool allow() const { return !breaker || breaker->allow_call_now(); }
  /// Whether its breaker is open or half-open (no call is to be sent
  /// without need).
  bool tripped() const noexcept { return breaker && breaker->current() != remote::circuit_breaker::state::closed; }
};

/// One call on its way: where it goes next and why it was sent again.
struct cluster_client::job {
  std::size_t index = 0;  // in the caller's calls
  int slot = -1;          // -1: the call names no key
  node* ask = nullptr;    // the ASK target for the next send, if any
  int redirects = 0;
  call_error last{};  // why it is being sent again (its answer if time runs out)
};

namespace {

/// Whether a reply from a node is its failure, for its breaker: an error
/// reply other than a redirection, TRYAGAIN, or the library's own
/// (`sluice: ...`: about a key's value, not the node). CLUSTERDOWN is one.
bool node_failed(const reply& rep) {
  if (!rep.is_error()) return false;
  const redirect d = classify(rep.str);
  if (d.kind == redirect::moved || d.kind == redirect::ask || d.kind == redirect::tryagain) return false;
  return !rep.str.starts_with("sluice:");
}

}  // namespace

void cluster_client::record(node& n, bool failed, bool& success_told, std::optional<failure_reason> why) const {
  if (!n.breaker) return;
  if (failed) {
    if (n.breaker->record_failure_now() && options_.on_breaker_change)
      options_.on_breaker_change(n.address, false, why);
    success_told = false;
  } else if (!success_told) {
    if (n.breaker->record_success_now() && options_.on_breaker_change)
      options_.on_breaker_change(n.address, true, std::nullopt);
    success_told = true;
  }
}

std::vector<std::pair<std::string, remote::circuit_breaker::state>> cluster_client::breaker_states() const {
  std::vector<std::pair<std::string, remote::circuit_breaker::state>> out;
  std::shared_lock lock(nodes_mu_);
  for (const auto& n : nodes_)
    if (n->breaker) out.emplace_back(n->address, n->breaker->current());
  return out;
}

cluster_client::cluster_client(cluster_options options) : options_(std::move(options)) {}

cluster_client::~cluster_client() = default;

result<bool> cluster_client::set_library(std::string name, std::string code) {
  // Checked as a client checks it, before any node has a client.
  client probe{client_options{}};
  if (auto ok = probe.set_library(name, code); !ok) return ok;
  {
    std::lock_guard lock(lib_mu_);
    lib_name_ = name;
    lib_code_ = code;
  }
  std::shared_lock lock(nodes_mu_);
  for (const auto& n : nodes_)
    if (auto ok = n->cli->set_library(name, code); !ok) return ok;
  return true;
}

cluster_client::node* cluster_client::node_at(std::string_view address, std::string_view fallback_host) {
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos) return nullptr;
  std::string host(address.substr(0, colon));
  const auto port = whole_number(address.substr(colon + 1), 1, 65535);
  if (!port) return nullptr;
  if (host.empty()) host = std::string(fallback_host);  // "the host you asked"
  if (host.empty() || host == "?") return nullptr;      // an endpoint the node does not know
  const std::string key = host + ":" + std::to_string(*port);
  {
    std::shared_lock lock(nodes_mu_);
    if (const auto it = by_address_.find(key); it != by_address_.end()) return nodes_[it->second].get();
  }
  std::unique_lock lock(nodes_mu_);
  if (const auto it = by_address_.find(key); it != by_address_.end()) return nodes_[it->second].get();
  if (nodes_.size() >= max_nodes) return nullptr;
  client_options co;
  co.where = options_.seeds.empty() ? url{} : options_.seeds.front();
  co.where.host = host;
  co.where.port = static_cast<std::uint16_t>(*port);
  co.where.socket_path.clear();
  co.where.db = 0;
  co.connect_timeout = options_.connect_timeout;
  co.command_timeout = options_.command_timeout;
  co.pool_size = options_.pool_size;
  co.keepalive = options_.keepalive;
  auto n = std::make_unique<node>();
  n->address = key;
  n->host = host;
  n->index = static_cast<std::uint16_t>(nodes_.size());
  n->cli = std::make_unique<client>(std::move(co));
  if (options_.breaker_failures > 0) {
    remote::circuit_breaker_options bo;
    bo.consecutive_failures = options_.breaker_failures;
    bo.cool_down = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.breaker_cool_down).count();
    n->breaker = std::make_unique<remote::circuit_breaker>(bo);
  }
  {
    std::lock_guard lib_lock(lib_mu_);
    if (!lib_name_.empty()) (void)n->cli->set_library(lib_name_, lib_code_);  // checked by set_library
  }
  by_address_.emplace(key, nodes_.size());
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

cluster_client::node* cluster_client::owner(int slot) const {
  std::uint16_t at = 0;
  if (slot >= 0) {
    at = owner_[static_cast<std::size_t>(slot)].load(std::memory_order_relaxed);
  } else {
    // A call without keys runs on any primary: the first slot's owner.
    for (std::size_t s = 0; s < slot_count && at == 0; ++s) at = owner_[s].load(std::memory_order_relaxed);
  }
  if (at == 0) return nullptr;
  std::shared_lock lock(nodes_mu_);
  return at <= nodes_.size() ? nodes_[at - 1U].get() : nullptr;
}

bool cluster_client::refresh_from(node& n, std::string& why) {
  const auto r = n.cli->call({"CLUSTER", "SLOTS"});
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
  for (std::size_t s = 0; s < slot_count; ++s) owner_[s].store(map[s], std::memory_order_relaxed);
  return true;
}

bool cluster_client::refresh() {
  std::lock_guard lock(refresh_mu_);
  return refresh_locked();
}

bool cluster_client::refresh_locked() {
  // Ask the nodes that serve slots now, then the seeds, then any other.
  std::vector<std::uint16_t> order;
  for (std::size_t s = 0; s < slot_count; ++s) {
    const std::uint16_t at = owner_[s].load(std::memory_order_relaxed);
    if (at != 0 && std::find(order.begin(), order.end(), at) == order.end()) order.push_back(at);
  }
  std::vector<node*> candidates;
  {
    std::shared_lock nodes_lock(nodes_mu_);
    for (const std::uint16_t at : order)
      if (at <= nodes_.size()) candidates.push_back(nodes_[at - 1U].get());
  }
  for (const url& seed : options_.seeds) {
    node* n = node_at(seed.host + ":" + std::to_string(seed.port), "");
    if (n != nullptr && std::find(candidates.begin(), candidates.end(), n) == candidates.end()) candidates.push_back(n);
  }
  {
    std::shared_lock nodes_lock(nodes_mu_);
    for (const auto& n : nodes_)
      if (std::find(candidates.begin(), candidates.end(), n.get()) == candidates.end()) candidates.push_back(n.get());
  }
  // A node whose breaker is open (hung, or down) is asked last: it would
  // only make this refresh wait for its timeout.
  std::stable_partition(candidates.begin(), candidates.end(), [](const node* n) { return !n->tripped(); });
  last_refresh_ns_.store(now_ns(), std::memory_order_relaxed);
  std::string why = "no seed node";
  for (node* n : candidates) {
    if (refresh_from(*n, why)) {
      refreshes_.fetch_add(1, std::memory_order_relaxed);
      refresh_wanted_.store(false, std::memory_order_relaxed);
      std::lock_guard lock(why_mu_);
      refresh_error_.clear();
      return true;
    }
  }
  refresh_failures_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(why_mu_);
  refresh_error_ = std::move(why);
  return false;
}

void cluster_client::maybe_refresh(bool force) {
  if (!force && !refresh_wanted_.load(std::memory_order_relaxed)) return;
  const std::int64_t interval = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.refresh_interval).count();
  const std::int64_t last = last_refresh_ns_.load(std::memory_order_relaxed);
  if (last != 0 && now_ns() - last < interval) return;
  // One thread refreshes; the others go on with the map they have.
  std::unique_lock lock(refresh_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  if (last_refresh_ns_.load(std::memory_order_relaxed) != last) return;  // another thread just did
  refresh_locked();
}

call_result cluster_client::fcall(const function_call& fc) {
  auto out = fcall_each(std::span(&fc, 1));
  call_result& r = out.front();
  if (auto* rep = std::get_if<reply>(&r); rep != nullptr && rep->is_error())
    return call_error{call_error::server, std::move(rep->str), false};
  return std::move(r);
}

std::vector<call_result> cluster_client::fcall_each(std::span<const function_call> calls) {
  std::vector<call_result> out(calls.size());
  std::vector<job> jobs(calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    jobs[i].index = i;
    const function_call& fc = calls[i];
    if (fc.num_keys > 0 && !fc.keys_then_args.empty()) jobs[i].slot = key_slot(fc.keys_then_args.front());
  }
  if (!jobs.empty()) route(calls, jobs, out);
  return out;
}

void cluster_client::route(std::span<const function_call> calls, std::vector<job>& jobs,
                           std::vector<call_result>& out) {
  const auto deadline = steady::now() + options_.command_timeout;
  auto pause = options_.retry_pause;
  maybe_refresh(owner_[0].load(std::memory_order_relaxed) == 0);
  struct group {
    node* target = nullptr;
    bool asking = false;
    std::vector<std::size_t> jobs;  // indices into `jobs`
    std::vector<function_call> calls;
    std::optional<client::sent_fcalls> sent;
  };
  // Each round sends every pending call once; a round only follows a
  // redirection (bounded per call) or a pause (bounded by the deadline).
  for (int round = 0; !jobs.empty() && round < 256; ++round) {
    std::vector<group> groups;
    std::vector<job> again;
    bool wait = false;
    bool want_refresh = false;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      job& jb = jobs[j];
      node* target = jb.ask != nullptr ? jb.ask : owner(jb.slot);
      if (target == nullptr) {
        std::string why;
        {
          std::lock_guard lock(why_mu_);
          why = refresh_error_.empty() ? "" : "; the slot map's last read failed: " + refresh_error_;
        }
        jb.last =
            call_error{call_error::refused, "no node is known to serve slot " + std::to_string(jb.slot) + why, false};
        again.push_back(jb);
        wait = want_refresh = true;
        continue;
      }
      const bool asking = jb.ask != nullptr;
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const group& x) { return x.target == target && x.asking == asking; });
      if (g == groups.end()) g = groups.insert(groups.end(), group{target, asking, {}, {}, std::nullopt});
      g->jobs.push_back(j);
      g->calls.push_back(calls[jb.index]);
    }
    // Every node's pipeline is written before any is read; a node whose
    // breaker is open gets none.
    for (group& g : groups)
      if (g.target->allow()) g.sent.emplace(g.target->cli->send_fcalls(g.calls, g.asking));
    for (group& g : groups) {
      if (!g.sent) {
        // Not sent: each call fails at once, and the slot map is read again
        // soon (a failover may have given the node's slots to another).
        breaker_rejected_.fetch_add(g.jobs.size(), std::memory_order_relaxed);
        const call_error open{call_error::breaker,
                              "not sent: the circuit breaker of " + g.target->address + " is open after " +
                                  std::to_string(options_.breaker_failures) + " failed calls in a row",
                              false};
        for (std::size_t j : g.jobs) out[jobs[j].index] = open;
        refresh_wanted_.store(true, std::memory_order_relaxed);
        continue;
      }
      auto r = g.target->cli->receive_fcalls(std::move(*g.sent));
      bool success_told = false;
      if (auto* e = std::get_if<call_error>(&r)) {
        // Refused, or no connection before the connect timeout: nothing was
        // sent, so it may go again. Anything after sending may have run.
        const bool unsent = !e->maybe_applied && (e->kind == call_error::refused || e->kind == call_error::timeout);
        for (std::size_t j : g.jobs) {
          record(*g.target, true, success_told, reason_of(*e));
          if (!unsent) {
            out[jobs[j].index] = *e;
            continue;
          }
          refused_.fetch_add(1, std::memory_order_relaxed);
          jobs[j].last = *e;
          jobs[j].ask = nullptr;
          again.push_back(jobs[j]);
        }
        if (unsent) wait = want_refresh = true;
        continue;
      }
      auto& replies = std::get<std::vector<reply>>(r);
      for (std::size_t k = 0; k < g.jobs.size(); ++k) {
        job& jb = jobs[g.jobs[k]];
        reply& rep = replies[k];
        const bool failed = node_failed(rep);
        record(*g.target, failed, success_told, failed ? reason_of_reply(rep.str) : std::nullopt);
        const redirect d = rep.is_error() ? classify(rep.str) : redirect{};
        if (d.kind == redirect::none) {
          out[jb.index] = std::move(rep);
          continue;
        }
        jb.last = call_error{call_error::server, rep.str, false};
        switch (d.kind) {
          case redirect::moved:
          case redirect::ask: {
            node* to = node_at(d.address, g.target->host);
            if (to == nullptr || ++jb.redirects > options_.max_redirects) {
              jb.last.message += to == nullptr ? " (an address the router cannot use)" : " (too many redirections)";
              out[jb.index] = jb.last;
              continue;
            }
            if (d.kind == redirect::moved) {
              moved_.fetch_add(1, std::memory_order_relaxed);
              owner_[d.slot].store(static_cast<std::uint16_t>(to->index + 1U), std::memory_order_relaxed);
              jb.ask = nullptr;
              want_refresh = true;
            } else {
              asked_.fetch_add(1, std::memory_order_relaxed);
              jb.ask = to;
            }
            break;
          }
          case redirect::tryagain:
            tryagain_.fetch_add(1, std::memory_order_relaxed);
            wait = true;  // the ASK target (if any) stays: the migration is under way
            break;
          case redirect::clusterdown:
            clusterdown_.fetch_add(1, std::memory_order_relaxed);
            jb.ask = nullptr;
            wait = want_refresh = true;
            break;
          case redirect::none:
            break;
        }
        again.push_back(jb);
      }
    }
    if (again.empty()) return;
    // Calls sent again keep their order.
    std::sort(again.begin(), again.end(), [](const job& a, const job& b) { return a.index < b.index; });
    if (want_refresh) refresh_wanted_.store(true, std::memory_order_relaxed);
    if (wait) {
      if (steady::now() + pause > deadline) {
        for (const job& jb : again) out[jb.index] = jb.last;
        return;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::milliseconds(50));
    }
    maybe_refresh(false);
    jobs = std::move(again);
  }
  for (const job& jb : jobs) out[jb.index] = jb.last;
}

std::optional<std::uint64_t> cluster_client::count_keys() {
  maybe_refresh(owner_[0].load(std::memory_order_relaxed) == 0);
  std::vector<std::uint16_t> primaries;
  for (std::size_t s = 0; s < slot_count; ++s) {
    const std::uint16_t at = owner_[s].load(std::memory_order_relaxed);
    if (at == 0) return std::nullopt;  // a slot without a known owner: the count would be short
    if (std::find(primaries.begin(), primaries.end(), at) == primaries.end()) primaries.push_back(at);
  }
  std::uint64_t total = 0;
  for (const std::uint16_t at : primaries) {
    node* n = nullptr;
    {
      std::shared_lock lock(nodes_mu_);
      if (at <= nodes_.size()) n = nodes_[at - 1U].get();
    }
    if (n == nullptr || n->tripped()) return std::nullopt;  // a hung node would make this wait its timeout
    const auto keys = n->cli->count_keys();
    if (!keys) return std::nullopt;
    total += *keys;
  }
  return total;
}

std::string cluster_client::owner_of(std::uint16_t slot) const {
  const node* n = owner(slot < slot_count ? slot : 0);
  return n == nullptr ? std::string() : n->address;
}

cluster_stats cluster_client::stats() const noexcept {
  cluster_stats s;
  s.moved = moved_.load(std::memory_order_relaxed);
  s.asked = asked_.load(std::memory_order_relaxed);
  s.tryagain = tryagain_.load(std::memory_order_relaxed);
  s.clusterdown = clusterdown_.load(std::memory_order_relaxed);
  s.refused = refused_.load(std::memory_order_relaxed);
  s.refreshes = refreshes_.load(std::memory_order_relaxed);
  s.refresh_failures = refresh_failures_.load(std::memory_order_relaxed);
  s.breaker_rejected = breaker_rejected_.load(std::memory_order_relaxed);
  {
    std::shared_lock lock(nodes_mu_);
    s.nodes = nodes_.size();
    for (const auto& n : nodes_) {
      if (!n->breaker) continue;
      s.breaker_trips += n->breaker->times_opened();
      s.breakers_open += n->tripped() ? 1 : 0;
    }
  }
  return s;
}

}  // namespace sluice::redis
