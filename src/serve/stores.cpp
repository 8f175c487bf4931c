// The service's stores (stores.hpp): the memory store, and its snapshots
// through memory_store::for_each_policy.
#include "stores.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice::serve {

namespace {

std::string file_of(const std::string& dir, std::string_view policy) {
  return dir + "/" + std::string(policy) + ".snap";
}

/// The request ids' file: no policy's file can have its name (those end
/// in ".snap").
std::string ids_file_of(const std::string& dir) { return dir + "/request-ids"; }

const named_policy* policy_named(const config& c, std::string_view name) { return c.find_policy(name); }

}  // namespace

store_options store_options_of(const store_config& c) {
  store_options o;
  o.url = c.url;
  // The memory store's default clock is the Unix clock, as the Redis store's:
  // fixed windows start on the epoch in every store (semantics.md, "The
  // service's clock").
  o.memory.max_keys = c.max_keys;
  o.memory.on_full = c.on_failure;
  o.memory.full_retry_after = c.fail_closed_retry_after;
  o.memory.keyed.in_time_order = c.in_time_order;
  // Request ids live by the service's clock alone: a client's "now"
  // (server.client_time) can shorten no id's life (docs/serve.md).
  o.memory.ids_on_clock = true;
  o.memory.idempotency_window = c.idempotency_window;
  o.memory.max_id_bytes = c.max_id_bytes;
  o.idempotency_window = std::chrono::milliseconds((c.idempotency_window + 999'999) / 1'000'000);
  o.password = c.password;
  o.key_prefix = c.key_prefix;
  o.connect_timeout = std::chrono::milliseconds((c.connect_timeout + 999'999) / 1'000'000);
  o.command_timeout = std::chrono::milliseconds((c.command_timeout + 999'999) / 1'000'000);
  o.tick_ns = 1;
  o.on_failure = c.on_failure;
  o.fail_closed_retry_after = c.fail_closed_retry_after;
  o.deny_cache = c.deny_cache;
  o.clock = c.clock;
  o.max_clock_offset = std::chrono::milliseconds(c.max_clock_offset / 1'000'000);
  o.warn_on_eviction_policy = c.warn_on_eviction_policy;
  return o;
}

result<std::unique_ptr<store>> make_store(const store_config& c, const store_registry& stores,
                                          std::function<void(std::string_view)> on_health_change) {
  store_options o = store_options_of(c);
  o.on_health_change = std::move(on_health_change);
  auto st = stores.open(o);
  if (st) return st;
  // The registry's own errors name "url": here that is store.url itself.
  const std::string what = st.err().code == error_code::bad_store_url ? st.err().message : st.err().what();
  // Placed at the URL in the file, as every other configuration error.
  if (c.url_place.empty()) return error{"store.url", what};
  return error{c.url_place, "store.url: " + what};
}

result<std::unique_ptr<store>> make_memory_store(const store_config& c) { return make_store(c); }

result<snapshot_report> save_snapshots(store& st, const config& c, const std::string& dir) {
  auto* m = dynamic_cast<memory_store*>(&st);
  if (m == nullptr) return error{"store.snapshot", "only the memory store keeps snapshots"};
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return error{"store.snapshot", "cannot create '" + dir + "': " + std::strerror(errno)};
  snapshot_report rep;
  std::optional<error> failed;
  // The store's clock is the wall clock: the snapshot's moment is one reading of it.
  const tick now = m->now();
  m->for_each_policy_with_overrides(
      [&](std::string_view name, keyed_limiter& states, std::span<const override_state> overrides) {
        // Only the policies in force: one removed by a reload is left out.
        if (failed || policy_named(c, name) == nullptr) return;
        auto info = save_snapshot(states, overrides, file_of(dir, name), now, now);
        if (!info) {
          failed = info.err();
          return;
        }
        ++rep.policies;
        rep.keys += info->keys;
      });
  if (failed) return *failed;
  // The request ids, with their refund records (docs/serve.md, "Request ids").
  auto ids = m->save_ids(ids_file_of(dir));
  if (!ids) return ids.err();
  rep.ids = *ids;
  return rep;
}

result<snapshot_report> load_snapshots(store& st, const config& c, const std::string& dir) {
  auto* m = dynamic_cast<memory_store*>(&st);
  if (m == nullptr) return error{"store.snapshot", "only the memory store keeps snapshots"};
  snapshot_report rep;
  std::optional<error> failed;
  // Each policy's overrides, put in once its states are (a store call of
  // its own: not under for_each_policy's lock).
  std::vector<std::pair<std::string, std::vector<override_state>>> overrides;
  m->for_each_policy([&](std::string_view name, keyed_limiter& states) {
    const named_policy* p = policy_named(c, name);
    if (failed || p == nullptr) return;
    const std::string f = file_of(dir, name);
    struct stat sb {};
    if (::stat(f.c_str(), &sb) != 0) {
      rep.skipped.push_back(std::string(name) + ": no snapshot file");
      return;
    }
    auto snap = read_snapshot(f, p->policy);
    if (!snap) {
      // A file saved for another policy (the configuration changed while
      // the service was down) cannot continue: that policy starts fresh.
      if (snap.err().code == error_code::other_policy) {
        rep.skipped.push_back(std::string(name) + ": " + snap.err().message);
        return;
      }
      failed = snap.err();
      return;
    }
    // Restored at the instant it was saved, plus the wall time since (on
    // this wall clock: the same instants, so a window still open is the
    // same window; a snapshot of a steady-clock store maps as before).
    const tick now = m->now();
    const tick at = restore_instant(snap->info(), now, now);
    auto info = load_snapshot(states, f, at);
    if (!info) {
      failed = info.err();
      return;
    }
    auto os = snap->overrides_at(at);
    if (!os) {
      failed = os.err();
      return;
    }
    if (!os->empty()) overrides.emplace_back(std::string(name), std::move(os).value());
    ++rep.policies;
    rep.keys += info->keys;
  });
  if (failed) return *failed;
  for (const auto& [name, os] : overrides) {
    auto put = m->restore_overrides(*m->find(name), os);
    if (!put) return error{"store.snapshot", file_of(dir, name) + ": " + put.err().what()};
    rep.overrides += *put;
  }
  // The request ids last: they name the policies, which are all defined.
  const std::string ids = ids_file_of(dir);
  struct stat sb {};
  if (::stat(ids.c_str(), &sb) == 0) {
    auto n = m->load_ids(ids);
    if (!n) return n.err();
    rep.ids = *n;
  }
  return rep;
}

}  // namespace sluice::serve
