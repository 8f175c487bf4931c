// The service's stores (stores.hpp). INTERIM: until sluice::memory_store
// lands (branch h-memstore), the memory store here is a small adapter over
// one keyed_limiter per policy; multi-check requests take an exclusive lock
// (peek every check, then charge every check) so all_of stays atomic.
#include "stores.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <shared_mutex>

#include "service.hpp"
#include "sluice/keyed.hpp"
#include "sluice/reconfigure.hpp"
#include "sluice/snapshot.hpp"

namespace sluice::serve {

namespace {

class interim_memory_store final : public store {
 public:
  result<policy_id> define(std::string_view name, const any_policy& policy) override {
    const std::unique_lock lock(mutex_);
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].name != name) continue;
      auto next = std::make_unique<keyed_limiter>(policy);
      const tick t = steady_clock::now();
      std::vector<std::pair<std::string, any_state>> moved;
      std::optional<error> bad;
      entries_[i].limiter->for_each([&](std::string_view key, const any_state& s) {
        if (bad) return;
        auto r = reconfigure(entries_[i].limiter->policy(), s, policy, t);
        if (!r) {
          bad = r.err();
          return;
        }
        moved.emplace_back(std::string(key), std::move(r).value());
      });
      if (bad) return *bad;
      next->restore(moved);
      entries_[i].limiter = std::move(next);
      return static_cast<policy_id>(i);
    }
    entries_.push_back(entry{std::string(name), std::make_unique<keyed_limiter>(policy)});
    return static_cast<policy_id>(entries_.size() - 1);
  }

  store_decision decide_at(const store_request& r, std::span<decision> per_check) override {
    return run(r, per_check, true);
  }

  void decide_many_at(std::span<const store_request> requests, std::span<store_decision> out) override {
    for (std::size_t i = 0; i < requests.size(); ++i) out[i] = decide_at(requests[i], {});
  }

  store_decision peek_at(const store_request& r, std::span<decision> per_check) override {
    return run(r, per_check, false);
  }

  [[nodiscard]] tick now() const noexcept override { return steady_clock::now(); }

  [[nodiscard]] store_stats stats() const override {
    const std::shared_lock lock(mutex_);
    store_stats s;
    s.decisions = decisions_.load(std::memory_order_relaxed);
    s.from_store = s.decisions;
    for (const auto& e : entries_) s.keys += e.limiter->stats().keys;
    return s;
  }

  keyed_limiter* limiter(policy_id id) {
    const std::shared_lock lock(mutex_);
    return id < entries_.size() ? entries_[id].limiter.get() : nullptr;
  }

 private:
  store_decision run(const store_request& r, std::span<decision> per_check, bool charge) {
    decisions_.fetch_add(1, std::memory_order_relaxed);
    store_decision out;
    if (r.checks.empty() || r.checks.size() > max_checks || r.cost < 1) {
      out.from = source::error;
      out.d = decision{false, 0, never, 0, 0, -1};
      return out;
    }
    for (const auto& c : r.checks) {
      if (c.policy >= entries_.size()) {
        out.from = source::error;
        out.d = decision{false, 0, never, 0, 0, -1};
        return out;
      }
    }
    if (r.checks.size() == 1) {
      const std::shared_lock lock(mutex_);
      keyed_limiter& l = *entries_[r.checks[0].policy].limiter;
      out.d = charge ? l.try_acquire_at(r.checks[0].key, r.now, r.cost) : l.peek_at(r.checks[0].key, r.now, r.cost);
      if (!per_check.empty()) per_check[0] = out.d;
      out.d.part = 0;
      return out;
    }
    const std::unique_lock lock(mutex_);
    std::array<decision, max_checks> d;
    bool all = true;
    for (std::size_t i = 0; i < r.checks.size(); ++i) {
      d[i] = entries_[r.checks[i].policy].limiter->peek_at(r.checks[i].key, r.now, r.cost);
      all = all && d[i].allowed;
    }
    if (all && charge) {
      for (std::size_t i = 0; i < r.checks.size(); ++i)
        d[i] = entries_[r.checks[i].policy].limiter->try_acquire_at(r.checks[i].key, r.now, r.cost);
    }
    out.d = decision{all, std::numeric_limits<std::int64_t>::max(), 0, 0, 0, 0};
    std::size_t bind = 0;
    for (std::size_t i = 0; i < r.checks.size(); ++i) {
      if (!per_check.empty()) per_check[i] = d[i];
      if (all) {
        if (d[i].remaining < out.d.remaining) bind = i;
        out.d.remaining = std::min(out.d.remaining, d[i].remaining);
        out.d.release_after = std::max(out.d.release_after, d[i].release_after);
      } else if (!d[i].allowed && d[i].retry_after > out.d.retry_after) {
        bind = i;
        out.d.retry_after = d[i].retry_after;
      }
      out.d.reset_after = std::max(out.d.reset_after, d[i].reset_after);
    }
    if (!all) {
      out.d.remaining = 0;
      for (std::size_t i = 0; i < r.checks.size(); ++i) out.d.remaining = std::min(out.d.remaining, d[i].remaining);
      if (out.d.retry_after == 0) out.d.retry_after = d[bind].retry_after;
    }
    out.d.part = static_cast<std::int32_t>(bind);
    return out;
  }

  struct entry {
    std::string name;
    std::unique_ptr<keyed_limiter> limiter;
  };
  mutable std::shared_mutex mutex_;
  std::deque<entry> entries_;
  std::atomic<std::uint64_t> decisions_{0};
};

