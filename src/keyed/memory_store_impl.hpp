// The in-process store's internals (store/memory.hpp), shared by its
// sources: memory_store.cpp (decisions, definitions, the whole-store
// operations), memory_store_carry.cpp (a redefinition's lazy carry-over)
// and memory_store_refund.cpp (refunds by request id). Private: not
// installed.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "keyed_impl.hpp"
#include "overrides.hpp"
#include "reclaim.hpp"
#include "release.hpp"
#include "sluice/core/detail/request_identity.hpp"
#include "sluice/core/lease.hpp"
#include "sluice/core/reconfigure.hpp"
#include "sluice/keyed/memory.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice {
namespace memory_detail {

using store_guard = keyed_detail::basic_read_guard<keyed_detail::domain::store>;

/// The nonce of the leases `d` took on this thread's lease_scope: its nonce
/// when `d` is a store admit and a concurrency step issued a lease, else 0.
inline std::uint64_t issued_lease(const store_decision& d) noexcept {
  return d.from == source::store && d.d.allowed && detail::lease_ctx.issued > 0 ? detail::lease_ctx.nonce : 0;
}

/// Keeps the thread's count of leases issued across a scope whose steps
/// are not the decision's own.
struct lease_counts_kept {
  std::uint64_t issued = detail::lease_ctx.issued;
  ~lease_counts_kept() { detail::lease_ctx.issued = issued; }
};

/// The states a redefinition has not carried over yet: the keyed stores of
/// the earlier configurations, frozen (no decision changes them), each key
/// in at most one of them. `stores[i]` holds states of its own policy; the
/// configuration after it took over at `until[i]`. Immutable once
/// published; read inside a store read section.
struct carry_chain {
  std::vector<keyed_limiter*> stores;  // oldest first
  std::vector<tick> until;
};

/// One defined policy. `current` and `pending` are read inside a store read
/// section while the gate is open; they are replaced only while the gate is
/// closed and after a grace period, or (a drained frozen store) after a
/// grace period.
struct policy_entry {
  std::string name;
  // No part holds a state (always-allow / always-deny only): a redefinition
  // keeps the parts' kinds, so this never changes.
  bool stateless = false;
  // Some part is a concurrency limit: its admits take leases (release.cpp).
  bool leases = false;
  std::atomic<keyed_limiter*> current{nullptr};
  std::atomic<const carry_chain*> pending{nullptr};  // null: every state is carried over
  std::atomic<bool> closed{false};
  std::mutex redefine;                                 // one redefinition (or carry slice) of this name at a time
  std::unique_ptr<keyed_limiter> owned;                // what `current` points at; under `redefine`
  std::vector<std::unique_ptr<keyed_limiter>> frozen;  // what `pending` names; under `redefine`
  std::unique_ptr<carry_chain> chain;                  // what `pending` points at; under `redefine`
  bool debt = false;  // a redefinition shrank a burst: a state may hold a debt the compact cell cannot
  keyed_detail::override_table overrides;  // keys with a limit of their own (overrides.cpp)
};

/// Carries `key` over to `current` if a frozen store of `ch` still holds it
/// (under that store's shard lock, so a concurrent decision on the key waits
/// and then finds it in `current`). Requires a store read section.
void carry_key(const carry_chain& ch, keyed_limiter& current, std::string_view key);

/// Counts one thread adds to, alone on a cache line: a thread whose slot
/// index is below `stripes` owns its stripe and adds with a plain load and
/// store; others share the last stripe, with atomic adds.
struct alignas(64) counter_stripe {
  std::atomic<std::uint64_t> from_store{0};
  std::atomic<std::uint64_t> replayed{0};
  std::atomic<std::uint64_t> errors{0};
  std::atomic<std::uint64_t> conflicts{0};
};
constexpr std::size_t owned_stripes = 63;

enum class counter { from_store, replayed, errors, conflicts };

/// A remembered request id.
struct id_entry {
  tick at = 0;            // the request's instant
  tick born = 0;          // the instant its life is read from (memory_store_options::ids_on_clock)
  std::size_t bytes = 0;  // what it counts against max_id_bytes (id_bytes)
  std::string identity;   // detail::request_identity of its first request
  store_decision d;
  std::vector<decision> per_check;
  std::vector<std::optional<tick>> grows;  // each check's grows_after, read right after the first decision
  // For a refund (semantics.md, "Refunds"): the checks as decided (policy,
  // key) and what each took; `charged` iff the first decision took states.
  std::vector<std::pair<policy_id, std::string>> checks;
  std::vector<receipt> receipts;
  bool charged = false;
  bool refunded = false;
};

/// Ids in stripes by hash, each with its own lock; `order` for expiry.
struct id_stripe {
  std::mutex mu;
  std::unordered_map<std::string, id_entry> map;
  std::deque<std::pair<tick, std::string>> order;  // (born, id) by insertion
};
constexpr std::size_t id_stripes = 16;

/// The receipts an admit of `p` takes: one, and a composite's parts' (all_of:
/// every part's; any_of: the consuming part's, at most the largest).
inline std::size_t receipt_nodes(const any_policy& p) {
  if (const auto* a = std::get_if<all_of>(&p)) {
    std::size_t n = 1;
    for (const auto& part : a->parts()) n += receipt_nodes(part);
    return n;
  }
  if (const auto* o = std::get_if<any_of>(&p)) {
    std::size_t most = 0;
    for (const auto& part : o->parts()) most = std::max(most, receipt_nodes(part));
    return 1 + most;
  }
  return 1;
}

/// What a remembered id costs against max_id_bytes: its node in the table
/// and in the expiry order, the id twice (the table's key and the order's),
/// the identity, and per check its figures, grows_after, key and receipts
/// (`receipts` in all). An estimate of the heap it holds, the same at the
/// remember and at the forget (docs/serve.md, "Request ids").
inline std::size_t id_bytes(std::size_t id_len, std::size_t identity_len, std::size_t checks, std::size_t key_bytes,
                            std::size_t receipts) noexcept {
  constexpr std::size_t node = sizeof(std::pair<const std::string, id_entry>) + 2 * sizeof(void*) +
                               sizeof(std::pair<tick, std::string>) + sizeof(void*);
  return node + 2 * id_len + identity_len + key_bytes +
         checks * (sizeof(decision) + sizeof(std::optional<tick>) + sizeof(std::pair<policy_id, std::string>)) +
         receipts * sizeof(receipt);
}

/// Whether an id remembered at `at` has expired at `now` (a `now` before
/// `at`, a clock that stepped back, is within the window).
inline bool expired(tick at, tick now, tick window) noexcept {
  __extension__ using wide = __int128;
  return static_cast<wide>(now) - at >= window;
}

/// Whether `p` is made of always-allow and always-deny only.
inline bool holds_no_state(const any_policy& p) noexcept {
  const auto parts = [](const auto& c) {
    for (const auto& part : c.parts())
      if (!holds_no_state(part)) return false;
    return true;
  };
  if (const auto* a = std::get_if<all_of>(&p)) return parts(*a);
  if (const auto* o = std::get_if<any_of>(&p)) return parts(*o);
  return std::holds_alternative<always_allow>(p) || std::holds_alternative<always_deny>(p);
}

inline store_decision error_decision(std::span<decision> per_check, std::size_t n) {
  decision d;
  d.retry_after = never;
  for (std::size_t i = 0; i < std::min(n, per_check.size()); ++i) per_check[i] = d;
  return {d, source::error};
}

}  // namespace memory_detail

