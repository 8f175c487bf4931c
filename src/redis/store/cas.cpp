// The Redis store's one read → modify → compare-and-set write (refunds,
// releases, overrides, carried-over states): each leaf's new value with
// its expiry (write_leaf), then one call of `_cas` or `_refund` that writes
// them only if every key still holds what was read (compare_and_set). Each
// caller reads and decides with the core itself; a lost race (status 0) is
// counted here and read again by the caller. See main.lua, refund.lua.
#include <string>
#include <vector>

#include "redis/store/store_impl.hpp"

namespace sluice {

const std::vector<redis::reply>* redis::cas_answer::array() const {
  const auto* rep = std::get_if<reply>(&res);
  const auto* arr = rep != nullptr ? rep->as_array() : nullptr;
  return arr != nullptr && !arr->empty() && (*arr)[0].as_integer() ? arr : nullptr;
}

redis::leaf_write redis_store::impl::write_leaf(const redis::plan& p, std::size_t j, const any_state& was,
                                                const any_state& next, bool always, tick at, redis::cas_key& k) const {
  if (was == next && !always) return redis::leaf_write::kept;
  if (next == fresh_state(*p.leaves()[j].policy)) {
    if (k.expected) k.written = std::string();  // a fresh state's key goes
    return redis::leaf_write::written;
  }
  std::string v;
  if (!p.encode_leaf(j, next, at, v)) return redis::leaf_write::unholdable;
  if (const auto ms = px_of(p, j, v)) k.px = *ms;
  k.written = std::move(v);
  return redis::leaf_write::written;
}

redis::cas_answer redis_store::impl::compare_and_set(const redis::library_function& function,
                                                     std::span<const std::string> head_keys,
                                                     std::span<const std::string> head_args,
                                                     std::span<const redis::cas_key> keys,
                                                     std::span<const std::string_view> invalidated) {
  std::vector<std::string> strings(head_keys.begin(), head_keys.end());
  strings.reserve(head_keys.size() + keys.size() + head_args.size() + 3 * keys.size() + 2);
  for (const auto& k : keys) strings.push_back(k.key);
  strings.insert(strings.end(), head_args.begin(), head_args.end());
  for (const auto& k : keys) {
    strings.push_back(k.expected ? "=" + *k.expected : std::string("-"));
    strings.push_back(!k.written ? std::string() : k.written->empty() ? std::string("-") : *k.written);
    strings.push_back(std::to_string(k.px));
  }
  if (!invalidated.empty()) append_invalidation(strings, invalidated);
  const std::vector<std::string_view> views(strings.begin(), strings.end());
  redis::cas_answer a{std::nullopt, call_one(function.call(head_keys.size() + keys.size(), views))};
  if (const auto* arr = a.array()) a.status = (*arr)[0].as_integer();
  if (a.status == 0) carry_conflicts.fetch_add(1, std::memory_order_relaxed);  // a key moved: the caller reads again
  return a;
}

}  // namespace sluice
