// Reference models for the property tests: each limiter written the slow,
// obvious way from semantics.md, in 128-bit integers, keeping every admit it
// has made and recounting from scratch on every question. The "when" answers
// (retry_after, reset_after) are not computed by formula: they are found by
// bisection over time, which the contract allows because every algorithm only
// gets more permissive as time passes.
//
// Also here: random configurations and traces, shared by every property test.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "sluice/sluice.hpp"

namespace sluice::model {

__extension__ typedef __int128 i128;

inline constexpr i128 t_max = std::numeric_limits<tick>::max();
inline constexpr i128 t_min = std::numeric_limits<tick>::min();
inline constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();
inline constexpr std::int64_t max_q = std::int64_t{1} << 62;

/// floor(a / b) and ceil(a / b) for b > 0, by correcting C++'s truncation.
inline i128 fdiv(i128 a, i128 b) {
  i128 q = a / b;
  if (q * b > a) --q;
  return q;
}
inline i128 cdiv(i128 a, i128 b) {
  i128 q = a / b;
  if (q * b < a) ++q;
  return q;
}

/// The duration from `now` to the instant `at` as a decision reports it:
/// 0 if `at` is not later, `never` if `at` or the duration does not fit.
inline tick ticks_until(i128 at, tick now) {
  if (at > t_max) return never;
  if (at <= now) return 0;
  const i128 d = at - now;
  return d >= t_max ? never : static_cast<tick>(d);
}

/// One limiter as semantics.md describes it. Times are effective instants
/// (never earlier than the latest admit); the driver below ensures that.
class model {
 public:
  virtual ~model() = default;
  /// Whether the limiter has no time-dependent state (quota, always-*).
  [[nodiscard]] virtual bool timeless() const { return false; }
  /// Whether a request of `cost` could ever be admitted.
  [[nodiscard]] virtual bool possible(std::int64_t cost) const = 0;
  /// Whether a request of `cost` (possible) is admitted at `t`.
  [[nodiscard]] virtual bool admits(i128 t, std::int64_t cost) const = 0;
  /// The largest cost admitted at `t`.
  [[nodiscard]] virtual std::int64_t remaining(i128 t) const = 0;
  /// Whether the limiter decides from `t` on exactly as a fresh one.
  [[nodiscard]] virtual bool fresh(i128 t) const = 0;
  /// Admits `cost` at `t`; returns when its last unit leaves (leaky queue).
  virtual std::optional<i128> admit(i128 t, std::int64_t cost) = 0;
};

struct unit_run {
  i128 at;
  i128 cost;
};

class fixed_window_model final : public model {
 public:
  fixed_window_model(rate r, tick origin) : l_(r.limit), w_(r.window), origin_(origin) {}
  bool possible(std::int64_t c) const override { return c >= 1 && c <= l_; }
  bool admits(i128 t, std::int64_t c) const override { return count(t) + c <= l_; }
  std::int64_t remaining(i128 t) const override { return static_cast<std::int64_t>(l_ - count(t)); }
  bool fresh(i128 t) const override { return count(t) == 0; }
  std::optional<i128> admit(i128 t, std::int64_t c) override {
    log_.push_back({t, c});
    return std::nullopt;
  }

 private:
  i128 window(i128 t) const { return fdiv(t - origin_, w_); }
  i128 count(i128 t) const {
    i128 n = 0;
    for (const unit_run& u : log_)
      if (window(u.at) == window(t)) n += u.cost;
    return n;
  }
  i128 l_, w_, origin_;
  std::vector<unit_run> log_;
};

class sliding_log_model final : public model {
 public:
  explicit sliding_log_model(rate r) : l_(r.limit), w_(r.window) {}
  bool possible(std::int64_t c) const override { return c >= 1 && c <= l_; }
  bool admits(i128 t, std::int64_t c) const override { return in_window(t) + c <= l_; }
  std::int64_t remaining(i128 t) const override { return static_cast<std::int64_t>(l_ - in_window(t)); }
  bool fresh(i128 t) const override { return in_window(t) == 0; }
  std::optional<i128> admit(i128 t, std::int64_t c) override {
    log_.push_back({t, c});
    return std::nullopt;
  }