using namespace memory_detail;  // NOLINT: the private header of the memory store's own sources

struct memory_store::impl {
  memory_store_options opt;
  std::unique_ptr<std::atomic<policy_entry*>[]> slots;
  std::mutex define_mu;  // new names
  std::unordered_map<std::string, policy_id> names;
  std::vector<std::unique_ptr<policy_entry>> entries;  // owns every entry; under define_mu
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  counter_stripe stripes[owned_stripes + 1];
  id_stripe ids[id_stripes];
  std::atomic<std::size_t> id_bytes_held{0};  // over every stripe (max_id_bytes)
  std::atomic<std::uint64_t> ids_refused{0};  // new ids answered by on_full at max_id_bytes
  std::atomic<bool> leases{false};            // some policy has a concurrency part: decisions draw nonces
  std::atomic<std::size_t> overrides{0};      // over every policy (max_overrides)

  // The carrier: a thread that carries over, a slice at a time, the states
  // redefinitions left behind (started by the first redefinition).
  std::mutex carry_mu;
  std::condition_variable carry_cv;
  std::vector<policy_entry*> carry_queue;  // entries with a chain; under carry_mu
  bool carry_stop = false;
  std::thread carrier;

  explicit impl(memory_store_options o) : opt(std::move(o)), slots(new std::atomic<policy_entry*>[opt.max_policies]) {
    for (std::size_t i = 0; i < opt.max_policies; ++i) slots[i].store(nullptr, std::memory_order_relaxed);
    if (opt.max_keys != 0) opt.keyed.budget = std::make_shared<keyed_budget>(opt.max_keys);
  }

