// The eviction check and watch (eviction.hpp).
#include "redis/store/eviction.hpp"

#include <charconv>
#include <utility>

#include "redis/client/sync_client.hpp"

namespace sluice::redis {

namespace {

std::optional<std::string_view> info_field(std::string_view info, std::string_view name) {
  for (std::size_t pos = 0; pos < info.size();) {
    std::size_t end = info.find('\n', pos);
    if (end == std::string_view::npos) end = info.size();
    std::string_view line = info.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ':')
      return line.substr(name.size() + 1);
    pos = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<eviction_info> read_eviction_info(std::string_view info) {
  const auto policy = info_field(info, "maxmemory_policy");
  const auto evicted = info_field(info, "evicted_keys");
  if (!policy || policy->empty() || !evicted) return std::nullopt;
  eviction_info out;
  out.policy = std::string(*policy);
  const auto [p, ec] = std::from_chars(evicted->data(), evicted->data() + evicted->size(), out.evicted);
  if (ec != std::errc{} || p != evicted->data() + evicted->size()) return std::nullopt;
  return out;
}

bool policy_evicts(std::string_view policy) noexcept {
  return policy.starts_with("volatile-") || policy.starts_with("allkeys-");
}

std::string evicting_policy_text(std::string_view policy) {
  return "the server's maxmemory-policy is " + std::string(policy) +
         ", which may evict the limiter's states (every state key but a quota's has a TTL), and an evicted state "
         "is a fresh one: a fresh burst. Run CONFIG SET maxmemory-policy noeviction (and in redis.conf)";
}

std::string unread_policy_text(std::string_view why) {
  return "the server's maxmemory-policy cannot be read (" + std::string(why) +
         "): the ACL user needs +info (docs/redis.md, \"An ACL user for sluice\")";
}

eviction_reading read_eviction(sync_client& cli) {
  static constexpr std::string_view argv[] = {"INFO", "memory", "stats"};
  eviction_reading out;
  const auto rs = cli.call_every_primary(argv);
  out.complete = !rs.empty();
  for (const auto& r : rs) {
    const auto* rep = std::get_if<reply>(&r);
    const auto text = rep != nullptr ? rep->as_string() : std::nullopt;
    if (text) {
      if (auto info = read_eviction_info(*text)) {
        out.servers.push_back(std::move(*info));
        continue;
      }
    } else if (const auto* e = std::get_if<call_error>(&r);
               e != nullptr && e->kind == call_error::server && e->message.starts_with("NOPERM")) {
      out.forbidden = e->message;
    }
    out.complete = false;
  }
  return out;
}

eviction_watch::eviction_watch(sync_client& cli, std::chrono::milliseconds period,
                               std::function<void(std::string_view)> say, const eviction_reading& first)
    : cli_(cli), period_(period), say_(std::move(say)) {
  if (first.complete) {
    std::uint64_t total = 0;
    for (const auto& s : first.servers) {
      total += s.evicted;
      if (policy_evicts(s.policy) && last_policy_.empty()) last_policy_ = s.policy;  // said at open
    }
    last_total_ = total;
  }
  if (period_.count() <= 0) return;
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, period_, [this] { return stop_; })) {
      lock.unlock();
      poll();
      lock.lock();
    }
  });
}

eviction_watch::~eviction_watch() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void eviction_watch::poll() { take(read_eviction(cli_)); }

void eviction_watch::take(const eviction_reading& r) {
  if (!r.complete) return;  // a server did not answer: the next reading counts what it missed
  std::uint64_t total = 0;
  std::string evicting;
  for (const auto& s : r.servers) {
    total += s.evicted;
    if (policy_evicts(s.policy) && evicting.empty()) evicting = s.policy;
  }
  if (evicting != last_policy_) {
    if (!evicting.empty()) say_("store: warning: " + evicting_policy_text(evicting));
    last_policy_ = evicting;
  }
  // A restarted server counts from 0 again: what it reports is all new.
  const std::uint64_t was = last_total_.value_or(total);
  if (total > was || (total < was && total > 0)) {
    const std::uint64_t more = total > was ? total - was : total;
    evicted_.fetch_add(more, std::memory_order_relaxed);
    say_("store: the server evicted " + std::to_string(more) + (more == 1 ? " key" : " keys") + " (evicted_keys " +
         std::to_string(total) + "); maxmemory-policy " +
         (r.servers.empty() ? std::string("?") : r.servers.front().policy) +
         ": an evicted state is a fresh one, a fresh burst (docs/redis.md, \"Eviction\")");
  }
  last_total_ = total;
}

}  // namespace sluice::redis