 private:
  i128 in_window(i128 t) const {
    i128 n = 0;
    for (const unit_run& u : log_)
      if (t - w_ < u.at && u.at <= t) n += u.cost;
    return n;
  }
  i128 l_, w_;
  std::vector<unit_run> log_;
};

class sliding_counter_model final : public model {
 public:
  explicit sliding_counter_model(rate r) : l_(r.limit), w_(r.window) {}
  bool possible(std::int64_t c) const override { return c >= 1 && c <= l_; }
  bool admits(i128 t, std::int64_t c) const override { return used(t) + c * w_ <= l_ * w_; }
  std::int64_t remaining(i128 t) const override {
    const i128 r = fdiv(l_ * w_ - used(t), w_);
    return static_cast<std::int64_t>(r < 0 ? 0 : r);
  }
  bool fresh(i128 t) const override { return count(fdiv(t, w_)) == 0 && count(fdiv(t, w_) - 1) == 0; }
  std::optional<i128> admit(i128 t, std::int64_t c) override {
    log_.push_back({t, c});
    return std::nullopt;
  }

 private:
  i128 count(i128 k) const {
    i128 n = 0;
    for (const unit_run& u : log_)
      if (fdiv(u.at, w_) == k) n += u.cost;
    return n;
  }
  /// The estimate times W: prev·(W − o) + curr·W.
  i128 used(i128 t) const {
    const i128 k = fdiv(t, w_);
    const i128 o = t - k * w_;
    return count(k - 1) * (w_ - o) + count(k) * w_;
  }
  i128 l_, w_;
  std::vector<unit_run> log_;
};

class sliding_buckets_model final : public model {
 public:
  sliding_buckets_model(rate r, std::int64_t n) : l_(r.limit), n_(n), width_(r.window / n) {}
  bool possible(std::int64_t c) const override { return c >= 1 && c <= l_; }
  bool admits(i128 t, std::int64_t c) const override { return in_window(t) + c <= l_; }
  std::int64_t remaining(i128 t) const override { return static_cast<std::int64_t>(l_ - in_window(t)); }
  bool fresh(i128 t) const override { return in_window(t) == 0; }
  std::optional<i128> admit(i128 t, std::int64_t c) override {
    log_.push_back({t, c});
    return std::nullopt;
  }

 private:
  i128 in_window(i128 t) const {
    const i128 j = fdiv(t, width_);
    i128 n = 0;
    for (const unit_run& u : log_) {
      const i128 sub = fdiv(u.at, width_);
      if (j - n_ < sub && sub <= j) n += u.cost;
    }
    return n;
  }
  i128 l_, n_, width_;
  std::vector<unit_run> log_;
};

/// The token bucket, and GCRA's reference too (the same decisions).
class token_bucket_model final : public model {
 public:
  token_bucket_model(rate r, std::int64_t burst) : l_(r.limit), w_(r.window), s_(burst), t_(s_ * w_) {}
  bool possible(std::int64_t c) const override { return c >= 1 && c <= s_ && l_ > 0; }
  bool admits(i128 t, std::int64_t c) const override { return tokens(t) >= c * w_; }
  std::int64_t remaining(i128 t) const override { return l_ == 0 ? 0 : static_cast<std::int64_t>(tokens(t) / w_); }
  bool fresh(i128 t) const override { return tokens(t) == s_ * w_; }
  std::optional<i128> admit(i128 t, std::int64_t c) override {
    t_ = tokens(t) - c * w_;
    last_ = t;
    return std::nullopt;
  }