  /// The answer to a request a spent budget refused (a new key at
  /// max_keys): the configured mode, with `checks` for the local one.
  store_decision full(std::span<const check> checks, std::int64_t cost, tick now, std::span<decision> per_check) {
    store_decision out;
    switch (opt.on_full) {
      case failure_mode::fail_open:
        out.d.allowed = true;
        out.from = source::fail_open;
        break;
      case failure_mode::fail_closed:
        out.d.retry_after = opt.full_retry_after;
        out.from = source::fail_closed;
        break;
      case failure_mode::local: {
        // Each check on a fresh state, not kept: all_of over them.
        out.d = decision{true, std::numeric_limits<std::int64_t>::max(), 0, 0, 0, -1};
        for (std::size_t i = 0; i < checks.size(); ++i) {
          const policy_entry* e = entry_of(checks[i].policy);
          const any_policy& p = e->current.load(std::memory_order_acquire)->policy();
          any_state st = fresh_state(p);
          const decision d = sluice::decide(p, st, now, checks[i].cost != 0 ? checks[i].cost : cost);
          if (i < per_check.size()) per_check[i] = d;
          out.d.allowed = out.d.allowed && d.allowed;
          out.d.remaining = std::min(out.d.remaining, d.remaining);
          out.d.retry_after = std::max(out.d.retry_after, d.retry_after);
          out.d.reset_after = std::max(out.d.reset_after, d.reset_after);
        }
        if (!out.d.allowed) out.d.release_after = 0;
        out.from = source::fallback;
        return out;
      }
    }
    for (std::size_t i = 0; i < std::min(per_check.size(), checks.size()); ++i) {
      per_check[i] = out.d;
      per_check[i].part = -1;
    }
    return out;
  }

  ~impl() {
    {
      std::lock_guard lock(carry_mu);
      carry_stop = true;
    }
    carry_cv.notify_all();
    if (carrier.joinable()) carrier.join();
  }
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  /// States a slice of the carrier moves at once, under one shard lock of
  /// the frozen store: a decision on a key of that shard waits for at most
  /// one slice. Small, so that the carrier is rarely preempted while it
  /// holds the lock (on a busy machine a decision would then wait for the
  /// carrier's next time slice).
  static constexpr std::size_t carry_slice = 16;

  /// Carries up to one slice of `e`'s oldest frozen store over; frees the
  /// store once it is empty. Returns whether states remain to carry.
  /// Requires `e.redefine`.
  bool carry_some(policy_entry& e);

  /// Carries every state `e`'s redefinitions left behind over (for what
  /// must see them all: snapshots, purge). Decisions go on meanwhile.
  /// Requires `e.redefine`.
  void settle(policy_entry& e);

  void carrier_loop();

  /// Hands `e` to the carrier (starting it if need be).
  void schedule_carry(policy_entry& e);

  /// The keyed store that decides `key` of `e`, with the key carried over
  /// first if a redefinition left it behind. Requires a store read section
  /// and the gate open.
  static keyed_limiter* resolve(policy_entry& e, std::string_view key) {
    // An overridden key's state lives under its override, never in the
    // configured policy's stores (overrides.cpp moved it there).
    if (keyed_limiter* o = e.overrides.find(key); o != nullptr) [[unlikely]]
      return o;
    keyed_limiter* k = e.current.load(std::memory_order_acquire);
    if (const carry_chain* ch = e.pending.load(std::memory_order_acquire); ch != nullptr) [[unlikely]]
      carry_key(*ch, *k, key);
    return k;
  }

