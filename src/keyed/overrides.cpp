// The memory store's overrides (semantics.md, "Overrides"; store/memory.hpp):
// a key's own limit, its state moved into it and out of it with
// `reconfigure` while its policy's gate is closed.
#include "overrides.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sluice/core/detail/debt_bound.hpp"
#include "sluice/core/override.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/reconfigure.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice {
namespace {

using keyed_detail::override_table;

/// A keyed store for one override: no shared budget (the override bound
/// counts it), one shard, and the general cell (a carried state may hold a
/// debt the compact one cannot).
std::unique_ptr<keyed_limiter> limiter_for(const memory_store_options& opt, const any_policy& p) {
  keyed_options ko = opt.keyed;
  ko.budget = nullptr;
  ko.max_keys = 0;
  ko.shards = 1;
  ko.compact = false;
  if (opt.clock != nullptr) return std::make_unique<keyed_limiter>(p, ko, *opt.clock);
  return std::make_unique<keyed_limiter>(p, ko);
}

/// `key`'s state in `from`, taken out of it; nullopt when it holds none
/// (the key is fresh under every configuration: nothing to carry, as a
/// redefinition carries only the states held).
std::optional<any_state> take_state(keyed_limiter& from, std::string_view key) {
  std::optional<any_state> s;
  (void)from.take(key, [&](any_state&& st) { s = std::move(st); });
  return s;
}

}  // namespace

result<override_change> memory_store::set_override_at(policy_id policy, std::string_view key, const any_policy& limit,
                                                      tick now) {
  result<override_change> out = error{"policy", "no policy with this id"};
  const memory_store_options& opt = keyed_detail::options_of(*this);
  std::atomic<std::size_t>& total = keyed_detail::override_total(*this);
  // Unchanged (the key's override is `limit` already), or refused (a new
  // override past max_overrides): `out` says which. Checked with the gate
  // open first, and again once it is closed.
  const auto settled = [&](const override_table& t) {
    const auto it = t.map.find(key);
    if (it != t.map.end() && encode_policy(it->second->policy()) == encode_policy(limit)) {
      out = override_change::unchanged;
      return true;
    }
    if (it == t.map.end() && total.load() >= opt.max_overrides) {
      out = error{"overrides", "the store holds at most " + std::to_string(opt.max_overrides) + " overrides",
                  error_code::store_full};
      return true;
    }
    return false;
  };
  // Checked with the gate open first: a refusal closes nothing.
  bool go = false;
  (void)keyed_detail::with_overrides(*this, policy, false, key, [&](override_table& t, keyed_limiter& configured) {
    if (auto f = check_override(configured.policy(), limit); !f) {
      out = f.err();
      return;
    }
    if (settled(t)) return;
    go = true;
  });
  if (!go) return out;
  // The limiter is made before the gate closes (it allocates).
  std::unique_ptr<keyed_limiter> next = limiter_for(opt, limit);
  (void)keyed_detail::with_overrides(*this, policy, true, key, [&](override_table& t, keyed_limiter& configured) {
    // Checked again: another change may have come between the two locks.
    if (settled(t)) return;
    auto it = t.map.find(key);
    keyed_limiter& from = it != t.map.end() ? *it->second : configured;
    if (const std::optional<any_state> s = take_state(from, key)) {
      auto carried = reconfigure(from.policy(), *s, limit, now);
      if (!carried) {  // check_override() said it carries: not expected; put the state back
        (void)from.put(key, *s);
        out = error{"policy", carried.err().message};
        return;
      }
      (void)next->put(key, detail::within_debt_bound(limit, *carried, now));  // a fresh state is not stored
    }
    if (it != t.map.end()) {
      it->second = std::move(next);
      out = override_change::replaced;
    } else {
      t.map.emplace(std::string(key), std::move(next));
      t.refilter();
      t.count.fetch_add(1, std::memory_order_release);
      total.fetch_add(1);
      out = override_change::created;
    }
  });
  return out;
}

