// The properties, each a function of one seed: the seeded tests run them over
// ranges of seeds, and regressions_test.cpp replays the seeds kept in
// regressions.txt through all of them.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "property/models.hpp"

namespace sluice::model {

inline std::string show(tick t) { return t == never ? std::string("never") : std::to_string(t); }

inline std::string show(const decision& d) {
  return std::string("{allowed=") + (d.allowed ? "yes" : "no") + " remaining=" + std::to_string(d.remaining) +
         " retry_after=" + show(d.retry_after) + " reset_after=" + show(d.reset_after) +
         " release_after=" + show(d.release_after) + "}";
}

inline std::string where(std::uint64_t seed, const config& c, std::size_t step, const request& q) {
  return "seed " + std::to_string(seed) + " (" + c.describe() + ") step " + std::to_string(step) +
         " now=" + std::to_string(q.now) + " cost=" + std::to_string(q.cost);
}

inline constexpr std::size_t trace_length = 60;

/// The config and trace a seed draws for one algorithm.
struct drawn {
  config c;
  std::vector<request> trace;
};

inline drawn draw(std::uint64_t seed, algorithm a, bool back, std::size_t length = trace_length) {
  rng_t g(mix(seed, a));
  drawn d;
  d.c = random_config(a, g);
  d.trace = random_trace(d.c, g, length, back);
  return d;
}

/// Every decision equals the reference model's, field for field.
template <typename Policy>
testing::AssertionResult agrees_with_model(std::uint64_t seed) {
  const drawn dr = draw(seed, algorithm_of_type<Policy>(), /*back=*/true);
  const Policy p = build<Policy>(dr.c);
  typename Policy::state s{};
  reference ref(build_model(dr.c));
  for (std::size_t i = 0; i < dr.trace.size(); ++i) {
    const request& q = dr.trace[i];
    const decision got = decide(p, s, q.now, q.cost);
    const decision want = ref.decide(q.now, q.cost);
    if (!(got == want))
      return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": got " << show(got) << ", the model says "
                                         << show(want);
  }
  return testing::AssertionSuccess();
}

/// make_policy, fresh_state and decide over the variant answer exactly as
/// the concrete policy and state.
template <typename Policy>
testing::AssertionResult variant_agrees(std::uint64_t seed) {
  const drawn dr = draw(seed, algorithm_of_type<Policy>(), /*back=*/true);
  const result<any_policy> built = make_policy(spec_of(dr.c));
  if (!built) return testing::AssertionFailure() << dr.c.describe() << ": " << built.err().what();
  const any_policy& ap = built.value();
  if (algorithm_of(ap) != dr.c.algo) return testing::AssertionFailure() << dr.c.describe() << ": wrong algorithm";
  any_state as = fresh_state(ap);
  const Policy p = build<Policy>(dr.c);
  typename Policy::state s{};
  for (std::size_t i = 0; i < dr.trace.size(); ++i) {
    const request& q = dr.trace[i];
    const decision via_variant = decide(ap, as, q.now, q.cost);
    const decision direct = decide(p, s, q.now, q.cost);
    if (!(via_variant == direct))
      return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": any_policy " << show(via_variant)
                                         << ", concrete " << show(direct);
    const auto* held = std::get_if<typename Policy::state>(&as);
    if (held == nullptr || !(*held == s))
      return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": the states differ";
  }
  return testing::AssertionSuccess();
}

/// A quantity near the edges: 1, 2, 3, 1000, 2^32, 2^62 and its fractions.
inline std::int64_t edge_quantity(rng_t& g) {
  const std::int64_t picks[] = {1, 2, 3, max_q, max_q - 1, max_q / 2, max_q / 3, std::int64_t{1} << 32, 1000};
  return picks[g() % 9];
}

/// A config and trace that live at the edges: quantities up to 2^62, instants
/// at INT64_MIN and INT64_MAX, gaps of 2^62 and of all of time, costs of
/// exactly the capacity (so that two of them sum to 2^63), INT64_MAX and
/// INT64_MIN.
inline drawn draw_edges(std::uint64_t seed, algorithm a) {
  rng_t g(mix(seed, a) ^ 0xe0e0);
  drawn d;
  config& c = d.c;
  c.algo = a;
  c.r = rate{chance(g, 10) ? 0 : edge_quantity(g), edge_quantity(g)};
  c.extra = edge_quantity(g);
  if (a == algorithm::sliding_buckets) {
    c.extra = 1;
    while (c.extra < 64 && c.r.window % (c.extra * 2) == 0 && chance(g, 70)) c.extra *= 2;
  }
  if (a == algorithm::fixed_window) c.origin = chance(g, 50) ? static_cast<tick>(t_min) : static_cast<tick>(t_max);
  const std::int64_t cap = std::max<std::int64_t>(1, c.capacity());
  tick now = chance(g, 50) ? static_cast<tick>(t_min) : static_cast<tick>(t_max) - edge_quantity(g);
  for (int i = 0; i < 25; ++i) {
    const std::int64_t gaps[] = {0, 0, 1, c.r.window, max_q, i64_max, -max_q, -i64_max, -1};
    now = saturating_add(now, gaps[g() % 9]);
    const std::int64_t costs[] = {1, cap, cap, cap > 1 ? cap - 1 : 1, cap / 2 + 1, i64_max, 0, -i64_max - 1};
    d.trace.push_back({now, costs[g() % 8]});
  }
  return d;
}

/// As agrees_with_model, on a trace at the edges (draw_edges).
template <typename Policy>
testing::AssertionResult agrees_with_model_on_edges(std::uint64_t seed) {
  const drawn dr = draw_edges(seed, algorithm_of_type<Policy>());
  const Policy p = build<Policy>(dr.c);
  typename Policy::state s{};
  reference ref(build_model(dr.c));
  for (std::size_t i = 0; i < dr.trace.size(); ++i) {
    const request& q = dr.trace[i];
    const decision got = decide(p, s, q.now, q.cost);
    const decision want = ref.decide(q.now, q.cost);
    if (!(got == want))
      return testing::AssertionFailure() << where(seed, dr.c, i, q) << " (edges): got " << show(got)
                                         << ", the model says " << show(want);
  }
  return testing::AssertionSuccess();
}

/// GCRA and the token bucket with the same L, W, S decide the same, field for
/// field, including when the clock steps back.
inline testing::AssertionResult gcra_is_token_bucket(std::uint64_t seed) {
  const drawn dr = draw(seed, algorithm::gcra, /*back=*/true);
  const gcra g = build<gcra>(dr.c);
  const token_bucket b = build<token_bucket>(dr.c);
  gcra::state gs;
  token_bucket::state bs;
  for (std::size_t i = 0; i < dr.trace.size(); ++i) {
    const request& q = dr.trace[i];
    const decision dg = decide(g, gs, q.now, q.cost);
    const decision db = decide(b, bs, q.now, q.cost);
    if (!(dg == db))
      return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": gcra " << show(dg) << ", token bucket "
                                         << show(db);
  }
  return testing::AssertionSuccess();
}

/// The state's bytes, for the trivially copyable states.
template <typename State>
std::vector<unsigned char> bytes_of(const State& s) {
  std::vector<unsigned char> out(sizeof(State));
  std::memcpy(out.data(), &s, sizeof(State));
  return out;
}

struct denial_counts {
  long exact = 0;   ///< denials with a finite retry_after, checked both ways
  long never_ = 0;  ///< denials with retry_after == never
};

/// For every denial: the state is unchanged (operator==, and byte for byte
/// when trivially copyable), and if retry_after is finite, the same request
/// on a copy of the state is admitted at now + retry_after and denied one
/// tick earlier.
template <typename Policy>
testing::AssertionResult denials_are_exact_and_pure(std::uint64_t seed, denial_counts& counts) {
  using state = typename Policy::state;
  // The bytes of an empty state (always-*) are padding: nothing to compare.
  constexpr bool by_bytes = std::is_trivially_copyable_v<state> && !std::is_empty_v<state>;
  const drawn dr = draw(seed, algorithm_of_type<Policy>(), /*back=*/true, 100);
  const Policy p = build<Policy>(dr.c);
  state s{};
  for (std::size_t i = 0; i < dr.trace.size(); ++i) {
    const request& q = dr.trace[i];
    const state before = s;
    std::vector<unsigned char> raw;
    if constexpr (by_bytes) raw = bytes_of(s);
    const decision d = decide(p, s, q.now, q.cost);
    if (d.allowed) continue;
    if (!(s == before)) return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": a denial changed the state";
    if constexpr (by_bytes) {
      if (bytes_of(s) != raw)
        return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": a denial changed the state's bytes";
    }
    if (d.retry_after == never) {
      ++counts.never_;
      continue;
    }
    if (d.retry_after <= 0)
      return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": denied with " << show(d);
    ++counts.exact;
    const tick at = q.now + d.retry_after;  // ≤ INT64_MAX: `never` otherwise
    state then = s;
    const decision later = decide(p, then, at, q.cost);
    if (!later.allowed)
      return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": " << show(d) << " but denied at " << at
                                         << ": " << show(later);
    state early = s;
    const decision sooner = decide(p, early, at - 1, q.cost);
    if (sooner.allowed)
      return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": " << show(d) << " but admitted at " << at - 1;
  }
  return testing::AssertionSuccess();
}

/// A duration read `shift` ticks earlier than the instant it counts from.
inline tick shifted(tick d, i128 shift) {
  if (d == never) return never;
  if (d == 0) return 0;
  const i128 v = static_cast<i128>(d) + shift;
  return v >= t_max ? never : static_cast<tick>(v);
}

/// A clock that steps back earns nothing: a request at `now` before the
/// latest admit decides as the same request at the latest admit (same
/// answer, same remaining, same state after; durations counted from the
/// caller's `now`), so the trace with backward steps admits exactly what the
/// trace read at the latest admit times does, and never more.
template <typename Policy>
testing::AssertionResult clock_back_earns_nothing(std::uint64_t seed, long& stepped_back) {
  const drawn dr = draw(seed, algorithm_of_type<Policy>(), /*back=*/true);
  const Policy p = build<Policy>(dr.c);
  typename Policy::state as{}, bs{};
  std::optional<tick> latest;
  long admits_back = 0, admits_forward = 0;
  for (std::size_t i = 0; i < dr.trace.size(); ++i) {
    const request& q = dr.trace[i];
    const tick read = latest && *latest > q.now ? *latest : q.now;
    const decision a = decide(p, as, q.now, q.cost);
    const decision b = decide(p, bs, read, q.cost);
    admits_back += a.allowed ? 1 : 0;
    admits_forward += b.allowed ? 1 : 0;
    const i128 shift = static_cast<i128>(read) - q.now;
    if (shift > 0) ++stepped_back;
    decision expect = b;
    expect.retry_after = shifted(b.retry_after, shift);
    expect.reset_after = shifted(b.reset_after, shift);
    expect.release_after = shifted(b.release_after, shift);
    if (!(a == expect))
      return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": read as " << read << " gives " << show(b)
                                         << ", so expected " << show(expect) << ", got " << show(a);
    if (!(as == bs)) return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": the states differ";
    if (a.allowed) latest = read;
  }
  if (admits_back > admits_forward)
    return testing::AssertionFailure() << "seed " << seed << ": " << admits_back
                                       << " admits with the clock stepping back, " << admits_forward << " without";
  return testing::AssertionSuccess();
}

/// A sliding log never holds more than L admitted units in any window
/// (t − W, t] (admits counted at the instant they were read as).
inline testing::AssertionResult log_never_exceeds_limit(std::uint64_t seed) {
  const drawn dr = draw(seed, algorithm::sliding_log, /*back=*/true, 150);
  const sliding_log p = build<sliding_log>(dr.c);
  sliding_log::state s;
  std::vector<unit_run> admitted;
  std::optional<tick> latest;
  for (std::size_t i = 0; i < dr.trace.size(); ++i) {
    const request& q = dr.trace[i];
    const tick at = latest && *latest > q.now ? *latest : q.now;
    if (!decide(p, s, q.now, q.cost).allowed) continue;
    latest = at;
    admitted.push_back({at, q.cost});
    i128 in_window = 0;
    for (const unit_run& u : admitted)
      if (u.at > static_cast<i128>(at) - dr.c.r.window && u.at <= at) in_window += u.cost;
    if (in_window > dr.c.r.limit)
      return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": " << static_cast<long long>(in_window)
                                         << " units in the window ending at " << at;
    if (s.size() > static_cast<std::uint64_t>(dr.c.r.limit))
      return testing::AssertionFailure() << where(seed, dr.c, i, q) << ": " << s.size() << " entries held";
  }
  return testing::AssertionSuccess();
}

/// A fixed window admits L just before a boundary and L more at it: 2L in two
/// ticks. And on a random trace no W consecutive ticks ever see more than 2L,
/// nor one window more than L.
inline testing::AssertionResult fixed_window_doubles_at_a_boundary(std::uint64_t seed) {
  rng_t g(mix(seed, algorithm::fixed_window) ^ 0x2b);
  config c = random_config(algorithm::fixed_window, g);
  if (c.r.limit == 0) c.r.limit = 1;
  const fixed_window p = build<fixed_window>(c);
  {
    // A boundary b = origin + kW with b − 1 and b both representable.
    const i128 k_lo = fdiv(t_min + 1 - static_cast<i128>(p.origin()), c.r.window) + 1;
    const i128 k_hi = fdiv(t_max - static_cast<i128>(p.origin()), c.r.window);
    const i128 k = k_lo + static_cast<i128>(g() % static_cast<std::uint64_t>(k_hi - k_lo + 1));
    const tick b = static_cast<tick>(p.start_of(k));
    fixed_window::state s;
    const decision before = decide(p, s, b - 1, c.r.limit);
    const decision at = decide(p, s, b, c.r.limit);
    if (!before.allowed || !at.allowed)
      return testing::AssertionFailure() << "seed " << seed << " (" << c.describe() << "): boundary " << b << ": "
                                         << show(before) << ", " << show(at);
    if (before.retry_after != 0 || before.reset_after != 1)
      return testing::AssertionFailure() << "seed " << seed << ": before the boundary " << show(before);
  }
  const std::vector<request> trace = random_trace(c, g, 120, /*back=*/false);
  fixed_window::state s;
  std::vector<unit_run> admitted;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const request& q = trace[i];
    if (!decide(p, s, q.now, q.cost).allowed) continue;
    admitted.push_back({q.now, q.cost});
    i128 span = 0, window = 0;
    for (const unit_run& u : admitted) {
      if (u.at > static_cast<i128>(q.now) - c.r.window) span += u.cost;
      if (p.window_of(static_cast<tick>(u.at)) == p.window_of(q.now)) window += u.cost;
    }
    if (span > 2 * static_cast<i128>(c.r.limit) || window > c.r.limit)
      return testing::AssertionFailure() << where(seed, c, i, q) << ": " << static_cast<long long>(span)
                                         << " in W ticks, " << static_cast<long long>(window) << " in the window";
  }
  return testing::AssertionSuccess();
}

/// Every algorithm, for typed test suites, and their names for the test list.
using all_algorithms = ::testing::Types<fixed_window, sliding_log, sliding_counter, sliding_buckets, token_bucket, gcra,
                                        leaky_queue, quota, always_allow, always_deny>;

class algorithm_test_names {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::string(name_of(algorithm_of_type<T>()));
  }
};

}  // namespace sluice::model