  policy_entry* entry_of(policy_id id) const noexcept {
    return id < opt.max_policies ? slots[id].load(std::memory_order_acquire) : nullptr;
  }

  void add(const keyed_detail::reader_slot* slot, counter c, std::uint64_t n = 1) noexcept {
    const unsigned i = slot->index;
    counter_stripe& s = stripes[i < owned_stripes ? i : owned_stripes];
    std::atomic<std::uint64_t>& v = c == counter::from_store ? s.from_store
                                    : c == counter::replayed ? s.replayed
                                    : c == counter::errors   ? s.errors
                                                             : s.conflicts;
    if (i < owned_stripes) {
      v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    } else {
      v.fetch_add(n, std::memory_order_relaxed);
    }
  }
  void add(counter c) noexcept { add(keyed_detail::this_thread_slot(), c); }

  std::unique_ptr<keyed_limiter> make_limiter(const any_policy& p, keyed_options ko) const {
    if (opt.clock != nullptr) return std::make_unique<keyed_limiter>(p, ko, *opt.clock);
    return std::make_unique<keyed_limiter>(p, ko);
  }

  /// Waits until `e`'s gate is open. Requires: outside a store section.
  void wait_open(policy_entry& e) {
    std::unique_lock lock(gate_mu);
    gate_cv.wait(lock, [&] { return !e.closed.load(std::memory_order_acquire); });
  }

  /// `fn(guard)` inside a store read section in which the gate of every
  /// entry of `es` is open: a closed one is waited for outside the section,
  /// and the gates read again. Requires: outside a store section.
  template <class Fn>
  decltype(auto) through_gates(std::span<policy_entry* const> es, Fn&& fn) {
    for (;;) {
      policy_entry* wait_for = nullptr;
      {
        store_guard g;
        for (policy_entry* e : es)
          if (e->closed.load(std::memory_order_seq_cst)) {
            wait_for = e;
            break;
          }
        if (wait_for == nullptr) return fn(g);
      }
      wait_open(*wait_for);
    }
  }

  /// Redefines `e` at `now`: the states are carried over lazily — each on
  /// its key's next decision, the rest by the carrier, a slice at a time —
  /// exactly as an eager carry-over at `now` (semantics.md,
  /// "Reconfiguration"). Decisions wait only for the switch of the stores.
  result<policy_id> redefine(policy_entry& e, policy_id id, const any_policy& to, tick now);

  /// The instant an id's life is read at, for a request (or refund) at
  /// `now`: the store's clock with ids_on_clock (no request's `now` can
  /// shorten an id's life), else `now`.
  tick id_now(tick now) const noexcept {
    if (!opt.ids_on_clock) return now;
    return opt.clock != nullptr ? opt.clock->now() : unix_clock::now();
  }

  /// The remembered decision of `id` at `t` (id_now), if any; for a peek,
  /// nothing else. Requires the stripe's lock.
  id_entry* remembered(id_stripe& s, std::string_view id, tick t) const {
    auto it = s.map.find(std::string(id));
    if (it == s.map.end()) return nullptr;
    if (expired(it->second.born, t, opt.idempotency_window)) return nullptr;
    return &it->second;
  }

  id_stripe& stripe_of(std::string_view id) { return ids[std::hash<std::string_view>{}(id) % id_stripes]; }

  /// Forgets the ids of `s` whose window has ended at `t` (id_now), oldest
  /// first, as far as the first that has not. Requires the stripe's lock.
  void forget_expired(id_stripe& s, tick t) {
    while (!s.order.empty() && expired(s.order.front().first, t, opt.idempotency_window)) {
      auto it = s.map.find(s.order.front().second);
      if (it != s.map.end() && it->second.born == s.order.front().first) {
        id_bytes_held.fetch_sub(it->second.bytes, std::memory_order_relaxed);
        s.map.erase(it);
      }
      s.order.pop_front();
    }
  }

  /// Forgets the expired ids of every stripe, one lock at a time. Requires
  /// no stripe lock.
  void forget_all_expired(tick t) {
    for (id_stripe& s : ids) {
      std::lock_guard lock(s.mu);
      forget_expired(s, t);
    }
  }