result<bool> memory_store::delete_override_at(policy_id policy, std::string_view key, tick now) {
  result<bool> out = error{"policy", "no policy with this id"};
  std::atomic<std::size_t>& total = keyed_detail::override_total(*this);
  std::unique_ptr<keyed_limiter> gone;  // freed once the gate is open again
  (void)keyed_detail::with_overrides(*this, policy, true, key, [&](override_table& t, keyed_limiter& configured) {
    auto it = t.map.find(key);
    if (it == t.map.end()) {
      out = false;
      return;
    }
    if (const std::optional<any_state> s = take_state(*it->second, key)) {
      auto carried = reconfigure(it->second->policy(), *s, configured.policy(), now);
      if (!carried) {
        (void)it->second->put(key, *s);
        out = error{"policy", carried.err().message};
        return;
      }
      (void)configured.put(key, detail::within_debt_bound(configured.policy(), *carried, now));
    }
    gone = std::move(it->second);
    t.map.erase(it);
    t.refilter();
    t.count.fetch_sub(1, std::memory_order_release);
    total.fetch_sub(1);
    out = true;
  });
  return out;
}

result<std::optional<any_policy>> memory_store::override_of(policy_id policy, std::string_view key) {
  result<std::optional<any_policy>> out = error{"policy", "no policy with this id"};
  (void)keyed_detail::with_overrides(*this, policy, false, key, [&](override_table& t, keyed_limiter&) {
    const auto it = t.map.find(key);
    out = it == t.map.end() ? std::nullopt : std::optional<any_policy>(it->second->policy());
  });
  return out;
}

result<override_page> memory_store::list_overrides(policy_id policy, std::string_view after, std::size_t limit) {
  result<override_page> out = error{"policy", "no policy with this id"};
  (void)keyed_detail::with_overrides(*this, policy, false, std::nullopt, [&](override_table& t, keyed_limiter&) {
    std::vector<const std::pair<const std::string, std::unique_ptr<keyed_limiter>>*> keys;
    for (const auto& kv : t.map)
      if (after.empty() || std::string_view(kv.first) > after) keys.push_back(&kv);
    std::sort(keys.begin(), keys.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
    override_page page;
    const std::size_t n = std::min(limit, keys.size());
    for (std::size_t i = 0; i < n; ++i) page.overrides.push_back({keys[i]->first, keys[i]->second->policy()});
    if (n < keys.size() && n > 0) page.next = keys[n - 1]->first;
    out = std::move(page);
  });
  return out;
}

std::optional<std::uint64_t> memory_store::override_count() const {
  return keyed_detail::override_total(const_cast<memory_store&>(*this)).load(std::memory_order_relaxed);
}

std::vector<override_state> memory_store::override_states(policy_id id) {
  std::vector<override_state> out;
  (void)keyed_detail::with_overrides(*this, id, false, std::nullopt, [&](override_table& t, keyed_limiter&) {
    for (const auto& [key, states] : t.map)
      out.push_back({key, states->policy(), states->state_of(key).value_or(fresh_state(states->policy()))});
  });
  std::sort(out.begin(), out.end(), [](const override_state& a, const override_state& b) { return a.key < b.key; });
  return out;
}

result<std::size_t> memory_store::restore_overrides(policy_id id, const std::vector<override_state>& overrides) {
  result<std::size_t> out = error{"policy", "no policy with this id"};
  const memory_store_options& opt = keyed_detail::options_of(*this);
  std::atomic<std::size_t>& total = keyed_detail::override_total(*this);
  (void)keyed_detail::with_overrides(*this, id, true, std::nullopt, [&](override_table& t, keyed_limiter& configured) {
    if (total.load() - t.map.size() + overrides.size() > opt.max_overrides) {
      out = error{"overrides", "the store holds at most " + std::to_string(opt.max_overrides) + " overrides",
                  error_code::store_full};
      return;
    }
    decltype(t.map) next;
    try {
      for (const override_state& o : overrides) {
        if (auto f = check_override(configured.policy(), o.policy); !f) {
          out = f.err();
          return;
        }
        auto l = limiter_for(opt, o.policy);
        (void)l->put(o.key, o.state);  // throws for a state of another type
        if (!next.emplace(o.key, std::move(l)).second) {
          out = error{"key", "an override's key appears twice"};
          return;
        }
      }
    } catch (const std::invalid_argument& e) {
      out = error{"policy", std::string("an override's state does not fit it: ") + e.what()};
      return;
    }
    // An overridden key holds no state under the configured policy.
    for (const override_state& o : overrides) (void)take_state(configured, o.key);
    total.fetch_sub(t.map.size());
    total.fetch_add(next.size());
    t.map = std::move(next);
    t.refilter();
    t.count.store(t.map.size(), std::memory_order_release);
    out = t.map.size();
  });
  return out;
}

}  // namespace sluice