 private:
  /// Tokens at t in 1/W token: min(S·W, T + (t − last)·L).
  i128 tokens(i128 t) const {
    if (!last_) return t_;
    return std::min(s_ * w_, t_ + (t - *last_) * l_);
  }
  i128 l_, w_, s_, t_;
  std::optional<i128> last_;
};

/// The leaky queue as a literal FIFO of units: every admitted unit gets its
/// release instant (scaled by L), one every W after the one before it, and is
/// in the queue until then (a unit released at t still counts at t).
class leaky_queue_model final : public model {
 public:
  leaky_queue_model(rate r, std::int64_t queue) : l_(r.limit), w_(r.window), q_(queue) {}
  bool possible(std::int64_t c) const override { return l_ > 0 && c >= 1 && c <= q_; }
  bool admits(i128 t, std::int64_t c) const override { return in_queue(t) + c <= q_; }
  std::int64_t remaining(i128 t) const override { return l_ == 0 ? 0 : static_cast<std::int64_t>(q_ - in_queue(t)); }
  /// Fresh once a new unit would be released the moment it arrives.
  bool fresh(i128 t) const override { return runs_.empty() || last_release() + w_ <= t * l_; }
  std::optional<i128> admit(i128 t, std::int64_t c) override {
    const i128 first = runs_.empty() ? t * l_ : std::max(t * l_, last_release() + w_);
    runs_.push_back({first, c});
    return cdiv(last_release(), l_);
  }

 private:
  // A run of c units: released at first, first + W, ..., first + (c − 1)·W.
  i128 last_release() const { return runs_.back().at + (runs_.back().cost - 1) * w_; }
  i128 in_queue(i128 t) const {
    const i128 tl = t * l_;
    i128 n = 0;
    for (const unit_run& run : runs_) {
      const i128 last = run.at + (run.cost - 1) * w_;
      if (last < tl) continue;
      n += run.at >= tl ? run.cost : fdiv(last - tl, w_) + 1;
    }
    return n;
  }
  i128 l_, w_, q_;
  std::vector<unit_run> runs_;
};

class quota_model final : public model {
 public:
  explicit quota_model(std::int64_t units) : n_(units) {}
  bool timeless() const override { return true; }
  bool possible(std::int64_t c) const override { return c >= 1 && c <= n_; }
  bool admits(i128, std::int64_t c) const override { return used_ + c <= n_; }
  std::int64_t remaining(i128) const override { return static_cast<std::int64_t>(n_ - used_); }
  bool fresh(i128) const override { return used_ == 0; }
  std::optional<i128> admit(i128, std::int64_t c) override {
    used_ += c;
    return std::nullopt;
  }

 private:
  i128 n_, used_ = 0;
};

class always_allow_model final : public model {
 public:
  bool timeless() const override { return true; }
  bool possible(std::int64_t c) const override { return c >= 1; }
  bool admits(i128, std::int64_t) const override { return true; }
  std::int64_t remaining(i128) const override { return i64_max; }
  bool fresh(i128) const override { return true; }
  std::optional<i128> admit(i128, std::int64_t) override { return std::nullopt; }
};

class always_deny_model final : public model {
 public:
  bool timeless() const override { return true; }
  bool possible(std::int64_t) const override { return false; }
  bool admits(i128, std::int64_t) const override { return false; }
  std::int64_t remaining(i128) const override { return 0; }
  bool fresh(i128) const override { return true; }
  std::optional<i128> admit(i128, std::int64_t) override { return std::nullopt; }
};

/// Turns a model into decisions: reads a `now` earlier than the latest admit
/// as that time, finds "when" answers by bisection, counts durations from the
/// caller's `now`, and changes nothing on a denial.
class reference {
 public:
  explicit reference(std::unique_ptr<model> m) : m_(std::move(m)) {}

  decision decide(tick now, std::int64_t cost) {
    const i128 e = (latest_ && !m_->timeless()) ? std::max<i128>(now, *latest_) : i128{now};
    decision d;
    d.remaining = m_->remaining(e);
    d.reset_after = ticks_until(first(e, [&](i128 t) { return m_->fresh(t); }), now);
    if (!m_->possible(cost)) {
      d.retry_after = never;
      return d;
    }
    if (!m_->admits(e, cost)) {
      d.retry_after = ticks_until(first(e, [&](i128 t) { return m_->admits(t, cost); }), now);
      return d;
    }
    const std::optional<i128> release = m_->admit(e, cost);
    latest_ = e;
    d.allowed = true;
    d.remaining = m_->remaining(e);
    d.reset_after = ticks_until(first(e, [&](i128 t) { return m_->fresh(t); }), now);
    if (release) d.release_after = ticks_until(*release, now);
    return d;
  }

