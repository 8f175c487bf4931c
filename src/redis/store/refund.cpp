// The Redis store's refund by request id (store.hpp refund_at; semantics.md
// "Refunds"; docs/redis.md "Refunds"). The id's record holds what its first
// decision read at every leaf (and wrote), so the client rebuilds each
// check's receipt with the core `admit` on the state before, reads the
// states now, refunds them with the core `refund` and writes the result
// with one compare-and-set (refund.lua) that also marks the id refunded:
// exactly once across a fleet, and a retry after a lost reply answers
// "already refunded".
#include <algorithm>
#include <array>
#include <charconv>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "redis/store/id_record.hpp"
#include "redis/store/store_impl.hpp"
#include "sluice/core/concurrency.hpp"
#include "sluice/core/detail/log_rebuild.hpp"
#include "sluice/core/fixed_window.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/leaky_queue.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/core/quota.hpp"
#include "sluice/core/refund.hpp"
#include "sluice/core/report.hpp"
#include "sluice/core/sliding_buckets.hpp"
#include "sluice/core/sliding_counter.hpp"
#include "sluice/core/sliding_log.hpp"
#include "sluice/core/token_bucket.hpp"

namespace sluice {

using redis::outcome;

namespace {

// A refund that loses its compare-and-set to another writer of the same keys
// reads again: every lost race is another call's success, so it retries for
// up to this long (and at least `refund_min_attempts` times) before it answers
// error (docs/redis.md, "Refunds").
constexpr int refund_min_attempts = 4;
constexpr std::int64_t refund_retry_ns = 1'000'000'000;

template <typename Int>
bool read_int(std::string_view rec, std::size_t& pos, Int& v, char end) {
  const auto [p, ec] = std::from_chars(rec.data() + pos, rec.data() + rec.size(), v);
  if (ec != std::errc{} || p == rec.data() + pos || p == rec.data() + rec.size() || *p != end) return false;
  pos = static_cast<std::size_t>(p - rec.data()) + 1;
  return true;
}

/// A length-prefixed field of an identity ("len:bytes").
bool read_field(std::string_view s, std::size_t& pos, std::string_view& out) {
  std::size_t len = 0;
  if (!read_int(s, pos, len, ':') || len > s.size() - pos) return false;
  out = s.substr(pos, len);
  pos += len;
  return true;
}

/// One check of the id's request, from its identity.
struct id_check {
  std::string_view name;
  std::string_view key;
  std::int64_t cost = 0;
};

/// The checks of an identity (detail::request_identity): "n|" then per
/// check "len:name" "len:key" "cost;".
bool parse_identity(std::string_view s, std::vector<id_check>& out) {
  std::size_t pos = 0;
  std::size_t n = 0;
  if (!read_int(s, pos, n, '|') || n == 0 || n > max_checks) return false;
  for (std::size_t i = 0; i < n; ++i) {
    id_check c;
    if (!read_field(s, pos, c.name) || !read_field(s, pos, c.key) || !read_int(s, pos, c.cost, ';') || c.cost < 1)
      return false;
    out.push_back(c);
  }
  return pos == s.size();
}

/// Leaf state `s` of `p`, refunded (or carried), as the library holds it;
/// true when it changed. An exhaustive chain: a new algorithm fails to
/// compile here until it says what its values cannot hold.
template <typename P>
bool settle_leaf(const P& p, typename P::state& s, tick now) {
  if constexpr (std::is_same_v<P, gcra>) {
    // A debt ≥ 0 after the latest admit's instant (gcra.hpp).
    return portable::of<gcra>::settle(p, s);
  } else if constexpr (std::is_same_v<P, leaky_queue>) {
    // A queue refunded whole to a tail R released before `last` (within one
    // unit's spacing of it) keeps R and takes last = floor(R / L): every
    // request at or after `last` decides alike (docs/redis.md, "Refunds":
    // the one difference, a clock stepping back inside that spacing).
    const std::int64_t l = p.limit().limit;
    if (s.last == detail::i64_min || l <= 0 || s.release == detail::minus_infinity ||
        s.release >= static_cast<detail::i128>(s.last) * l)
      return false;
    detail::i128 t = s.release / l;
    if (t * l > s.release) --t;  // floor
    s.last = static_cast<tick>(t);
    return true;
  } else if constexpr (std::is_same_v<P, sliding_log>) {
    // The library holds only the runs still in the window (a decision
    // prunes the rest; a refund's rebuilt log may keep them): the same log
    // without them, as the library reads it back. None left: the key goes
    // (an emptied state, below).
    if (s.empty()) return false;
    const tick w = p.limit().window;
    const detail::i128 horizon = static_cast<detail::i128>(std::max(now, s.last())) - w;
    std::vector<sliding_log::entry> kept;
    for (std::size_t e = 0; e < s.size(); ++e)
      if (s.at(e).at > horizon) kept.push_back(s.at(e));
    if (kept.empty() || kept.size() == s.size()) return false;
    s = detail::rebuild_log(w, kept);
    return true;
  } else if constexpr (std::is_same_v<P, sliding_counter>) {
    // A counter whose window's count the refund emptied: held as the window
    // before, its count the one that becomes `prev` in this window and is
    // dropped in the next one, alike (its latest instant: that window's
    // last tick).
    if (s.curr != 0 || s.prev <= 0) return false;
    s.curr = s.prev;
    s.prev = 0;
    s.last = static_cast<tick>(static_cast<detail::i128>(s.window) * p.limit().window - 1);
    s.window -= 1;
    return true;
  } else if constexpr (std::is_same_v<P, sliding_buckets>) {
    // A ring whose newest sub-window the refund emptied: the library's value
    // starts from its newest non-empty sub-window, so the ring is rebuilt
    // from there, as the library reads one back (values.cpp).
    if (s.total() <= 0) return false;
    const std::int64_t n = p.buckets();
    const tick width = p.limit().window / n;
    const auto count_of = [&](detail::i128 sub) { return s.counts()[static_cast<std::size_t>(((sub % n) + n) % n)]; };
    if (count_of(s.newest()) != 0) return false;
    const sliding_buckets big = sliding_buckets::make(rate{max_quantity, p.limit().window}, n).value();
    sliding_buckets::state rebuilt;
    for (std::int64_t k = n - 1; k >= 0; --k) {
      const detail::i128 sub = static_cast<detail::i128>(s.newest()) - k;
      const std::int64_t c = count_of(sub);
      if (c == 0) continue;
      detail::i128 t = sub * width;
      if (t < detail::i64_min) t = detail::i64_min;
      (void)big.decide(rebuilt, static_cast<tick>(t), c);
    }
    s = std::move(rebuilt);
    return true;
  } else if constexpr (std::is_same_v<P, token_bucket> || std::is_same_v<P, fixed_window> || std::is_same_v<P, quota> ||
                       std::is_same_v<P, concurrency>) {
    return false;  // a refund leaves a state the library holds as it is
  } else if constexpr (holds_no_leaf_state<P>) {
    return false;  // no leaf
  } else {
    static_assert(unhandled_algorithm<P>,
                  "a new algorithm: handle it here (docs/architecture.md, \"Adding an algorithm\")");
  }
}

/// A refunded state as the library holds it: every leaf settled
/// (settle_leaf).
void holdable_after_refund(const redis::plan& p, any_state& st, tick now) {
  std::vector<const any_state*> leaves;
  p.leaf_states(st, leaves);
  std::vector<any_state> fixed;
  bool changed = false;
  for (std::size_t j = 0; j < leaves.size(); ++j) {
    any_state x = *leaves[j];
    changed = std::visit(
                  [&](const auto& pol) {
                    using P = std::decay_t<decltype(pol)>;
                    return settle_leaf(pol, *std::get_if<typename P::state>(&x), now);
                  },
                  *p.leaves()[j].policy) ||
              changed;
    fixed.push_back(std::move(x));
  }
  if (changed) st = p.assemble(fixed);
}

/// Whether leaf state `s` of `leaf` holds nothing a decision at or after
/// `at` counts (the library writes no value for it: the key goes). An
/// exhaustive chain, as settle_leaf.
bool emptied(const any_policy& leaf, const any_state& s, tick at) {
  return std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (holds_no_leaf_state<P>) {
          return false;  // no leaf
        } else {
          const auto& st = *std::get_if<typename P::state>(&s);
          if constexpr (std::is_same_v<P, fixed_window>) {
            return st.count == 0;
          } else if constexpr (std::is_same_v<P, leaky_queue>) {
            return st.release == detail::minus_infinity;  // refunded to never having held a unit
          } else if constexpr (std::is_same_v<P, sliding_counter>) {
            return st.prev == 0 && st.curr == 0;
          } else if constexpr (std::is_same_v<P, sliding_log>) {  // no run in its window
            const detail::i128 horizon = static_cast<detail::i128>(std::max(at, st.last())) - p.limit().window;
            for (std::size_t e = 0; e < st.size(); ++e)
              if (st.at(e).at > horizon) return false;
            return true;
          } else if constexpr (std::is_same_v<P, sliding_buckets>) {
            return std::all_of(st.counts().begin(), st.counts().end(), [](std::int64_t c) { return c == 0; });
          } else if constexpr (std::is_same_v<P, gcra> || std::is_same_v<P, token_bucket> || std::is_same_v<P, quota> ||
                               std::is_same_v<P, concurrency>) {
            // Every state of theirs that counts nothing is one their values
            // hold (a debt of 0 at `last`) or the fresh state (no value):
            // a state they cannot write is out of range, not empty.
            return false;
          } else {
            static_assert(unhandled_algorithm<P>,
                          "a new algorithm: handle it here (docs/architecture.md, \"Adding an algorithm\")");
          }
        }
      },
      leaf);
}

}  // namespace

