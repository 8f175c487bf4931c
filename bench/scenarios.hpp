// The single-key scenarios measured by decide_bench (Google Benchmark) and
// counted by decide_ir (callgrind): for each algorithm, a policy built once
// with make(), a state, a first instant and the step `now` advances by on
// every decision. Shared so that both programs measure the same thing.
//
// Allow scenarios: requests arrive at (or below) the limit, so every one is
// admitted. Deny scenarios: the limiter is drained first (1000 admits at
// t = 0..999), then asked again at t = 1000, 1001, ... (time advances one
// tick per request, far too slowly to refill), so every one is denied.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/sluice.hpp"

namespace sluice_bench {

using sluice::tick;

inline constexpr tick second = 1'000'000'000;  // ticks are nanoseconds here
inline constexpr tick hour = 3600 * second;

/// The value of a result that must be ok (a bad benchmark configuration aborts).
template <typename T>
T must(sluice::result<T> r) {
  if (!r) {
    std::fprintf(stderr, "bench configuration error: %s\n", r.err().what().c_str());
    std::abort();
  }
  return std::move(r).value();
}

/// A policy, its state, the first instant and the step of `now`.
template <typename Policy, typename State = typename Policy::state>
struct scenario {
  Policy policy;
  State state;
  tick now;
  tick step;
};

/// Drains a deny scenario: `n` admits at t = 0..n−1 (aborts if one is
/// denied), then more at t = n until one is denied (a leaky queue has let a
/// unit out meanwhile). The deny loop starts at t = n.
template <typename Policy, typename State>
scenario<Policy, State> drained(Policy p, State s, std::int64_t n) {
  for (tick t = 0; t < n; ++t) {
    if (!decide(p, s, t, 1).allowed) {
      std::fprintf(stderr, "bench setup: admit %lld of the drain was denied\n", static_cast<long long>(t));
      std::abort();
    }
  }
  for (int extra = 0; decide(p, s, n, 1).allowed; ++extra) {
    if (extra == 1000) {
      std::fprintf(stderr, "bench setup: the limiter does not drain\n");
      std::abort();
    }
  }
  return {std::move(p), std::move(s), n, 1};
}

// ---- allow: every request admitted --------------------------------------

// 1,000,000 per second, burst 1000; one request every microsecond (one
// emission interval), so the bucket never empties.
inline scenario<sluice::gcra> gcra_allow() {
  return {must(sluice::gcra::make({1'000'000, second}, 1000)), {}, 0, 1000};
}
inline scenario<sluice::token_bucket> token_bucket_allow() {
  return {must(sluice::token_bucket::make({1'000'000, second}, 1000)), {}, 0, 1000};
}
// 1,000,000 per second, queue 1000; one request every microsecond leaves
// before the next arrives.
inline scenario<sluice::leaky_queue> leaky_queue_allow() {
  return {must(sluice::leaky_queue::make({1'000'000, second}, 1000)), {}, 0, 1000};
}
// 1,000,000 per second in fixed windows; one request every microsecond fills
// each window exactly.
inline scenario<sluice::fixed_window> fixed_window_allow() {
  return {must(sluice::fixed_window::make({1'000'000, second})), {}, 0, 1000};
}
// 2,000,000 per second; one request every microsecond (the weighted estimate
// of an exact-rate stream sits at the rate, so the limit has headroom).
inline scenario<sluice::sliding_counter> sliding_counter_allow() {
  return {must(sluice::sliding_counter::make({2'000'000, second})), {}, 0, 1000};
}
// 1000 per second, one request every millisecond: the log holds ~1000
// entries, and each admit drops one and appends one.
inline scenario<sluice::sliding_log> sliding_log_allow() {
  return {must(sluice::sliding_log::make({1000, second})), {}, 0, second / 1000};
}
// 1000 per second in 10 sub-windows, one request every millisecond.
inline scenario<sluice::sliding_buckets> sliding_buckets_allow() {
  return {must(sluice::sliding_buckets::make({1000, second}, 10)), {}, 0, second / 1000};
}
// 2^62 units, one per request: never exhausted in a benchmark.
inline scenario<sluice::quota> quota_allow() { return {must(sluice::quota::make(sluice::max_quantity)), {}, 0, 1000}; }
inline scenario<sluice::any_policy, sluice::any_state> any_allow(sluice::algorithm a) {
  sluice::spec sp;
  sp.algo = a;
  sp.limit = {1'000'000, second};
  sp.burst = 1000;
  sluice::any_policy p = must(sluice::make_policy(sp));
  sluice::any_state s = sluice::fresh_state(p);
  return {std::move(p), std::move(s), 0, 1000};
}

// The loop and the decision's stores alone (calibration): always_allow.
inline scenario<sluice::always_allow> always_allow_calib() { return {sluice::always_allow{}, {}, 0, 1000}; }

// ---- deny: a drained limiter, asked again one tick later each time ---------

// 1000 per hour, burst / queue / quota 1000: drained by 1000 admits, and the
// next token is 3.6 s (3.6e9 requests) away.
inline scenario<sluice::gcra> gcra_deny() {
  return drained(must(sluice::gcra::make({1000, hour}, 1000)), sluice::gcra::state{}, 1000);
}
inline scenario<sluice::token_bucket> token_bucket_deny() {
  return drained(must(sluice::token_bucket::make({1000, hour}, 1000)), sluice::token_bucket::state{}, 1000);
}
inline scenario<sluice::leaky_queue> leaky_queue_deny() {
  return drained(must(sluice::leaky_queue::make({1000, hour}, 1000)), sluice::leaky_queue::state{}, 1000);
}
inline scenario<sluice::fixed_window> fixed_window_deny() {
  return drained(must(sluice::fixed_window::make({1000, hour})), sluice::fixed_window::state{}, 1000);
}
inline scenario<sluice::sliding_counter> sliding_counter_deny() {
  return drained(must(sluice::sliding_counter::make({1000, hour})), sluice::sliding_counter::state{}, 1000);
}
inline scenario<sluice::sliding_log> sliding_log_deny() {
  return drained(must(sluice::sliding_log::make({1000, hour})), sluice::sliding_log::state{}, 1000);
}
inline scenario<sluice::sliding_buckets> sliding_buckets_deny() {
  return drained(must(sluice::sliding_buckets::make({1000, hour}, 10)), sluice::sliding_buckets::state{}, 1000);
}
inline scenario<sluice::quota> quota_deny() {
  return drained(must(sluice::quota::make(1000)), sluice::quota::state{}, 1000);
}
inline scenario<sluice::any_policy, sluice::any_state> any_deny(sluice::algorithm a) {
  sluice::spec sp;
  sp.algo = a;
  sp.limit = {1000, hour};
  sp.burst = 1000;
  sluice::any_policy p = must(sluice::make_policy(sp));
  sluice::any_state s = sluice::fresh_state(p);
  return drained(std::move(p), std::move(s), 1000);
}

// ---- composites: every part decides each request ------------------------

/// all(gcra, fixed-window, sliding-counter) at `limit` per `window`, burst
/// 1000, with a fresh state.
inline scenario<sluice::all_of> all3(std::int64_t limit, tick window) {
  std::vector<sluice::any_policy> parts;
  parts.emplace_back(must(sluice::gcra::make({limit, window}, 1000)));
  parts.emplace_back(must(sluice::fixed_window::make({limit, window})));
  parts.emplace_back(must(sluice::sliding_counter::make({2 * limit, window})));
  sluice::all_of p = must(sluice::all_of::make(std::move(parts)));
  sluice::all_of_state s = sluice::detail::fresh_state_of(p);
  return {std::move(p), std::move(s), 0, 1000};
}
/// `depth` levels of all(...) around one GCRA of `limit` per `window`,
/// burst 1000, with a fresh state.
inline scenario<sluice::all_of> nested(int depth, std::int64_t limit, tick window) {
  sluice::any_policy p = must(sluice::gcra::make({limit, window}, 1000));
  for (int i = 1; i < depth; ++i) p = must(sluice::all_of::make({std::move(p)}));
  sluice::all_of top = must(sluice::all_of::make({std::move(p)}));
  sluice::all_of_state s = sluice::detail::fresh_state_of(top);
  return {std::move(top), std::move(s), 0, 1000};
}
// The allow scenarios' limits (1e6/s, one request every microsecond; the
// sliding counter at 2e6/s, as in sliding_counter_allow); the deny ones
// drained as the single algorithms' (1000/h, 1000 admits).
inline scenario<sluice::all_of> all3_allow() { return all3(1'000'000, second); }
inline scenario<sluice::all_of> all3_deny() {
  auto sc = all3(1000, hour);
  return drained(std::move(sc.policy), std::move(sc.state), 1000);
}
inline scenario<sluice::all_of> nest32_allow() { return nested(32, 1'000'000, second); }
inline scenario<sluice::all_of> nest32_deny() {
  auto sc = nested(32, 1000, hour);
  return drained(std::move(sc.policy), std::move(sc.state), 1000);
}

// ---- real time: the instant read from sluice::steady_clock each call -------

// 1 per nanosecond, burst 1e9 (as the floor's and x/time's realtime cases):
// a decision takes longer than a nanosecond, so the bucket stays full.
inline scenario<sluice::gcra> gcra_allow_realtime() { return {must(sluice::gcra::make({1, 1}, second)), {}, 0, 0}; }
inline scenario<sluice::token_bucket> token_bucket_allow_realtime() {
  return {must(sluice::token_bucket::make({1, 1}, second)), {}, 0, 0};
}
// 1000 per hour, burst 1000, drained at the current instant: no token comes
// back for 3.6 s, longer than any repetition.
template <typename Policy>
scenario<Policy> deny_realtime(Policy p) {
  typename Policy::state s{};
  const tick t0 = sluice::steady_clock::now();
  for (int i = 0; i < 1000; ++i) {
    if (!decide(p, s, t0, 1).allowed) {
      std::fprintf(stderr, "bench setup: admit %d of the drain was denied\n", i);
      std::abort();
    }
  }
  if (decide(p, s, t0, 1).allowed) {
    std::fprintf(stderr, "bench setup: the limiter does not drain\n");
    std::abort();
  }
  return {std::move(p), std::move(s), t0, 0};
}
inline scenario<sluice::gcra> gcra_deny_realtime() {
  return deny_realtime(must(sluice::gcra::make({1000, hour}, 1000)));
}
inline scenario<sluice::token_bucket> token_bucket_deny_realtime() {
  return deny_realtime(must(sluice::token_bucket::make({1000, hour}, 1000)));
}

}  // namespace sluice_bench
