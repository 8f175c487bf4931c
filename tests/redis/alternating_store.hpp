// A store whose calls go to two Redis stores in turn: two processes of a
// fleet on one server and one key prefix, one sending the module's
// commands (`?module=on`), the other the Lua library's (`?module=off`), so
// the calls of a trace on one key alternate between the two paths
// (docs/redis.md, "The store and the module": one key is decided by
// either, call by call). Decisions, refunds and releases all alternate.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <string>

#include "redis/store_support.hpp"
#include "sluice/core/store.hpp"

namespace sluice::redis_test {

class alternating_store final : public store, public store_refunds, public store_leases {
 public:
  /// Both stores on module_server(), under one fresh key prefix, with a
  /// command timeout of 10 s (a loaded machine's slow calls).
  explicit alternating_store(store_options o = {}) {
    o.key_prefix = fresh_prefix("alternating");
    o.command_timeout = std::chrono::seconds(10);
    const std::string url = module_server().url();
    stores_[0] = open_store(o, url + "?module=on");
    stores_[1] = open_store(o, url + "?module=off");
  }

  [[nodiscard]] bool ok() const { return stores_[0] && stores_[1]; }
  [[nodiscard]] redis_store& on_module() const { return *stores_[0]; }
  [[nodiscard]] redis_store& on_library() const { return *stores_[1]; }

  /// Each store's calls went its own way, more than `calls` of them: the
  /// module's store's to the module, none of the library's store's.
  void expect_paths(std::uint64_t calls) const {
    EXPECT_GT(on_module().redis_stats().module_calls, calls);
    EXPECT_GT(on_library().redis_stats().library_calls, calls);
    EXPECT_EQ(on_library().redis_stats().module_calls, 0U);
  }

  /// Defined on both (the same id on each: both define in the same order).
  result<policy_id> define(std::string_view name, const any_policy& policy) override {
    auto a = stores_[0]->define(name, policy);
    auto b = stores_[1]->define(name, policy);
    if (!a.ok()) return a;
    if (!b.ok()) return b;
    EXPECT_EQ(a.value(), b.value()) << name;
    return a;
  }
  store_decision run_at(store_op op, const store_request& r, std::span<decision> per_check,
                        std::span<std::optional<tick>> grows_after) override {
    return next().run_at(op, r, per_check, grows_after);
  }
  void decide_many_at(std::span<const store_request> requests, std::span<store_decision> out) override {
    next().decide_many_at(requests, out);
  }
  [[nodiscard]] tick now() const noexcept override { return stores_[0]->now(); }
  /// The module's store's counts (each store's own: on_module(), on_library()).
  [[nodiscard]] store_stats stats() const override { return stores_[0]->stats(); }
  [[nodiscard]] store_capabilities capabilities() const noexcept override {
    auto* self = const_cast<alternating_store*>(this);
    store_capabilities c;
    c.refunds = self;
    c.leases = self;
    return c;
  }
  refund_answer refund_at(std::string_view id, tick now, std::span<decision> per_check,
                          std::span<std::int64_t> given) override {
    return next().refund_at(id, now, per_check, given);
  }
  [[nodiscard]] std::string refund_id(const store_request& r) const override { return stores_[0]->refund_id(r); }
  release_result release_at(std::span<const check> checks, std::uint64_t nonce, tick now) override {
    return next().release_at(checks, nonce, now);
  }

 private:
  redis_store& next() { return *stores_[turn_++ % 2]; }

  std::array<std::unique_ptr<redis_store>, 2> stores_;
  std::size_t turn_ = 0;
};

}  // namespace sluice::redis_test
