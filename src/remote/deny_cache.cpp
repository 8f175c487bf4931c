// deny_cache: shards of 4-way buckets, each shard under its own mutex.
#include "sluice/remote/deny_cache.hpp"

#include <algorithm>
#include <bit>
#include <limits>

#include "sluice/core/detail/hash.hpp"

namespace sluice::remote {

struct deny_cache::slot {
  std::uint64_t hash = 0;  // of the key
  std::uint64_t version = 0;
  tick at = 0;            // the `now` of the denial
  tick until = 0;         // first tick the request may be admitted (unless never_)
  std::int64_t cost = 0;  // the smallest cost this denial covers
  policy_id policy = 0;
  bool used = false;
  bool never_ = false;
  std::string key;
};

struct alignas(64) deny_cache::shard {
  mutable std::mutex mu;
  std::vector<slot> slots;    // requires mu
  std::vector<tick> horizon;  // per bucket: the latest `now` sent to the store for its keys; requires mu
};

namespace {

constexpr std::size_t ways = 4;

std::uint64_t key_hash(std::string_view key) {
  return keyed_detail::hash_bytes(key.data(), key.size(), 0x5eed'deca'f000'0001ULL);
}

bool same(const auto& s, std::uint64_t h, policy_id policy, std::string_view key) {
  return s.used && s.hash == h && s.policy == policy && s.key == key;
}

}  // namespace

deny_cache::deny_cache(std::size_t capacity, std::size_t shards) {
  shard_count_ = std::bit_ceil(std::max<std::size_t>(1, shards));
  slots_per_shard_ = std::bit_ceil(std::max<std::size_t>(ways, (capacity + shard_count_ - 1) / shard_count_));
  shard_shift_ = static_cast<unsigned>(64 - std::countr_zero(shard_count_));
  shards_ = std::make_unique<shard[]>(shard_count_);
  for (std::size_t i = 0; i < shard_count_; ++i) {
    shards_[i].slots.resize(slots_per_shard_);
    shards_[i].horizon.assign(slots_per_shard_ / ways, std::numeric_limits<tick>::min());
  }
}

deny_cache::~deny_cache() = default;

deny_cache::shard& deny_cache::shard_of(std::uint64_t h) const {
  // The top bits pick the shard, so that every policy's entry of one key is
  // in one shard (forget_key sweeps only it); the low bits pick the bucket.
  return shards_[shard_count_ == 1 ? 0 : static_cast<std::size_t>(h >> shard_shift_)];
}

std::size_t deny_cache::bucket_of(std::uint64_t h, policy_id policy) const {
  const std::uint64_t m = keyed_detail::mum(h ^ keyed_detail::hash_k1, policy ^ keyed_detail::hash_k2);
  return static_cast<std::size_t>(m) & (slots_per_shard_ - 1) & ~(ways - 1);
}

std::optional<tick> deny_cache::lookup(policy_id policy, std::uint64_t version, std::string_view key, std::int64_t cost,
                                       tick now) {
  const std::uint64_t h = key_hash(key);
  shard& s = shard_of(h);
  const std::size_t b = bucket_of(h, policy);
  std::lock_guard lock(s.mu);
  // Recorded first: a request this cache does not answer goes to the store,
  // and may admit there at `now`.
  tick& mark = s.horizon[b / ways];
  mark = std::max(mark, now);
  for (std::size_t i = b; i < b + ways; ++i) {
    const slot& e = s.slots[i];
    if (!same(e, h, policy, key)) continue;
    if (e.version != version || cost < e.cost) return std::nullopt;
    // A `never` may be an end past the last tick, which an earlier stamp
    // (read at an earlier time) can bring back within it: only at or after
    // the denial's own `now`.
    if (e.never_) return now >= e.at ? std::optional<tick>(never) : std::nullopt;
    // Once a request at or past the end has gone to the store (the mark),
    // the key's time may have moved past it: never answered again.
    if (now >= e.until || mark >= e.until) return std::nullopt;
    tick wait = 0;
    if (__builtin_sub_overflow(e.until, now, &wait)) return never;  // a wait past the largest tick
    return wait;
  }
  return std::nullopt;
}

void deny_cache::note(policy_id policy, std::string_view key, tick now) {
  const std::uint64_t h = key_hash(key);
  shard& s = shard_of(h);
  std::lock_guard lock(s.mu);
  tick& mark = s.horizon[bucket_of(h, policy) / ways];
  mark = std::max(mark, now);
}

void deny_cache::insert(policy_id policy, std::uint64_t version, std::string_view key, std::int64_t cost, tick now,
                        tick retry_after, std::uint64_t seen_generation) {
  if (retry_after <= 0 || cost < 1) return;
  const bool is_never = retry_after == never;
  // Stamped before tick 0, a `never` may be a wait longer than a tick count
  // holds (the key's time far ahead of `now`), which a later stamp brings
  // within one: not a denial that holds for later requests.
  if (is_never && now < 0) return;
  tick until = 0;
  if (!is_never && __builtin_add_overflow(now, retry_after, &until)) return;  // past the end of time: never cached
  const std::uint64_t h = key_hash(key);
  shard& s = shard_of(h);
  const std::size_t b = bucket_of(h, policy);
  std::lock_guard lock(s.mu);
  // Every forget bumps the generation under the lock of the shard it
  // concerns, so one that concerns this key is either seen here or after.
  if (seen_generation != any_generation && seen_generation != generation_.load(std::memory_order_relaxed)) return;
  slot* target = nullptr;
  for (std::size_t i = b; i < b + ways && target == nullptr; ++i)
    if (same(s.slots[i], h, policy, key)) target = &s.slots[i];
  for (std::size_t i = b; i < b + ways && target == nullptr; ++i)
    if (!s.slots[i].used) target = &s.slots[i];
  if (target == nullptr) {
    // Overwrite the entry that expires first (an expired one before any live one).
    target = &s.slots[b];
    for (std::size_t i = b + 1; i < b + ways; ++i) {
      const slot& e = s.slots[i];
      const tick eu = e.never_ ? never : e.until;
      const tick tu = target->never_ ? never : target->until;
      if (eu < tu) target = &s.slots[i];
    }
  }
  target->hash = h;
  target->version = version;
  target->at = now;
  target->until = until;
  target->cost = cost;
  target->policy = policy;
  target->used = true;
  target->never_ = is_never;
  target->key.assign(key.data(), key.size());
}

void deny_cache::forget(policy_id policy, std::string_view key) {
  const std::uint64_t h = key_hash(key);
  shard& s = shard_of(h);
  const std::size_t b = bucket_of(h, policy);
  std::lock_guard lock(s.mu);
  generation_.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = b; i < b + ways; ++i)
    if (same(s.slots[i], h, policy, key)) s.slots[i].used = false;
}

void deny_cache::forget_key(std::string_view key) {
  const std::uint64_t h = key_hash(key);
  shard& s = shard_of(h);
  std::lock_guard lock(s.mu);
  generation_.fetch_add(1, std::memory_order_relaxed);
  for (slot& e : s.slots)
    if (e.used && e.hash == h && e.key == key) e.used = false;
}

void deny_cache::forget(policy_id policy) {
  for (std::size_t i = 0; i < shard_count_; ++i) {
    shard& s = shards_[i];
    std::lock_guard lock(s.mu);
    generation_.fetch_add(1, std::memory_order_relaxed);
    for (slot& e : s.slots)
      if (e.used && e.policy == policy) e.used = false;
  }
}

void deny_cache::clear() {
  for (std::size_t i = 0; i < shard_count_; ++i) {
    shard& s = shards_[i];
    std::lock_guard lock(s.mu);
    generation_.fetch_add(1, std::memory_order_relaxed);
    for (slot& e : s.slots) e.used = false;
  }
}

std::uint64_t deny_cache::generation() const noexcept { return generation_.load(std::memory_order_relaxed); }

std::size_t deny_cache::size() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < shard_count_; ++i) {
    const shard& s = shards_[i];
    std::lock_guard lock(s.mu);
    for (const slot& e : s.slots) n += e.used ? 1 : 0;
  }
  return n;
}

}  // namespace sluice::remote