  /// What remembering `r`'s id will count against max_id_bytes.
  std::size_t id_bytes_of(const store_request& r, std::size_t identity_len) const {
    std::size_t keys = 0;
    std::size_t receipts = 0;
    for (const check& c : r.checks) {
      keys += c.key.size();
      // The request was validated (every policy defined): the test is for
      // GCC, whose -O3 otherwise warns of the null path (-Wstringop-overflow,
      // an error in the release preset).
      const policy_entry* e = entry_of(c.policy);
      if (e != nullptr) receipts += receipt_nodes(e->current.load(std::memory_order_acquire)->policy());
    }
    return id_bytes(r.id.size(), identity_len, r.checks.size(), keys, receipts);
  }

  /// Takes `bytes` of max_id_bytes for a new id; false (nothing taken) past it.
  bool take_id_bytes(std::size_t bytes) noexcept {
    const std::size_t before = id_bytes_held.fetch_add(bytes, std::memory_order_relaxed);
    if (before + bytes <= opt.max_id_bytes && before + bytes >= before) return true;
    id_bytes_held.fetch_sub(bytes, std::memory_order_relaxed);
    return false;
  }

  /// Remembers `r`'s first decision, its `bytes` (id_bytes_of) already
  /// taken. Requires the stripe's lock.
  void remember(id_stripe& s, std::string_view id, std::string identity, const store_request& r,
                const store_decision& d, std::span<decision> per_check, std::span<const std::optional<tick>> grows,
                std::size_t n, std::span<receipt> receipts, tick born, std::size_t bytes) {
    const tick now = r.now;
    id_entry e;
    e.at = now;
    e.born = born;
    e.bytes = bytes;
    e.identity = std::move(identity);
    e.d = d;
    e.d.from = source::replayed;
    if (!per_check.empty()) e.per_check.assign(per_check.begin(), per_check.begin() + static_cast<std::ptrdiff_t>(n));
    e.grows.assign(grows.begin(), grows.end());
    e.charged = d.from == source::store && d.d.allowed;
    if (e.charged) {
      e.checks.reserve(n);
      e.receipts.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        e.checks.emplace_back(r.checks[i].policy, std::string(r.checks[i].key));
        e.receipts.push_back(std::move(receipts[i]));
      }
    }
    std::string key(id);
    // An expired entry of the same id not yet forgotten (not at the front
    // of the order) gives its bytes back.
    if (auto old = s.map.find(key); old != s.map.end())
      id_bytes_held.fetch_sub(old->second.bytes, std::memory_order_relaxed);
    s.map.insert_or_assign(key, std::move(e));
    s.order.emplace_back(born, std::move(key));
  }

  static store_decision replay(const id_entry& e, std::span<decision> per_check, std::span<std::optional<tick>> grows,
                               std::size_t n) {
    for (std::size_t i = 0; i < std::min(n, per_check.size()); ++i)
      per_check[i] = i < e.per_check.size() ? e.per_check[i] : e.d.d;
    for (std::size_t i = 0; i < std::min(n, grows.size()); ++i)
      grows[i] = i < e.grows.size() ? e.grows[i] : std::nullopt;
    return e.d;
  }

  /// Whether `r` is well formed: checks in range, known policies, every
  /// check's cost, no (policy, key) twice, per_check long enough.
  bool valid(const store_request& r, std::span<decision> per_check) const noexcept {
    const std::size_t n = r.checks.size();
    if (n == 0 || n > max_checks) return false;
    if (!per_check.empty() && per_check.size() < n) return false;
    for (std::size_t i = 0; i < n; ++i) {
      if (entry_of(r.checks[i].policy) == nullptr || cost_of(r, r.checks[i]) < 1) return false;
      for (std::size_t j = 0; j < i; ++j)
        if (r.checks[j].policy == r.checks[i].policy && r.checks[j].key == r.checks[i].key) return false;
    }
    return true;
  }

  /// Decides (or peeks) a valid request through the gates of its policies.
  store_decision decide_checks(const store_request& r, std::span<decision> per_check, bool commit, bool reports = false,
                               std::span<receipt> receipts = {}) {
    const std::size_t n = r.checks.size();
    policy_entry* es[max_checks];
    for (std::size_t i = 0; i < n; ++i) es[i] = entry_of(r.checks[i].policy);
    return through_gates(std::span<policy_entry* const>(es, n), [&](const store_guard& g) -> store_decision {
      keyed_check ks[max_checks];
      for (std::size_t i = 0; i < n; ++i)
        ks[i] = {resolve(*es[i], r.checks[i].key), r.checks[i].key, cost_of(r, r.checks[i])};
      const std::span<const keyed_check> span(ks, n);
      decision d = reports             ? keyed_limiter::report_all_at(span, r.now, r.cost, per_check)
                   : !receipts.empty() ? keyed_limiter::admit_all_at(span, r.now, r.cost, per_check, receipts)
                   : commit            ? keyed_limiter::try_acquire_all_at(span, r.now, r.cost, per_check)
                                       : keyed_limiter::peek_all_at(span, r.now, r.cost, per_check);
      if (d.part == keyed_refused) return full(r.checks, r.cost, r.now, per_check);
      if (commit) add(g.slot(), counter::from_store);
      return {d, source::store};
    });
  }

  /// One check, no id: the keyed store's own path (for GCRA and the token
  /// bucket, its lock-free compare-and-swap), compiled in here rather than
  /// called, so that nothing but the gate stands between this request's
  /// cache misses and the next one's.
  store_decision decide_one(const check& c, tick now, std::int64_t cost, std::span<decision> per_check, bool commit) {
    policy_entry* e = entry_of(c.policy);
    for (;;) {
      {
        store_guard g;
        if (!e->closed.load(std::memory_order_seq_cst)) [[likely]] {
          keyed_limiter* k = resolve(*e, c.key);
          decision d =
              commit ? detail::keyed_internals::of(*k).acquire(c.key, cost, now) : k->peek_at(c.key, now, cost);
          if (d.part == keyed_refused) [[unlikely]] {
            const check one{c.policy, c.key, cost};
            return full(std::span<const check>(&one, 1), cost, now, per_check);
          }
          if (commit) add(g.slot(), counter::from_store);
          if (!per_check.empty()) per_check[0] = d;
          d.part = 0;
          return {d, source::store};
        }
      }
      wait_open(*e);
    }
  }

  /// Whether `r` can join a batch of plain single-check requests.
  bool plain(const store_request& r) const noexcept {
    return r.checks.size() == 1 && r.id.empty() && cost_of(r, r.checks[0]) >= 1 &&
           entry_of(r.checks[0].policy) != nullptr;
  }

  /// Decides `rs[from, to)`, plain single-check requests of one policy, in
  /// one keyed batch (its lookups overlapped), through the policy's gate:
  /// the keyed batch reads each store request and writes each store
  /// decision in place, with no copy between.
  void decide_run(std::span<const store_request> rs, std::size_t from, std::size_t to, store_decision* out) {
    policy_entry* e = entry_of(rs[from].checks[0].policy);
    constexpr std::size_t chunk = 256;  // requests per read section: a redefinition waits for at most one
    while (from < to) {
      const std::size_t m = std::min(chunk, to - from);
      const store_request* r = rs.data() + from;
      store_decision* o = out + from;
      bool done = false;
      std::size_t refused = 0;
      {
        store_guard g;
        if (!e->closed.load(std::memory_order_seq_cst) && e->overrides.count.load(std::memory_order_acquire) != 0)
            [[unlikely]] {
          // Some key of this policy has an override: the keys without one
          // still go as one keyed batch; an overridden key's requests, each
          // on its own store (a key's requests all go one way, in order).
          std::uint32_t plain_idx[chunk];
          std::size_t np = 0;
          constexpr std::size_t ahead = 16;  // the filter reads each key's bytes: fetched this far ahead
          for (std::size_t j = 0; j < std::min(ahead, m); ++j) __builtin_prefetch(r[j].checks[0].key.data());
          for (std::size_t j = 0; j < m; ++j) {
            if (j + ahead < m) __builtin_prefetch(r[j + ahead].checks[0].key.data());
            const check& c = r[j].checks[0];
            if (keyed_limiter* ok = e->overrides.find_held(c.key); ok != nullptr) [[unlikely]] {
              o[j] = {detail::keyed_internals::of(*ok).acquire(c.key, cost_of(r[j], c), r[j].now), source::store};
              o[j].d.part = 0;
            } else {
              plain_idx[np++] = static_cast<std::uint32_t>(j);
            }
          }
          if (const carry_chain* ch = e->pending.load(std::memory_order_acquire); ch != nullptr) [[unlikely]]
            for (std::size_t j = 0; j < np; ++j) (void)resolve(*e, r[plain_idx[j]].checks[0].key);
          detail::keyed_internals::of(*e->current.load(std::memory_order_acquire))
              .acquire_many(
                  np,
                  [r, &plain_idx](std::size_t j) {
                    const store_request& q = r[plain_idx[j]];
                    return keyed_request{q.checks[0].key, q.now, cost_of(q, q.checks[0])};
                  },
                  [&](std::size_t j, const decision& d) {
                    const std::size_t k = plain_idx[j];
                    if (d.part == keyed_refused) [[unlikely]] {
                      o[k] = full(r[k].checks, r[k].cost, r[k].now, {});
                      ++refused;
                      return;
                    }
                    o[k] = {d, source::store};
                    o[k].d.part = 0;
                  });
          add(g.slot(), counter::from_store, m - refused);
          done = true;
        } else if (!e->closed.load(std::memory_order_seq_cst)) {
          if (const carry_chain* ch = e->pending.load(std::memory_order_acquire); ch != nullptr) [[unlikely]]
            for (std::size_t j = 0; j < m; ++j) (void)resolve(*e, r[j].checks[0].key);
          detail::keyed_internals::of(*e->current.load(std::memory_order_acquire))
              .acquire_many(
                  m,
                  [r](std::size_t j) {
                    return keyed_request{r[j].checks[0].key, r[j].now, cost_of(r[j], r[j].checks[0])};
                  },
                  [&](std::size_t j, const decision& d) {
                    if (d.part == keyed_refused) [[unlikely]] {
                      o[j] = full(r[j].checks, r[j].cost, r[j].now, {});
                      ++refused;
                      return;
                    }
                    o[j] = {d, source::store};
                    o[j].d.part = 0;
                  });
          add(g.slot(), counter::from_store, m - refused);
          done = true;
        }
      }
      if (!done) {
        wait_open(*e);
        continue;
      }
      from += m;
    }
  }

  /// Writes each check's `grows_after` (store.hpp) for the decision `d`
  /// just made with per-check decisions `pc`: a peek of cost remaining + 1
  /// on its state, right after; none after an error (no state was read).
  void fill_grows(const store_request& r, const store_decision& d, std::span<const decision> pc,
                  std::span<std::optional<tick>> grows) {
    // Its peeks may decide a concurrency part on a copy: they issue no lease.
    const lease_counts_kept kept;
    for (std::size_t i = 0; i < std::min(r.checks.size(), grows.size()); ++i) {
      grows[i].reset();
      if (d.from != source::store) continue;  // an error or the bound's mode: no state behind it
      const std::int64_t remaining = pc[i].remaining;
      grows[i] = remaining == std::numeric_limits<std::int64_t>::max()
                     ? never
                     : decide_one(r.checks[i], r.now, remaining + 1, {}, false).d.retry_after;
    }
  }

  /// Reports `r` (semantics.md, "Reports"): every check charged, atomically
  /// across them; a request with an id, or not valid, is an error.
  store_decision report(const store_request& r, std::span<decision> per_check) {
    if (!r.id.empty() || !valid(r, per_check)) {
      add(counter::errors);
      return error_decision(per_check, r.checks.size());
    }
    return decide_checks(r, per_check, true, true);
  }

  /// Decides (`commit`) or peeks `r`; with `grows` (commit only), each
  /// check's grows_after too. A request id's first decision keeps its
  /// grows_after, so that a repeat answers with the first one's figures.
  store_decision decide(const store_request& r, std::span<decision> per_check, bool commit,
                        std::span<std::optional<tick>> grows = {}) {
    const std::size_t n = r.checks.size();
    if (grows.empty() && n == 1 && r.id.empty() && cost_of(r, r.checks[0]) >= 1 &&
        entry_of(r.checks[0].policy) != nullptr) [[likely]]
      return decide_one(r.checks[0], r.now, cost_of(r, r.checks[0]), per_check, commit);
    decision local[max_checks];  // per-check decisions the caller wants none of, for grows_after or an id
    if (!grows.empty() && per_check.empty() && n <= max_checks) per_check = std::span<decision>(local, n);
    if (!valid(r, per_check)) {
      if (commit) add(counter::errors);
      for (auto& g : grows) g.reset();
      return error_decision(per_check, n);
    }
    // A request that reads no state charges nothing and answers the same
    // every time: its id is not remembered (semantics.md, "Request ids"),
    // as in every store.
    bool no_state = true;
    for (std::size_t i = 0; i < n && no_state; ++i) no_state = entry_of(r.checks[i].policy)->stateless;
    if (r.id.empty() || opt.idempotency_window <= 0 || no_state) {
      store_decision d = n == 1 ? decide_one(r.checks[0], r.now, cost_of(r, r.checks[0]), per_check, commit)
                                : decide_checks(r, per_check, commit);
      if (!grows.empty()) fill_grows(r, d, per_check, grows);
      return d;
    }
    std::string identity;
    detail::request_identity(
        r, [&](std::size_t i) -> std::string_view { return entry_of(r.checks[i].policy)->name; }, identity);
    const tick born = id_now(r.now);
    const std::size_t bytes = commit ? id_bytes_of(r, identity.size()) : 0;
    // Near the bound, the ids whose window has ended go first, every
    // stripe's (one lock at a time, before this id's own).
    if (commit && id_bytes_held.load(std::memory_order_relaxed) + bytes > opt.max_id_bytes) forget_all_expired(born);
    id_stripe& s = stripe_of(r.id);
    std::lock_guard lock(s.mu);  // a repeat arriving meanwhile waits, then replays
    if (const id_entry* e = remembered(s, r.id, born); e != nullptr) {
      if (e->identity != identity) {
        // Another request under a used id: refused, nothing decided
        // (semantics.md, "Request ids").
        if (commit) add(counter::conflicts);
        for (auto& g : grows) g.reset();
        store_decision c = error_decision(per_check, n);
        c.from = source::id_conflict;
        return c;
      }
      if (commit) add(counter::replayed);
      return replay(*e, per_check, grows, n);
    }
    // Keep the per-check decisions and grows_after for a replay even when
    // the caller asks for none.
    // A decision also takes each check's receipt, for a refund by id.
    const std::span<decision> pc = per_check.empty() ? std::span<decision>(local, n) : per_check;
    if (!commit)
      return n == 1 ? decide_one(r.checks[0], r.now, cost_of(r, r.checks[0]), pc, false) : decide_checks(r, pc, false);
    forget_expired(s, born);
    if (!take_id_bytes(bytes)) {
      // At max_id_bytes a new id is answered as a new key at max_keys is,
      // by on_full: nothing charged and the id not remembered, so a retry
      // is never charged twice (docs/serve.md, "Request ids").
      ids_refused.fetch_add(1, std::memory_order_relaxed);
      for (auto& gr : grows) gr.reset();
      return full(r.checks, r.cost, r.now, per_check);
    }
    receipt tickets[max_checks];
    store_decision d = decide_checks(r, pc, true, false, std::span<receipt>(tickets, n));
    d.lease = issued_lease(d);  // remembered with the decision: a repeat answers the same lease
    std::optional<tick> mine[max_checks];
    const std::span<std::optional<tick>> g = grows.empty() ? std::span<std::optional<tick>>(mine, n) : grows;
    fill_grows(r, d, pc, g);
    remember(s, r.id, std::move(identity), r, d, pc, g.first(n), n, std::span<receipt>(tickets, n), born, bytes);
    return d;
  }

  /// Refunds request id `id` at `now` (semantics.md, "Refunds"): its
  /// receipts through the gates of its policies, under the id's stripe lock
  /// (so a refund and its request's retry are ordered), at most once.
  refund_answer refund(std::string_view id, tick now, std::span<decision> per_check, std::span<std::int64_t> given);
};

}  // namespace sluice
