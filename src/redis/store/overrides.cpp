// The Redis store's overrides (semantics.md, "Overrides"; docs/redis.md,
// "Overrides"). A key's override lives at `<prefix>o:<name>:{<key>}`, in the
// key's hash slot: a version byte, then the override's policy as
// `format_policy` writes it. Every call names it beside the check's state
// keys with what the client built the call for; the library decides only
// when that is what is stored, else answers status 6 with the stored bytes,
// and the client builds the call again under the override's entry
// (`follow`). Setting and deleting carry the key's state with the core's
// `reconfigure` and write it with the override key in one compare-and-set.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "redis/store/store_impl.hpp"
#include "sluice/core/detail/debt_bound.hpp"
#include "sluice/core/override.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/reconfigure.hpp"

namespace sluice {

namespace {

/// The first byte of an override key's value: its format.
constexpr char override_format = '1';

/// The most overrides over the store (the memory store's default bound).
constexpr std::size_t max_overrides = 10'000;

/// The most attempts at a change whose compare-and-set lost a race.
constexpr int change_attempts = 4;

/// A change none of whose conservative states the library can hold (a
/// concurrency leaf's; never met: docs/redis.md, "Overrides").
constexpr std::string_view cannot_hold =
    "the key's carried state is outside the Redis library's exact ranges (docs/redis.md, \"Exact ranges\"); nothing "
    "changed";

/// The most beliefs kept (past it they are dropped: each costs at most one
/// status 6 to learn again).
constexpr std::size_t max_beliefs = 65'536;

/// The value an override key holds for `p`.
std::string bytes_of(const any_policy& p) { return std::string(1, override_format) + format_policy(p); }

/// A table key of (policy, bytes): the id's bytes, then `bytes`.
std::string table_key(policy_id id, std::string_view bytes) {
  std::string k(sizeof id, '\0');
  std::memcpy(k.data(), &id, sizeof id);
  k.append(bytes);
  return k;
}

/// `s` with the glob characters of SCAN MATCH escaped.
std::string glob_escaped(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

error store_error(std::string message) { return error{"store", std::move(message), error_code::store_failed}; }

}  // namespace

result<const redis::entry*> redis_store::impl::override_entry(policy_id policy, std::string_view bytes) {
  const std::string tk = table_key(policy, bytes);
  const std::lock_guard lock(overrides_mu);
  if (const auto it = override_entries.find(tk); it != override_entries.end()) return it->second.get();
  const entry* conf = entry_of(policy);
  if (conf == nullptr) return error{"policy", "no policy with this id"};
  if (bytes.empty() || bytes.front() != override_format)
    return error{"policy", "the override key holds a value of another format"};
  auto parsed = parse_policy(bytes.substr(1));
  if (!parsed) return error{"policy", "the stored override does not parse: " + parsed.err().message};
  if (auto f = check_override(conf->p->policy(), parsed.value()); !f) return f.err();
  auto made = redis::plan::make(parsed.value());
  if (!made) return made.err();
  auto e = std::make_unique<entry>();
  e->name = conf->name;
  e->key_head = conf->key_head;
  e->override_head = conf->override_head;
  e->local_id = conf->local_id;
  e->is_override = true;
  e->override_bytes = std::string(bytes);
  e->epochs.push_back(redis::epoch{std::make_shared<const redis::plan>(std::move(made).value()), 0});
  e->p = e->epochs.back().p.get();
  if (e->p->leaves().empty()) return error{"policy", "a policy that keeps no state has no override in the Redis store"};
  {
    const std::lock_guard defs(defs_mu);
    e->version = ++versions;
  }
  const entry* out = e.get();
  override_entries.emplace(tk, std::move(e));
  return out;
}

const redis::entry* redis_store::impl::believed(policy_id policy, std::string_view key, const entry* configured) const {
  const std::string k = table_key(policy, key);
  const std::lock_guard lock(beliefs_mu);
  const auto it = beliefs.find(k);
  return it == beliefs.end() ? configured : it->second;
}

void redis_store::impl::believe(policy_id policy, std::string_view key, const entry* e) {
  const std::string k = table_key(policy, key);
  const std::lock_guard lock(beliefs_mu);
  if (e == nullptr || !e->is_override) {
    beliefs.erase(k);
  } else {
    if (beliefs.size() >= max_beliefs && !beliefs.contains(k)) beliefs.clear();
    beliefs[k] = e;
  }
  belief_count.store(beliefs.size(), std::memory_order_release);
}

bool redis_store::impl::follow(const store_request& r, const entry** es,
                               const std::vector<std::optional<std::string>>& moved) {
  override_moves.fetch_add(1, std::memory_order_relaxed);
  if (moved.size() != 2 || !moved[0]) return false;
  std::size_t v = 0;
  const std::string& text = *moved[0];
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size() || v == 0) return false;
  // The v-th check that named its override key (build: every check with a
  // state whose key can be overridden).
  for (std::size_t i = 0; i < r.checks.size(); ++i) {
    if (es[i]->p->leaves().empty() || !overridable(r.checks[i].key)) continue;
    if (--v != 0) continue;
    const entry* next = nullptr;
    if (moved[1]) {
      auto e = override_entry(r.checks[i].policy, *moved[1]);
      if (!e) return false;
      next = e.value();
    } else {
      next = entry_of(r.checks[i].policy);
    }
    if (next == nullptr) return false;
    es[i] = next;
    believe(r.checks[i].policy, r.checks[i].key, next);
    return true;
  }
  return false;
}

/// Sets (`target` an override's entry) or deletes (`target` null) the
/// override of (`policy`, `key`) at `now`: the key's state read with its
/// override key, carried with `reconfigure` from the plan it was written
/// under to the new one, and written with the override key in one
/// compare-and-set. Answers 0 (delete: there was none), 1 created, 2
/// replaced, 3 unchanged.
result<int> redis_store::impl::change_override(policy_id policy, std::string_view key, const entry* target, tick now) {
  for (int attempt = 0; attempt < change_attempts; ++attempt) {
    const entry* conf = entry_of(policy);
    if (conf == nullptr) return error{"policy", "no policy with this id"};
    const entry* to = target != nullptr ? target : conf;
    std::vector<std::string> keys;
    keys.push_back(override_key(*conf, key));
    for (const auto& lp : to->p->leaves()) keys.push_back(conf->key_head + std::string(key) + "}" + lp.suffix);
    std::vector<std::string_view> views(keys.begin(), keys.end());
    const auto res = call_one(fns.refund_read.call(keys.size(), views));
    const auto* rep = std::get_if<redis::reply>(&res);
    const auto* arr = rep != nullptr ? rep->as_array() : nullptr;
    if (arr == nullptr || arr->size() != keys.size()) return store_error("Redis did not answer the read of the key");
    bool ok = true;
    std::vector<std::optional<std::string>> values;
    for (const auto& x : *arr) {
      const auto v = value_of(x, ok);
      values.push_back(v ? std::optional<std::string>(std::string(*v)) : std::nullopt);
    }
    if (!ok) return store_error("a key of the override holds a value that is not a string");
    const std::optional<std::string>& stored = values[0];
    if (target == nullptr && !stored) {
      believe(policy, key, nullptr);
      return 0;
    }
    if (target != nullptr && stored == target->override_bytes) {
      believe(policy, key, target);
      return 3;
    }
    const entry* from = conf;
    if (stored) {
      auto e = override_entry(policy, *stored);
      if (!e) return store_error("the stored override cannot be read: " + e.err().message);
      from = e.value();
    } else if (auto n = cli->scan(glob_escaped(opt.key_prefix) + "o:*", max_overrides); !n) {
      return store_error("Redis did not answer the count of overrides (SCAN)");
    } else if (n->size() >= max_overrides) {
      return error{"overrides", "the store holds at most " + std::to_string(max_overrides) + " overrides",
                   error_code::store_full};
    }
    // The state: read under the configuration that wrote it (the configured
    // policy's epochs carry an earlier configuration's first), then carried.
    std::vector<std::optional<std::string_view>> now_values;
    bool held = false;
    for (std::size_t k = 1; k < values.size(); ++k) {
      now_values.push_back(values[k] ? std::optional<std::string_view>(*values[k]) : std::nullopt);
      held = held || values[k].has_value();
    }
    const std::size_t leaves = now_values.size();
    // The override key, then the state keys, each expected as read.
    std::vector<redis::cas_key> writes(keys.size());
    for (std::size_t x = 0; x < keys.size(); ++x) {
      writes[x].key = keys[x];
      writes[x].expected = values[x];
    }
    writes[0].written = target != nullptr ? target->override_bytes : std::string();  // "": deleted
    std::uint64_t conservative = 0;
    if (held) {
      tick latest = detail::i64_min;
      redis::read_outcome how = redis::read_outcome::current;
      auto st = redis::read_check(from->epochs, now_values, latest, how);
      if (!st)
        return store_error(how == redis::read_outcome::unknown
                               ? "the key's state was written for a configuration this process does not know"
                               : "the key's state is corrupt");
      auto moved_state = reconfigure(from->p->policy(), *st, to->p->policy(), now);
      if (!moved_state) return error{"policy", moved_state.err().message};
      // A debt past what a report leaves is held at that bound, as the
      // memory store holds it (detail/debt_bound.hpp).
      any_state next = detail::within_debt_bound(to->p->policy(), std::move(moved_state).value(), now);
      // Written as of the change's instant (not a leaf's latest instant: a
      // carried window may hold one ahead of every admit). A decision before
      // it (a clock that steps back across the change) may read it otherwise
      // than the memory store (docs/redis.md, "Overrides").
      const tick at = now;
      redis::make_holdable(*to->p, next, at);
      std::vector<const any_state*> parts;
      to->p->leaf_states(next, parts);
      for (std::size_t j = 0; j < leaves; ++j) {
        const any_policy& leaf = *to->p->leaves()[j].policy;
        redis::cas_key& w = writes[j + 1];
        // Every leaf is written under the new plan (a fresh one deleted).
        if (write_leaf(*to->p, j, *parts[j], *parts[j], true, at, w) != redis::leaf_write::unholdable) continue;
        // A state that holds nothing a later decision counts (a window
        // passed, a log whose runs all left it) decides as a fresh one: its
        // key goes.
        if (redis::leaf_emptied(leaf, *parts[j], at)) {
          if (w.expected) w.written = std::string();
          continue;
        }
        // Outside the library's exact ranges: the conservative fallback,
        // never a refusal (docs/redis.md, "Overrides"): the carried state
        // capped at the ranges, else the new limit fully used at the
        // change's instant (a limit of 0 that holds no count: deleted).
        bool held_now = false;
        for (const bool exhausted : {false, true}) {
          const auto c = redis::conservative_leaf(leaf, *parts[j], at, exhausted);
          if (c && write_leaf(*to->p, j, *c, *c, true, at, w) == redis::leaf_write::written) {
            held_now = true;
            break;
          }
        }
        if (!held_now) return store_error(std::string(cannot_hold));
        ++conservative;
      }
    }
    const std::string args[] = {"0", id_ttl, "", ""};
    const std::string_view changed[] = {key};  // every process's cached denials of the key end with it
    const auto cas = compare_and_set(fns.cas, {}, args, writes, changed);
    if (!cas.status || (*cas.status != 0 && *cas.status != 1)) return store_error("Redis did not answer the change");
    if (*cas.status == 0) continue;  // the key or its override moved meanwhile: read again
    // Every other process has the call's message in its socket before the
    // change is acknowledged.
    settle(keys.front());
    // This process's cached denials of the key were decided under the old
    // limit (every other process's end as it hears the call's message).
    if (denials) denials->forget(policy, key);
    override_fallbacks.fetch_add(conservative, std::memory_order_relaxed);
    believe(policy, key, target);
    if (target == nullptr) return 1;
    return stored ? 2 : 1;
  }
  override_races.fetch_add(1, std::memory_order_relaxed);
  return store_error("the key changed under every attempt; nothing was changed");
}

result<override_change> redis_store::set_override_at(policy_id policy, std::string_view key, const any_policy& limit,
                                                     tick now) {
  impl& im = *impl_;
  const redis::entry* conf = im.entry_of(policy);
  if (conf == nullptr) return error{"policy", "no policy with this id"};
  if (!im.overridable(key))
    return error{"key",
                 "in a Redis Cluster a key that is empty or starts with '}' cannot be overridden: its hash tag is "
                 "empty, so its override key would lie in another slot than its state"};
  if (conf->p->leaves().empty())
    return error{"policy", "a policy that keeps no state has no override in the Redis store"};
  if (auto f = check_override(conf->p->policy(), limit); !f) return f.err();
  if (auto made = redis::plan::make(limit); !made) return made.err();
  auto target = im.override_entry(policy, bytes_of(limit));
  if (!target) return target.err();
  auto done = im.change_override(policy, key, target.value(), now);
  if (!done) return done.err();
  switch (done.value()) {
    case 3:
      return override_change::unchanged;
    case 2:
      return override_change::replaced;
    default:
      return override_change::created;
  }
}

result<bool> redis_store::delete_override_at(policy_id policy, std::string_view key, tick now) {
  impl& im = *impl_;
  if (im.entry_of(policy) == nullptr) return error{"policy", "no policy with this id"};
  if (!im.overridable(key)) return false;  // it cannot have one
  auto done = im.change_override(policy, key, nullptr, now);
  if (!done) return done.err();
  return done.value() == 1;
}

result<std::optional<any_policy>> redis_store::override_of(policy_id policy, std::string_view key) {
  impl& im = *impl_;
  const redis::entry* conf = im.entry_of(policy);
  if (conf == nullptr) return error{"policy", "no policy with this id"};
  if (!im.overridable(key)) return std::optional<any_policy>();
  const std::string k = impl::override_key(*conf, key);
  const std::string_view views[] = {k};
  const auto res = im.call_one(im.fns.refund_read.call(1, views));
  const auto* rep = std::get_if<redis::reply>(&res);
  const auto* arr = rep != nullptr ? rep->as_array() : nullptr;
  bool ok = true;
  if (arr == nullptr || arr->size() != 1) return store_error("Redis did not answer the read of the override");
  const auto v = redis::value_of((*arr)[0], ok);
  if (!ok) return store_error("the override key holds a value that is not a string");
  if (!v) {
    im.believe(policy, key, nullptr);
    return std::optional<any_policy>();
  }
  auto e = im.override_entry(policy, *v);
  if (!e) return store_error("the stored override cannot be read: " + e.err().message);
  im.believe(policy, key, e.value());
  return std::optional<any_policy>(e.value()->p->policy());
}

result<override_page> redis_store::list_overrides(policy_id policy, std::string_view after, std::size_t limit) {
  impl& im = *impl_;
  const redis::entry* conf = im.entry_of(policy);
  if (conf == nullptr) return error{"policy", "no policy with this id"};
  // Every override key of the policy (the bound keeps them few), in byte
  // order of their keys; then the page's values.
  auto found = im.cli->scan(glob_escaped(conf->override_head) + "*", 2 * max_overrides);
  if (!found) return store_error("Redis did not answer the list of overrides (SCAN)");
  std::vector<std::string> keys;
  const std::string& head = conf->override_head;
  for (const std::string& full : *found) {
    if (full.size() <= head.size() || !full.starts_with(head) || full.back() != '}') continue;
    std::string k = full.substr(head.size(), full.size() - head.size() - 1);
    if (after.empty() || std::string_view(k) > after) keys.push_back(std::move(k));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  override_page page;
  const std::size_t n = std::min(limit, keys.size());
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i) names.push_back(impl::override_key(*conf, keys[i]));
  const std::vector<std::string_view> views(names.begin(), names.end());
  std::vector<redis::function_call> calls;
  for (std::size_t i = 0; i < n; ++i)
    calls.push_back(im.fns.refund_read.call(1, std::span<const std::string_view>(views.data() + i, 1)));
  const auto results = n == 0 ? std::vector<redis::call_result>() : im.call_each(calls);
  if (results.size() != n) return store_error("Redis did not answer the read of the overrides");
  for (std::size_t i = 0; i < n; ++i) {
    const auto* rep = std::get_if<redis::reply>(&results[i]);
    const auto* arr = rep != nullptr ? rep->as_array() : nullptr;
    bool ok = true;
    if (arr == nullptr || arr->size() != 1) return store_error("Redis did not answer the read of an override");
    const auto v = redis::value_of((*arr)[0], ok);
    if (!ok) return store_error("an override key holds a value that is not a string");
    if (!v) continue;  // deleted since the scan
    auto e = im.override_entry(policy, *v);
    if (!e) return store_error("a stored override cannot be read: " + e.err().message);
    page.overrides.push_back({keys[i], e.value()->p->policy()});
  }
  if (n < keys.size() && n > 0) page.next = keys[n - 1];
  return page;
}

std::optional<any_policy> redis_store::override_seen(policy_id policy, std::string_view key) {
  const impl& im = *impl_;
  if (im.belief_count.load(std::memory_order_acquire) == 0) return std::nullopt;
  const redis::entry* e = im.believed(policy, key, nullptr);
  if (e == nullptr) return std::nullopt;
  return e->p->policy();
}

}  // namespace sluice