std::string file_of(const std::string& dir, const std::string& policy) { return dir + "/" + policy + ".snap"; }

// The id a policy has in the store (defining the same policy again keeps it).
result<policy_id> id_of(store& st, const named_policy& p) { return st.define(p.name, p.policy); }

}  // namespace

result<std::unique_ptr<store>> make_memory_store(const store_config&) {
  return std::unique_ptr<store>(std::make_unique<interim_memory_store>());
}

result<snapshot_report> save_snapshots(store& st, const config& c, const std::string& dir) {
  auto* m = dynamic_cast<interim_memory_store*>(&st);
  if (m == nullptr) return error{"store.snapshot", "only the memory store keeps snapshots"};
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return error{"store.snapshot", "cannot create '" + dir + "': " + std::strerror(errno)};
  snapshot_report rep;
  for (const auto& p : c.policies) {
    auto id = id_of(st, p);
    if (!id) return id.err();
    keyed_limiter* l = m->limiter(*id);
    if (l == nullptr) continue;
    auto info = save_snapshot(*l, file_of(dir, p.name));
    if (!info) return info.err();
    ++rep.policies;
    rep.keys += info->keys;
  }
  return rep;
}

result<snapshot_report> load_snapshots(store& st, const config& c, const std::string& dir) {
  auto* m = dynamic_cast<interim_memory_store*>(&st);
  if (m == nullptr) return error{"store.snapshot", "only the memory store keeps snapshots"};
  snapshot_report rep;
  for (const auto& p : c.policies) {
    const std::string f = file_of(dir, p.name);
    struct stat sb {};
    if (::stat(f.c_str(), &sb) != 0) {
      rep.skipped.push_back(p.name + ": no snapshot file");
      continue;
    }
    auto id = id_of(st, p);
    if (!id) return id.err();
    keyed_limiter* l = m->limiter(*id);
    auto snap = read_snapshot(f, p.policy);
    if (!snap) {
      if (snap.err().message.find("saved for another limiter") != std::string::npos) {
        rep.skipped.push_back(p.name + ": " + snap.err().message);
        continue;
      }
      return snap.err();
    }
    auto info = load_snapshot(*l, f);
    if (!info) return info.err();
    ++rep.policies;
    rep.keys += info->keys;
  }
  return rep;
}

}  // namespace sluice::serve
