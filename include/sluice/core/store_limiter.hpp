// One policy over any store: the view a program takes when it limits one
// thing (an API, per client key) and keeps its states in a store — this
// process's memory store, or Redis shared by a fleet — instead of holding
// a `keyed_limiter` of its own.
//
// A `store_limiter` defines its policy in the store once, and then decides
// each request as one check of that policy: `decide(key, cost)` is
// `store::decide` of a request of one check, on the store's clock, and
// answers with the check's own decision (its `part` as its limiter reports
// it, as a `keyed_limiter` would), and where it came from. Each call has an
// explicit-time twin (`decide_at`, ...) for a caller that owns the clock (a
// replayed trace, a test).
//
//   sluice::memory_store memory;                                  // or a store opened from a URL
//   auto api = sluice::store_limiter::make(memory, "api", *sluice::parse_policy("gcra 100/1s burst=20"));
//   sluice::store_decision d = api->decide("client-42");         // d.d.allowed, d.d.retry_after, d.from
//
// A store that cannot answer (Redis down, slow) decides by its failure
// mode: `from` says so, and `d` is that mode's answer. The view holds only
// the store's address and the policy's id; it does not own the store.
//
// It is not the place for refunds, lease releases or overrides: those are
// the store's own (store.hpp), asked with the view's `id()`.
//
// Thread safety: every member may be called from any number of threads at
// once (the view is immutable; the store is thread-safe).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "sluice/core/any.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/store.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// One policy of a store, deciding requests of one check each.
class store_limiter {
 public:
  /// Defines `policy` in `s` under `name` (`store::define`: a name defined
  /// already keeps its id and carries its states over to the new policy)
  /// and returns the view over it. `s` must outlive the view and every copy
  /// of it. The error is the store's own, naming the field (a quantity a
  /// Redis store cannot decide exactly, ...).
  static result<store_limiter> make(store& s, std::string_view name, const any_policy& policy);

  /// Decides a request of `cost` (≥ 1) units for `key` now, on the store's
  /// clock (`store::now`). `id`, when not empty, is the request's id
  /// (semantics.md, "Request ids": a repeat answers the first decision,
  /// `source::replayed`, charging nothing again). `d` is the check's own
  /// decision when the store decided it (`from` is `store` or `replayed`);
  /// otherwise the request's answer (a failure mode's, an error's: a cost
  /// below 1 is a bad request, `source::error`). `lease` is the lease the
  /// admit took, for a policy with a concurrency part.
  [[nodiscard]] store_decision decide(std::string_view key, std::int64_t cost = 1, std::string_view id = {}) const {
    return decide_at(key, store_->now(), cost, id);
  }
  /// `decide` at the explicit instant `now`, in the store's ticks.
  [[nodiscard]] store_decision decide_at(std::string_view key, tick now, std::int64_t cost = 1,
                                         std::string_view id = {}) const;

  /// What `decide` would answer for `cost` units of `key` now, changing
  /// nothing; `d` as in `decide`.
  [[nodiscard]] store_decision peek(std::string_view key, std::int64_t cost = 1) const {
    return peek_at(key, store_->now(), cost);
  }
  /// `peek` at the explicit instant `now`.
  [[nodiscard]] store_decision peek_at(std::string_view key, tick now, std::int64_t cost = 1) const;

  /// Charges `cost` units that `key` spent now, whatever the limit says
  /// (semantics.md, "Reports": never denied, so the key may go into a debt
  /// that later requests wait out); `d` the check's figures after the
  /// charge. A store that cannot take it charges nothing and answers
  /// `source::error`.
  store_decision report(std::string_view key, std::int64_t cost) const { return report_at(key, store_->now(), cost); }
  /// `report` at the explicit instant `now`.
  store_decision report_at(std::string_view key, tick now, std::int64_t cost) const;

  /// One request of a batch (`decide_many_at`). The key's and the id's bytes
  /// must stay valid for the call.
  struct request {
    std::string_view key;
    tick now = 0;
    std::int64_t cost = 1;
    std::string_view id;  ///< empty: none
  };

  /// Decides `requests` in order, as that many `decide_at` calls would (a
  /// key repeated in the batch sees its earlier admits), in one call of the
  /// store (a remote store sends them in one pipeline), writing `out[i]`
  /// for `requests[i]`. Each `d` is the request's decision, whose `part` is
  /// 0 (the check) rather than the limiter's own part: a store answers a
  /// batch without each check's own decision. Requires `out.size() >=
  /// requests.size()`.
  void decide_many_at(std::span<const request> requests, std::span<store_decision> out) const;

  /// The policy's id in the store (for the store's own calls: refunds,
  /// leases, overrides).
  [[nodiscard]] policy_id id() const noexcept { return id_; }
  /// The store the view decides in.
  [[nodiscard]] store& backing_store() const noexcept { return *store_; }

 private:
  store_limiter(store& s, policy_id id) noexcept : store_(&s), id_(id) {}
  store* store_;
  policy_id id_;
};

}  // namespace sluice