 private:
  /// The earliest t in [from, INT64_MAX] with pred(t), or INT64_MAX + 1;
  /// pred must be monotone (false, then true) on that range.
  template <typename Pred>
  static i128 first(i128 from, Pred pred) {
    if (pred(from)) return from;
    if (!pred(t_max)) return t_max + 1;
    i128 lo = from, hi = t_max;  // pred(lo) false, pred(hi) true
    while (hi - lo > 1) {
      const i128 mid = lo + (hi - lo) / 2;
      (pred(mid) ? hi : lo) = mid;
    }
    return hi;
  }

  std::unique_ptr<model> m_;
  std::optional<i128> latest_;
};

// ---- random configurations and traces ----

using rng_t = std::mt19937_64;

/// Uniform in [lo, hi] (lo ≤ hi), over the whole int64 range if asked.
inline std::int64_t uniform(rng_t& g, std::int64_t lo, std::int64_t hi) {
  const auto span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  if (span == std::numeric_limits<std::uint64_t>::max()) return static_cast<std::int64_t>(g());
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + g() % (span + 1));
}
inline bool chance(rng_t& g, int percent) { return static_cast<int>(g() % 100) < percent; }

/// A count from 1 to 2^62: mostly small, sometimes huge or right at the top.
inline std::int64_t random_count(rng_t& g) {
  const int roll = static_cast<int>(g() % 100);
  if (roll < 35) return uniform(g, 1, 5);
  if (roll < 65) return uniform(g, 1, 100);
  if (roll < 75) return uniform(g, 1, 100000);
  if (roll < 85) return std::int64_t{1} << uniform(g, 0, 62);
  if (roll < 93) return uniform(g, 1, max_q);
  return max_q - uniform(g, 0, 3);
}

/// A window from 1 to 2^62 ticks.
inline tick random_window(rng_t& g) {
  const int roll = static_cast<int>(g() % 100);
  if (roll < 10) return 1;
  if (roll < 40) return uniform(g, 1, 20);
  if (roll < 60) return uniform(g, 1, 1000);
  if (roll < 70) {
    const tick common[] = {1000, 60000, 1'000'000'000, 60'000'000'000, 3'600'000'000'000};
    return common[g() % 5];
  }
  if (roll < 85) return std::int64_t{1} << uniform(g, 0, 62);
  if (roll < 95) return uniform(g, 1, max_q);
  return max_q - uniform(g, 0, 3);
}

/// Everything any algorithm needs, drawn for one algorithm.
struct config {
  algorithm algo = algorithm::fixed_window;
  rate r{1, 1};
  std::int64_t extra = 1;  ///< burst, buckets, queue or quota units
  tick origin = 0;

  /// The largest cost ever admitted at once (L, S, Q or N).
  [[nodiscard]] std::int64_t capacity() const {
    switch (algo) {
      case algorithm::token_bucket:
      case algorithm::gcra:
      case algorithm::leaky_queue:
      case algorithm::quota:
        return extra;
      case algorithm::always_allow:
      case algorithm::always_deny:
        return 10;
      default:
        return r.limit;
    }
  }
  [[nodiscard]] std::string describe() const {
    return std::string(name_of(algo)) + " L=" + std::to_string(r.limit) + " W=" + std::to_string(r.window) +
           " extra=" + std::to_string(extra) + " origin=" + std::to_string(origin);
  }
};

inline config random_config(algorithm a, rng_t& g) {
  config c;
  c.algo = a;
  c.r.limit = chance(g, 6) ? 0 : random_count(g);
  c.r.window = random_window(g);
  switch (a) {
    case algorithm::fixed_window:
      c.origin = chance(g, 50) ? 0 : static_cast<tick>(g());
      break;
    case algorithm::sliding_buckets: {
      const std::int64_t n = chance(g, 80) ? uniform(g, 1, 12) : std::int64_t{1} << uniform(g, 4, 16);
      const std::int64_t width = std::max<std::int64_t>(1, random_window(g) / n);
      c.extra = n;
      c.r.window = n * width;
      break;
    }
    case algorithm::token_bucket:
    case algorithm::gcra:
    case algorithm::leaky_queue:
      c.extra = chance(g, 40) ? std::max<std::int64_t>(1, c.r.limit) : random_count(g);
      break;
    case algorithm::quota:
      c.extra = chance(g, 5) ? 0 : random_count(g);
      break;
    default:
      break;
  }
  return c;
}

