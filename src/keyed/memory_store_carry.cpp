// A redefinition of a policy in the in-process store (semantics.md,
// "Reconfiguration"): the stores switch at once, and the states are carried
// over lazily — each on its key's next decision (carry_key), the rest by
// the carrier thread, a slice at a time — exactly as an eager carry-over.
#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>

#include "memory_store_impl.hpp"
#include "sluice/core/algorithm.hpp"

namespace sluice {
namespace memory_detail {
namespace {

/// `s`, a state of `ch.stores[i]`'s policy, carried through every later
/// configuration at the instant it took over (`current` last), as the
/// eager carry-over does (semantics.md, "Reconfiguration"): a step that
/// leaves it fresh drops it, fresh from then on.
any_state carry(const carry_chain& ch, std::size_t i, any_state s, const keyed_limiter& current) {
  for (std::size_t j = i; j < ch.stores.size(); ++j) {
    const any_policy& to = j + 1 < ch.stores.size() ? ch.stores[j + 1]->policy() : current.policy();
    auto next = reconfigure(ch.stores[j]->policy(), s, to, ch.until[j]);
    // define refused any change reconfigure cannot make (probed on the fresh state)
    if (!next) return fresh_state(current.policy());
    s = std::move(next).value();
    if (s == fresh_state(to)) return fresh_state(current.policy());
  }
  return s;
}

}  // namespace

/// Carries `key` over to `current` if a frozen store of `ch` still holds it
/// (under that store's shard lock, so a concurrent decision on the key waits
/// and then finds it in `current`). Requires a store read section.
void carry_key(const carry_chain& ch, keyed_limiter& current, std::string_view key) {
  for (std::size_t i = 0; i < ch.stores.size(); ++i)
    if (ch.stores[i]->take(key, [&](any_state&& s) { (void)current.put(key, carry(ch, i, std::move(s), current)); }))
      return;
}

}  // namespace memory_detail

bool memory_store::impl::carry_some(policy_entry& e) {
  if (!e.chain) return false;
  const carry_chain& ch = *e.chain;
  keyed_limiter& cur = *e.owned;
  const std::size_t moved = ch.stores.front()->take_some(
      carry_slice, [&](std::string_view key, any_state&& s) { (void)cur.put(key, carry(ch, 0, std::move(s), cur)); });
  if (moved > 0 || ch.stores.front()->size() > 0) return true;
  // The oldest is empty: a chain without it, then (once no decision can
  // still be reading the old chain) free both.
  std::unique_ptr<carry_chain> next;
  if (ch.stores.size() > 1) {
    next = std::make_unique<carry_chain>();
    next->stores.assign(ch.stores.begin() + 1, ch.stores.end());
    next->until.assign(ch.until.begin() + 1, ch.until.end());
  }
  e.pending.store(next.get(), std::memory_order_release);
  keyed_detail::synchronize(keyed_detail::domain::store);
  e.chain = std::move(next);
  e.frozen.erase(e.frozen.begin());
  return e.chain != nullptr;
}

void memory_store::impl::settle(policy_entry& e) {
  while (carry_some(e)) {
  }
}

void memory_store::impl::carrier_loop() {
  std::unique_lock lock(carry_mu);
  for (;;) {
    carry_cv.wait(lock, [&] { return carry_stop || !carry_queue.empty(); });
    if (carry_stop) return;
    policy_entry* e = carry_queue.front();
    lock.unlock();
    bool more = false;
    {
      std::lock_guard r(e->redefine);
      more = carry_some(*e);
    }
    lock.lock();
    if (!more) carry_queue.erase(std::remove(carry_queue.begin(), carry_queue.end(), e), carry_queue.end());
  }
}

void memory_store::impl::schedule_carry(policy_entry& e) {
  {
    std::lock_guard lock(carry_mu);
    if (std::find(carry_queue.begin(), carry_queue.end(), &e) == carry_queue.end()) carry_queue.push_back(&e);
    if (!carrier.joinable()) carrier = std::thread([this] { carrier_loop(); });
  }
  carry_cv.notify_all();
}

result<policy_id> memory_store::impl::redefine(policy_entry& e, policy_id id, const any_policy& to, tick now) {
  std::lock_guard lock(e.redefine);
  keyed_limiter& old = *e.owned;
  const any_policy& from = old.policy();
  // The same policy again: every state stays as it is (a reconfiguration
  // onto itself would move each state's clock to `now`).
  if (encode_policy(from) == encode_policy(to)) return id;
  // Refuse before anything changes: the fresh state tells whether the new
  // policy can continue the old one's states at all.
  if (auto probe = reconfigure(from, fresh_state(from), to, now); !probe) return probe.err();
  // A state carried to a smaller burst may hold a debt, out of the
  // lock-free cell's range: then this policy decides under the shard
  // locks from now on.
  e.debt = e.debt || may_leave_debt(from, to);
  keyed_options ko = opt.keyed;
  if (e.debt) ko.compact = false;
  std::unique_ptr<keyed_limiter> next = make_limiter(to, ko);
  auto chain = std::make_unique<carry_chain>();
  if (e.chain) *chain = *e.chain;
  // Room for every state still to carry, so that carrying grows no table.
  std::size_t held = old.size();
  for (const keyed_limiter* k : chain->stores) held += k->size();
  detail::keyed_internals::of(*next).reserve(held);
  chain->stores.push_back(e.owned.get());
  chain->until.push_back(now);
  e.closed.store(true, std::memory_order_seq_cst);
  keyed_detail::synchronize(keyed_detail::domain::store);  // decisions in flight on `old` end
  // No decision reads `current` or `pending` now: switch both.
  e.frozen.push_back(std::move(e.owned));
  e.owned = std::move(next);
  e.current.store(e.owned.get(), std::memory_order_release);
  e.chain = std::move(chain);  // the previous chain is freed: no reader holds it
  e.pending.store(e.chain.get(), std::memory_order_release);
  {
    std::lock_guard g(gate_mu);
    e.closed.store(false, std::memory_order_release);
  }
  gate_cv.notify_all();
  schedule_carry(e);
  return id;
}

}  // namespace sluice