void redis::make_holdable(const plan& p, any_state& st, tick now) { holdable_after_refund(p, st, now); }
bool redis::leaf_emptied(const any_policy& leaf, const any_state& s, tick at) { return emptied(leaf, s, at); }

refund_answer redis_store::impl::refund_by_id(std::string_view id, tick now, std::span<decision> per_check,
                                              std::span<std::int64_t> given) {
  refund_answer a;
  a.at = now;
  const auto failed = [&](bool counted_failure) {
    if (counted_failure) failures.fetch_add(1, std::memory_order_relaxed);
    refund_failures.fetch_add(1, std::memory_order_relaxed);
    a.status = refund_status::error;
    return a;
  };
  // In a cluster an id's key takes its request's slot tag (append_id_key),
  // which the id alone does not name: there `id` is a refund id,
  // `{<tag>}<id>` (refund_id), whose keys below lie in the tag's slot, as
  // the record's checks' do (docs/redis.md, "Refunds"). Anything else names
  // no slot.
  if (cluster != nullptr &&
      (id.size() < 3 || id[0] != '{' || id.find('}') == std::string_view::npos || id.find('}') < 2))
    return failed(false);
  if (id.empty() || opt.idempotency_window.count() <= 0) {
    a.status = refund_status::unknown_id;
    return a;
  }
  if (breaker && !breaker->allow_call_now()) {
    breaker_open.fetch_add(1, std::memory_order_relaxed);
    return failed(false);
  }
  const std::string id_key = opt.key_prefix + "i:" + std::string(id);
  const std::string mark_key = opt.key_prefix + "r:" + std::string(id);
  // Every call's outcome feeds the breaker as a decision's does.
  const auto note = [&](bool ok) {
    if (breaker && (ok ? breaker->record_success_now() : breaker->record_failure_now()))
      health_changed(node, ok, figures.last_reason());
  };
  const auto read = [&](std::span<const std::string_view> keys) -> std::optional<std::vector<redis::reply>> {
    // At the store's clock each read also answers its instant (the last
    // read's, before the states are refunded, is the refund's).
    std::vector<std::string_view> args(keys.begin(), keys.end());
    const std::string tns = std::to_string(opt.tick_ns);
    if (at_store_clock()) args.push_back(tns);
    const std::int64_t sent = remote::circuit_breaker::steady_ns();
    auto res = call_one(fns.refund_read.call(keys.size(), args));
    auto* rep = std::get_if<redis::reply>(&res);
    if (rep != nullptr && !rep->is_error() && !take_instant(*rep, sent, now)) rep = nullptr;
    a.at = now;
    const auto* arr = rep != nullptr ? rep->as_array() : nullptr;
    if (arr == nullptr || arr->size() != keys.size()) {
      note(false);
      return std::nullopt;
    }
    note(true);
    return *arr;
  };
  const std::int64_t started = remote::circuit_breaker::steady_ns();
  for (int attempt = 0;
       attempt < refund_min_attempts || remote::circuit_breaker::steady_ns() - started < refund_retry_ns; ++attempt) {
    const std::string_view head_keys[] = {id_key, mark_key};
    const auto head = read(head_keys);
    if (!head) return failed(true);
    if (!(*head)[1].is_nil()) {
      a.status = refund_status::already_refunded;
      return a;
    }
    const auto raw = (*head)[0].as_string();
    if (!raw) {
      a.status = refund_status::unknown_id;
      return a;
    }
    const std::string record(*raw);
    // The record: item(identity), then the decision's (id_record.hpp).
    std::size_t pos = 0;
    std::optional<std::string_view> identity;
    std::vector<id_check> wanted;
    std::optional<redis::id_record> parsed;
    if (!redis::read_item(record, pos, identity) || !identity || !parse_identity(*identity, wanted) ||
        !(parsed = redis::read_id_record(std::string_view(record).substr(pos)))) {
      corrupt.fetch_add(1, std::memory_order_relaxed);
      return failed(false);
    }
    const auto& [at, admitted, tags, before, wrote, marks] = *parsed;
    if (!admitted) {
      a.status = refund_status::not_refundable;
      return a;
    }
    // The checks' entries, by name: a name this store does not define
    // cannot be refunded here (its state keys and rules are unknown).
    const std::size_t n = wanted.size();
    std::array<const entry*, max_checks> es{};
    std::array<policy_id, max_checks> pids{};
    {
      std::lock_guard lock(defs_mu);
      for (std::size_t i = 0; i < n; ++i) {
        auto it = ids.find(std::string(wanted[i].name));
        if (it == ids.end()) return failed(false);
        pids[i] = it->second;
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      if ((es[i] = entry_of(pids[i])) == nullptr) return failed(false);
    // Each check's receipt: the core `admit` on its state before, under the
    // configuration that decided (the override the record names, else the
    // latest configuration whose leaves' tags are the record's, as a replay
    // finds it); none when no configuration here has those tags.
    std::vector<receipt> tickets(n);
    std::size_t li = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const entry* decided = es[i];
      for (const auto& [leaf, bytes] : marks)
        if (leaf == li) {
          auto e = override_entry(pids[i], bytes);
          if (!e) return failed(false);
          decided = e.value();
        }
      const std::size_t k = decided->p->leaves().size();
      if (li + k > tags.size()) return failed(false);
      const auto& epochs = decided->epochs;
      for (std::size_t e = epochs.size(); e-- > 0;) {
        const auto& leaves = epochs[e].p->leaves();
        if (leaves.size() != k) continue;
        bool same = true;
        for (std::size_t j = 0; j < k && same; ++j) same = leaves[j].tag_view() == tags[li + j];
        if (!same) continue;
        tick latest = detail::i64_min;
        redis::read_outcome how = redis::read_outcome::current;
        auto st =
            redis::read_check(std::span<const redis::epoch>(epochs.data(), e + 1),
                              std::span<const std::optional<std::string_view>>(before).subspan(li, k), latest, how);
        // A concurrency part's receipt names the lease the admit took (its
        // nonce, in what it wrote): refunding it releases that lease.
        std::uint64_t nonce = 0;
        for (std::size_t j = 0; j < k && nonce == 0; ++j)
          nonce = epochs[e].p->issued_nonce(j, before[li + j], wrote[li + j]);
        const lease_scope scope(nonce);
        if (st) tickets[i] = admit(epochs[e].p->policy(), *st, at, wanted[i].cost).ticket;
        break;
      }
      li += k;
    }
    if (li != tags.size()) return failed(false);
    // The states now, under the current configurations, and each check's
    // override key (read with them, and expected unchanged by the write: the
    // states are refunded under the override stored now, if any).
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < n; ++i)
      for (const auto& lp : es[i]->p->leaves())
        keys.push_back(es[i]->key_head + std::string(wanted[i].key) + "}" + lp.suffix);
    const std::size_t state_keys = keys.size();
    // A key a Cluster cannot override has no override key: it would lie in
    // another slot (docs/redis.md, "Overrides").
    const auto named = [&](std::size_t i) { return !es[i]->p->leaves().empty() && overridable(wanted[i].key); };
    for (std::size_t i = 0; i < n; ++i)
      if (named(i)) keys.push_back(override_key(*es[i], wanted[i].key));
    std::vector<std::string_view> key_views(keys.begin(), keys.end());
    std::vector<std::optional<std::string>> values;
    if (!keys.empty()) {
      const auto got = read(key_views);
      if (!got) return failed(true);
      for (const auto& v : *got) {
        const auto s = v.as_string();
        values.push_back(s ? std::optional<std::string>(std::string(*s)) : std::nullopt);
      }
    }
    for (std::size_t i = 0, o = state_keys; i < n; ++i) {
      if (!named(i)) continue;
      if (const auto& stored = values[o++]) {
        auto e = override_entry(pids[i], *stored);
        if (!e) return failed(false);
        es[i] = e.value();
      }
    }
    std::vector<std::optional<std::string_view>> now_values;
    for (std::size_t x = 0; x < state_keys; ++x)
      now_values.push_back(values[x] ? std::optional<std::string_view>(*values[x]) : std::nullopt);
    // Every key as read (override keys: never written), and its write.
    std::vector<redis::cas_key> writes(keys.size());
    for (std::size_t x = 0; x < keys.size(); ++x) {
      writes[x].key = keys[x];
      writes[x].expected = values[x];
    }
    std::array<decision, max_checks> figs{};
    std::array<std::int64_t, max_checks> back{};
    std::size_t ki = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const redis::plan& p = *es[i]->p;
      const std::size_t k = p.leaves().size();
      auto [st, latest, how, stale] = redis::read_check_at(es[i]->epochs, now_values, ki);
      if (!st) {
        corrupt.fetch_add(1, std::memory_order_relaxed);
        return failed(false);
      }
      const any_state was = *st;
      back[i] = refund(p.policy(), *st, std::move(tickets[i]), now);
      if (!(was == *st)) holdable_after_refund(p, *st, std::max(now, latest));
      if (!(was == *st)) {
        // Write every leaf the refund changed, and every leaf carried from
        // an earlier configuration (a key's values share one configuration,
        // migrate.hpp); a fresh leaf is deleted.
        std::vector<const any_state*> old_leaves;
        std::vector<const any_state*> new_leaves;
        p.leaf_states(was, old_leaves);
        p.leaf_states(*st, new_leaves);
        for (std::size_t j = 0; j < k; ++j) {
          redis::cas_key& w = writes[ki + j];
          const tick when = std::max(now, latest);
          if (write_leaf(p, j, *old_leaves[j], *new_leaves[j], stale[j], when, w) != redis::leaf_write::unholdable)
            continue;
          // A state the refund emptied has no value the library writes (a
          // window's count of 0, a log with no run left in its window): it
          // decides as a fresh one, so its key goes.
          if (!emptied(*p.leaves()[j].policy, *new_leaves[j], when)) return failed(false);
          if (w.expected) w.written = std::string();
        }
      }
      // The figures after the refund: a report's (a decision of cost 1 at
      // `now`, allowed).
      any_state zero = *st;
      any_state one = *st;
      const decision z = sluice::decide(p.policy(), zero, now, 0);
      figs[i] = report_answer(z, sluice::decide(p.policy(), one, now, 1));
      ki += k;
    }
    // Every process's cached denials of the id's keys end with the refund.
    std::vector<std::string_view> changed;
    for (std::size_t i = 0; i < n; ++i) changed.push_back(wanted[i].key);
    const std::string id_keys[] = {id_key, mark_key};
    const auto cas = compare_and_set(fns.refund, id_keys, std::span(&record, 1), writes, changed);
    if (!cas.status) {
      note(false);
      return failed(true);
    }
    note(true);
    if (*cas.status == 6) {
      a.status = refund_status::already_refunded;
      return a;
    }
    if (*cas.status != 1) continue;  // something moved (counted): read again
    refunds.fetch_add(1, std::memory_order_relaxed);
    settle(id_key);  // every other process has the call's message before the refund is acknowledged
    // More permissive now: the deny cache forgets these keys (Keys).
    if (denials)
      for (std::size_t i = 0; i < n; ++i) denials->forget(pids[i], wanted[i].key);
    a.status = refund_status::refunded;
    a.checks = n;
    a.d = combine_reports(std::span<const decision>(figs.data(), n));
    for (std::size_t i = 0; i < std::min(n, per_check.size()); ++i) per_check[i] = figs[i];
    for (std::size_t i = 0; i < std::min(n, given.size()); ++i) given[i] = back[i];
    return a;
  }
  return failed(false);  // still contended after every attempt: nothing refunded
}

refund_answer redis_store::refund_at(std::string_view id, tick now, std::span<decision> per_check,
                                     std::span<std::int64_t> given) {
  return impl_->refund_by_id(id, now, per_check, given);
}

}  // namespace sluice