struct request {
  tick now;
  std::int64_t cost;
};

inline tick saturating_add(tick a, std::int64_t b) {
  const i128 s = static_cast<i128>(a) + b;
  return static_cast<tick>(std::clamp<i128>(s, t_min, t_max));
}

/// A random trace for `c`: gaps of 0, a few ticks, up to a window, around
/// the time one unit takes, several windows or anything; with `back`, the
/// clock sometimes steps back. Costs mostly small, sometimes scaled to the
/// capacity, sometimes 0, negative or far too large.
inline std::vector<request> random_trace(const config& c, rng_t& g, std::size_t length, bool back) {
  const tick w = c.r.window;
  const std::int64_t cap = std::max<std::int64_t>(1, c.capacity());
  const tick per_unit = c.r.limit > 0 ? std::max<tick>(1, w / c.r.limit) : w;
  tick now = 0;
  switch (g() % 6) {
    case 0:
      now = static_cast<tick>(g());
      break;
    case 1:
      now = std::numeric_limits<tick>::min() + uniform(g, 0, 1000);
      break;
    case 2:
      now = std::numeric_limits<tick>::max() - uniform(g, 0, 3 * (w > 1000000 ? 1000000 : w));
      break;
    default:
      now = uniform(g, -1000, 1000);
  }
  std::vector<request> out;
  out.reserve(length);
  for (std::size_t i = 0; i < length; ++i) {
    const int roll = static_cast<int>(g() % 100);
    std::int64_t gap = 0;
    if (roll < 30) {
      gap = 0;
    } else if (roll < 45) {
      gap = uniform(g, 1, 3);
    } else if (roll < 65) {
      gap = uniform(g, 0, w);
    } else if (roll < 82) {
      gap = uniform(g, 0, per_unit > i64_max / 2 ? i64_max : 2 * per_unit);
    } else if (roll < 88) {
      gap = uniform(g, w, w > i64_max / 3 ? i64_max : 3 * w);
    } else if (roll < 90) {
      gap = uniform(g, 0, i64_max);
    } else if (back) {
      gap = -uniform(g, 0, chance(g, 80) ? (w > i64_max / 2 ? i64_max : 2 * w) : i64_max);
    }
    now = saturating_add(now, gap);
    std::int64_t cost = 1;
    const int croll = static_cast<int>(g() % 100);
    if (croll < 40) {
      cost = 1;
    } else if (croll < 60) {
      cost = uniform(g, 1, 5);
    } else if (croll < 80) {
      cost = uniform(g, 1, cap);
    } else if (croll < 88) {
      cost = uniform(g, cap / 2 + 1, cap);
    } else if (croll < 91) {
      cost = 0;
    } else if (croll < 93) {
      cost = -uniform(g, 1, i64_max);
    } else if (croll < 98) {
      cost = uniform(g, cap, i64_max);
    } else {
      cost = i64_max;
    }
    out.push_back({now, cost});
  }
  return out;
}

// ---- the algorithms, as types ----

template <typename Policy>
constexpr algorithm algorithm_of_type() {
  if constexpr (std::is_same_v<Policy, fixed_window>) return algorithm::fixed_window;
  if constexpr (std::is_same_v<Policy, sliding_log>) return algorithm::sliding_log;
  if constexpr (std::is_same_v<Policy, sliding_counter>) return algorithm::sliding_counter;
  if constexpr (std::is_same_v<Policy, sliding_buckets>) return algorithm::sliding_buckets;
  if constexpr (std::is_same_v<Policy, token_bucket>) return algorithm::token_bucket;
  if constexpr (std::is_same_v<Policy, gcra>) return algorithm::gcra;
  if constexpr (std::is_same_v<Policy, leaky_queue>) return algorithm::leaky_queue;
  if constexpr (std::is_same_v<Policy, quota>) return algorithm::quota;
  if constexpr (std::is_same_v<Policy, always_allow>) return algorithm::always_allow;
  if constexpr (std::is_same_v<Policy, always_deny>) return algorithm::always_deny;
}

