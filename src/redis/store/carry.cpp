// The Redis store's requests that the client decides itself: those whose
// keys hold values of an earlier configuration (carried over, then written
// with a compare-and-set), and repeated request ids (from their records).
// See migrate.hpp and docs/redis.md, "Redefining a policy".
#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>

#include "redis/store/id_record.hpp"
#include "redis/store/store_impl.hpp"
#include "sluice/core/concurrency.hpp"

namespace sluice {

using redis::outcome;

outcome redis_store::impl::decide_carried(const store_request& r, const entry* const* es,
                                          const std::vector<std::optional<std::string>>& values, bool peek,
                                          store_decision& out, std::span<decision> per_check,
                                          std::span<std::optional<tick>> grows, bool report) {
  std::vector<std::optional<std::string_view>> before;
  before.reserve(values.size());
  for (const auto& v : values) before.push_back(v ? std::optional<std::string_view>(*v) : std::nullopt);
  std::vector<any_state> read;
  std::vector<any_state> next;
  std::unique_ptr<bool[]> stale(new bool[before.size()]());
  const outcome o = decide_on(r, es, r.now, {}, before, {}, std::nullopt, peek, !peek, out, per_check, &read, &next,
                              std::span<bool>(stale.get(), before.size()), grows, report);
  if (o != outcome::ok) return o;
  if (peek) return outcome::ok;
  carried.fetch_add(1, std::memory_order_relaxed);
  const bool has_id = !r.id.empty();
  if (!out.d.allowed && !has_id) return outcome::ok;  // a denial is a pure read
  // What an admit writes: every leaf it changed, and every leaf read from an
  // earlier configuration (so that a key's values always share one
  // configuration, migrate.hpp): its carried state, or a delete when that
  // is fresh (an absent leaf is fresh). Every key must still hold what was
  // read (a compare-and-set).
  std::vector<redis::cas_key> keys;
  keys.reserve(before.size() + r.checks.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < r.checks.size(); ++i) {
    const redis::plan& p = *es[i]->p;
    for (std::size_t j = 0; j < p.leaves().size(); ++j, ++at) {
      redis::cas_key& k = keys.emplace_back();
      k.key = es[i]->key_head + std::string(r.checks[i].key) + "}" + p.leaves()[j].suffix;
      if (before[at]) k.expected.emplace(*before[at]);
      if (!out.d.allowed) continue;
      // An absent leaf whose state is not fresh (carried from a key of an
      // earlier configuration) is written too.
      const bool always = stale[at] || (!before[at] && !(next[at] == fresh_state(*p.leaves()[j].policy)));
      if (write_leaf(p, j, read[at], next[at], always, r.now, k) != redis::leaf_write::unholdable) continue;
      // A leaf only carried (not changed) that the library could not hold
      // (a count past the new limit, ...) is left as it was written: it is
      // carried again from there (migrate.hpp).
      if (!stale[at] || !(read[at] == next[at])) return outcome::mismatch;  // a state the library cannot hold
    }
  }
  std::string record;
  if (has_id) {
    std::int64_t h = 0;
    std::int64_t l = 0;
    redis::split_limbs(r.now, h, l);
    record = std::to_string(h) + " " + std::to_string(l) + (out.d.allowed ? " 1" : " 0");
    at = 0;
    for (std::size_t i = 0; i < r.checks.size(); ++i) {
      if (es[i]->is_override) {
        // The override that decided this check: a repeat recomputes under
        // it even after it changed (semantics.md, "Overrides").
        record.append("|V");
        redis::put_item(record, es[i]->override_bytes);
      }
      for (const auto& lp : es[i]->p->leaves()) {
        record.push_back('|');
        record.append(lp.tag_view());
        redis::put_item(record, before[at]);
        const auto& w = keys[at].written;
        redis::put_item(record, w && !w->empty() ? std::optional<std::string_view>(*w) : std::nullopt);
        ++at;
      }
    }
  }
  // Each check's override key too, expected as this request was built
  // for it: a change between the read and this write is caught.
  for (std::size_t i = 0; i < r.checks.size(); ++i)
    if (!es[i]->p->leaves().empty() && overridable(r.checks[i].key)) {
      redis::cas_key& k = keys.emplace_back();
      k.key = override_key(*es[i], r.checks[i].key);
      if (es[i]->is_override) k.expected = es[i]->override_bytes;
    }
  std::vector<std::string> head;  // the request id's key
  if (has_id) append_id_key(r, es, head.emplace_back());
  std::string identity;
  if (has_id) identity_of(r, es, identity);
  const std::string args[] = {has_id ? "1" : "0", id_ttl, record, identity};
  const auto a = compare_and_set(fns.cas, head, args, keys);
  if (const auto* err = std::get_if<redis::call_error>(&a.res)) return redis::outcome_of(*err);
  switch (a.status.value_or(-1)) {
    case 1:
      return outcome::ok;
    case 0:
      return outcome::conflict;
    case 5:
      return outcome::id_conflict;
    case 2: {
      const auto& arr = *a.array();
      if (arr.size() != 2 || !arr[1].as_string()) return outcome::failure;
      return replay(r, es, *arr[1].as_string(), peek, out, per_check, grows);
    }
    default:
      return outcome::failure;
  }
}

std::optional<std::int64_t> redis_store::impl::px_of(const redis::plan& p, std::size_t leaf,
                                                     std::string_view value) const {
  const std::int64_t ticks = p.ticks_to_fresh(leaf, value);
  if (ticks < 0) return std::nullopt;
  if (opt.tick_ns <= 0) return opt.unknown_tick_ttl.count();
  const detail::i128 ms = (static_cast<detail::i128>(ticks) * opt.tick_ns + 999'999) / 1'000'000;
  return static_cast<std::int64_t>(std::min<detail::i128>(ms + opt.grace.count() + 1, detail::i128{1} << 50));
}

outcome redis_store::impl::replay(const store_request& r, const entry* const* es, std::string_view rec, bool peek,
                                  store_decision& out, std::span<decision> per_check,
                                  std::span<std::optional<tick>> grows) {
  const auto record = redis::read_id_record(rec);
  if (!record) return outcome::corrupt;
  const auto& [now, admitted, tags, before, after, marks] = *record;
  // Each check's entry as it was decided: the override the record names
  // (the first decision stands after the override changed), else the
  // configured policy's.
  std::array<const entry*, max_checks> decided{};
  {
    std::size_t first = 0;
    for (std::size_t i = 0; i < r.checks.size(); ++i) {
      decided[i] = entry_of(r.checks[i].policy);
      if (decided[i] == nullptr) return outcome::unknown;
      for (const auto& [leaf, bytes] : marks)
        if (leaf == first) {
          auto e = override_entry(r.checks[i].policy, bytes);
          if (!e) return outcome::unknown;
          decided[i] = e.value();
        }
      first += decided[i]->p->leaves().size();
    }
  }
  es = decided.data();
  // The configuration each check was decided under: the latest whose leaves
  // have the recorded tags (the first decision is recomputed under it, even
  // after a redefinition).
  std::vector<std::size_t> epoch_of(r.checks.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < r.checks.size(); ++i) {
    const auto& epochs = es[i]->epochs;
    const std::size_t k = es[i]->p->leaves().size();
    if (at + k > tags.size()) return outcome::corrupt;
    bool found = false;
    for (std::size_t e = epochs.size(); e-- > 0 && !found;) {
      const auto& leaves = epochs[e].p->leaves();
      if (leaves.size() != k) continue;
      found = true;
      for (std::size_t j = 0; j < k && found; ++j) found = leaves[j].tag_view() == tags[at + j];
      if (found) epoch_of[i] = e;
    }
    if (!found) return outcome::unknown;
    at += k;
  }
  if (at != tags.size()) return outcome::corrupt;
  // The first decision's lease (its nonce, found in what it wrote): the
  // repeat answers it again, and the core decides under it.
  std::uint64_t nonce = 0;
  at = 0;
  for (std::size_t i = 0; i < r.checks.size(); ++i) {
    const redis::plan& p = *es[i]->epochs[epoch_of[i]].p;
    for (std::size_t j = 0; j < p.leaves().size(); ++j, ++at)
      if (nonce == 0) nonce = p.issued_nonce(j, before[at], after[at]);
  }
  const lease_scope scope(nonce);
  const outcome o = decide_on(r, es, now, epoch_of, before, after, admitted, peek, false, out, per_check, nullptr,
                              nullptr, {}, grows);
  if (o == outcome::ok) out.from = source::replayed;
  return o;
}

}  // namespace sluice