/// The concrete policy a config describes (it must be valid).
template <typename Policy>
Policy build(const config& c) {
  if constexpr (std::is_same_v<Policy, fixed_window>) return fixed_window::make(c.r, c.origin).value();
  if constexpr (std::is_same_v<Policy, sliding_log>) return sliding_log::make(c.r).value();
  if constexpr (std::is_same_v<Policy, sliding_counter>) return sliding_counter::make(c.r).value();
  if constexpr (std::is_same_v<Policy, sliding_buckets>) return sliding_buckets::make(c.r, c.extra).value();
  if constexpr (std::is_same_v<Policy, token_bucket>) return token_bucket::make(c.r, c.extra).value();
  if constexpr (std::is_same_v<Policy, gcra>) return gcra::make(c.r, c.extra).value();
  if constexpr (std::is_same_v<Policy, leaky_queue>) return leaky_queue::make(c.r, c.extra).value();
  if constexpr (std::is_same_v<Policy, quota>) return quota::make(c.extra).value();
  if constexpr (std::is_same_v<Policy, always_allow>) return always_allow{};
  if constexpr (std::is_same_v<Policy, always_deny>) return always_deny{};
}

inline std::unique_ptr<model> build_model(const config& c) {
  switch (c.algo) {
    case algorithm::fixed_window:
      return std::make_unique<fixed_window_model>(c.r, c.origin);
    case algorithm::sliding_log:
      return std::make_unique<sliding_log_model>(c.r);
    case algorithm::sliding_counter:
      return std::make_unique<sliding_counter_model>(c.r);
    case algorithm::sliding_buckets:
      return std::make_unique<sliding_buckets_model>(c.r, c.extra);
    case algorithm::token_bucket:
    case algorithm::gcra:
      return std::make_unique<token_bucket_model>(c.r, c.extra);
    case algorithm::leaky_queue:
      return std::make_unique<leaky_queue_model>(c.r, c.extra);
    case algorithm::quota:
      return std::make_unique<quota_model>(c.extra);
    case algorithm::always_allow:
      return std::make_unique<always_allow_model>();
    case algorithm::always_deny:
      return std::make_unique<always_deny_model>();
    default:  // composites have no model here
      return nullptr;
  }
}

/// Calls f(std::type_identity<Policy>{}) for every algorithm.
template <typename F>
void for_each_algorithm(F&& f) {
  f(std::type_identity<fixed_window>{});
  f(std::type_identity<sliding_log>{});
  f(std::type_identity<sliding_counter>{});
  f(std::type_identity<sliding_buckets>{});
  f(std::type_identity<token_bucket>{});
  f(std::type_identity<gcra>{});
  f(std::type_identity<leaky_queue>{});
  f(std::type_identity<quota>{});
  f(std::type_identity<always_allow>{});
  f(std::type_identity<always_deny>{});
}

/// A seed mixed with the algorithm, so each algorithm gets its own draws.
inline std::uint64_t mix(std::uint64_t seed, algorithm a) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(a) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// The spec a config describes, for make_policy.
inline spec spec_of(const config& c) {
  spec sp;
  sp.algo = c.algo;
  sp.limit = c.r;
  sp.origin = c.origin;
  switch (c.algo) {
    case algorithm::token_bucket:
    case algorithm::gcra:
      sp.burst = c.extra;
      break;
    case algorithm::sliding_buckets:
      sp.buckets = c.extra;
      break;
    case algorithm::leaky_queue:
      sp.queue = c.extra;
      break;
    case algorithm::quota:
      sp.units = c.extra;
      break;
    default:
      break;
  }
  return sp;
}

}  // namespace sluice::model
