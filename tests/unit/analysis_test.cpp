// busiest() and worst_case(): the P096 figures, the edges (nothing admitted,
// windows below one tick, int64 extremes, saturation) and agreement with
// P096's own step-by-step programs (busiest, bucket_most) ported as models.
#include "sluice/core/analysis.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <vector>

namespace sluice::unit_analysis_test {
namespace {

constexpr tick i64max = std::numeric_limits<tick>::max();
constexpr tick i64min = std::numeric_limits<tick>::min();

/// bools in contiguous memory (std::vector<bool> is not).
struct flags {
  explicit flags(std::initializer_list<int> v) : n(v.size()), p(std::make_unique<bool[]>(v.size())) {
    std::size_t i = 0;
    for (int b : v) p[i++] = b != 0;
  }
  explicit flags(const std::vector<int>& v) : n(v.size()), p(std::make_unique<bool[]>(v.size())) {
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = v[i] != 0;
  }
  std::span<const bool> span() const { return {p.get(), n}; }
  std::size_t n;
  std::unique_ptr<bool[]> p;
};

busiest_window run(const std::vector<tick>& times, const flags& a, tick w) { return busiest(times, a.span(), w); }

TEST(Busiest, P096Figures) {
  // The P096 burst, 10 at second 59 and 10 at 60, all through a fixed window.
  std::vector<tick> burst(10, 59);
  burst.insert(burst.end(), 10, 60);
  flags all(std::vector<int>(20, 1));
  EXPECT_EQ(run(burst, all, 60), (busiest_window{20, 59}));
  // 3 per 10 s: the typed trace 0 0 0 5 5 5 9 10 11 12 19 20 through a
  // token bucket of 2 (P096 "basic": 4, from second 0).
  const std::vector<tick> typed{0, 0, 0, 5, 5, 5, 9, 10, 11, 12, 19, 20};
  flags bucket{1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 1};
  EXPECT_EQ(run(typed, bucket, 10), (busiest_window{4, 0}));
  flags fixed{1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1};
  EXPECT_EQ(run(typed, fixed, 10), (busiest_window{3, 0}));
}

TEST(Busiest, WindowIsHalfOpen) {
  const std::vector<tick> t{0, 10};
  flags a{1, 1};
  EXPECT_EQ(run(t, a, 10), (busiest_window{1, 0}));  // [0, 10) does not hold 10
  EXPECT_EQ(run(t, a, 11), (busiest_window{2, 0}));
}

TEST(Busiest, EarliestStartWinsTies) {
  const std::vector<tick> t{1, 2, 50, 51, 100};
  flags a{1, 1, 1, 1, 1};
  EXPECT_EQ(run(t, a, 5), (busiest_window{2, 1}));
}

TEST(Busiest, StartIsTheFirstAdmittedRequestInTheWindow) {
  const std::vector<tick> t{3, 5, 6, 7, 20};
  flags a{0, 1, 0, 1, 1};
  EXPECT_EQ(run(t, a, 10), (busiest_window{2, 5}));
}

TEST(Busiest, NothingAdmittedOrEmpty) {
  const std::vector<tick> t{1, 2, 3};
  flags none{0, 0, 0};
  EXPECT_EQ(run(t, none, 10), (busiest_window{0, never}));
  EXPECT_EQ(busiest({}, {}, 10), (busiest_window{0, never}));
}

TEST(Busiest, WindowBelowOneTickHoldsNothing) {
  const std::vector<tick> t{1, 1};
  flags a{1, 1};
  EXPECT_EQ(run(t, a, 0), (busiest_window{0, never}));
  EXPECT_EQ(run(t, a, -5), (busiest_window{0, never}));
  EXPECT_EQ(run(t, a, i64min), (busiest_window{0, never}));
  EXPECT_EQ(run(t, a, 1), (busiest_window{2, 1}));
}

TEST(Busiest, NegativeTimesAndInt64Extremes) {
  const std::vector<tick> t{i64min, i64min, -2, 0, i64max, i64max};
  flags a{1, 1, 1, 1, 1, 1};
  EXPECT_EQ(run(t, a, 1), (busiest_window{2, i64min}));
  // −2 − INT64_MIN = 2^63 − 2 fits a window of INT64_MAX ticks; 0 does not,
  // and INT64_MAX − (−2) is past int64 (taken in 128 bits).
  EXPECT_EQ(run(t, a, i64max), (busiest_window{3, i64min}));
  EXPECT_EQ(run({-5, -1, 0, 3}, flags{1, 1, 1, 1}, 9), (busiest_window{4, -5}));
  EXPECT_EQ(run({-5, -1, 0, 3}, flags{1, 1, 1, 1}, 8), (busiest_window{3, -5}));
}

TEST(Busiest, ReadsUpToTheShorterSpan) {
  const std::vector<tick> t{1, 2, 3, 4};
  flags a{1, 1};
  EXPECT_EQ(run(t, a, 10), (busiest_window{2, 1}));
}

TEST(Busiest, UnsortedInputIsSafe) {
  const std::vector<tick> t{5, 1, 9, 0, 3};
  flags a{1, 1, 1, 1, 1};
  const auto b = run(t, a, 4);
  EXPECT_GE(b.most, 1);
  EXPECT_LE(b.most, 5);
}

/// P096's busiest, as limits.eml writes it: a list of admitted times and two
/// pointers over it.
busiest_window p096_busiest(const std::vector<tick>& times, const std::vector<int>& through, tick w) {
  std::vector<tick> ok;
  for (std::size_t i = 0; i < times.size(); ++i)
    if (through[i]) ok.push_back(times[i]);
  std::int64_t most = 0;
  tick at = -1;
  std::size_t j = 0;
  for (std::size_t i = 0; i < ok.size(); ++i) {
    while (ok[i] - ok[j] >= w) ++j;
    if (static_cast<std::int64_t>(i - j + 1) > most) {
      most = static_cast<std::int64_t>(i - j + 1);
      at = ok[j];
    }
  }
  return {most, most == 0 ? never : at};
}

TEST(Busiest, MatchesP096OnRandomTraces) {
  std::mt19937_64 rng(96);
  for (int n = 0; n < 20000; ++n) {
    const auto len = static_cast<std::size_t>(rng() % 30);
    std::vector<tick> times;
    std::vector<int> through;
    tick t = static_cast<tick>(rng() % 5);
    for (std::size_t i = 0; i < len; ++i) {
      t += static_cast<tick>(rng() % 4);
      times.push_back(t);
      through.push_back(rng() % 3 != 0 ? 1 : 0);
    }
    const tick w = static_cast<tick>(rng() % 12) + 1;
    ASSERT_EQ(run(times, flags(through), w), p096_busiest(times, through, w)) << "case " << n;
  }
}

token_bucket bucket(std::int64_t l, tick w, std::int64_t s) { return token_bucket::make({l, w}, s).value(); }
gcra meter(std::int64_t l, tick w, std::int64_t s) { return gcra::make({l, w}, s).value(); }
fixed_window fixed(std::int64_t l, tick w, tick origin = 0) { return fixed_window::make({l, w}, origin).value(); }
sliding_log slog(std::int64_t l, tick w) { return sliding_log::make({l, w}).value(); }

TEST(WorstCase, P096Figures) {
  // 10 per 60 s, granularity one second, W′ = 60.
  EXPECT_EQ(worst_case(bucket(10, 60, 10), 60, 1), 19);
  EXPECT_EQ(worst_case(fixed(10, 60), 60, 1), 20);
  EXPECT_EQ(worst_case(slog(10, 60), 60, 1), 10);
  EXPECT_EQ(worst_case(bucket(10, 60, 3), 60, 1), 12);
  EXPECT_EQ(worst_case(bucket(3, 10, 2), 10, 1), 4);
  EXPECT_EQ(worst_case(meter(10, 60, 10), 60, 1), 19);
  EXPECT_EQ(worst_case(meter(3, 10, 2), 10, 1), 4);
}

TEST(WorstCase, FixedWindowIsTwiceTheLimitAtABoundary) {
  EXPECT_EQ(worst_case(fixed(5, 10), 2, 1), 10);
  EXPECT_EQ(worst_case(fixed(5, 10), 1, 1), 5);
  EXPECT_EQ(worst_case(fixed(5, 10), 11, 1), 10);
  EXPECT_EQ(worst_case(fixed(5, 10), 12, 1), 15);
  // A grid of 4 against windows of 10: W′ = 2 holds one grid point, so one
  // window; W′ = 5 holds two (8 and 12) that straddle a boundary, from
  // origin 0 or 1 alike.
  EXPECT_EQ(worst_case(fixed(5, 10), 2, 4), 5);
  EXPECT_EQ(worst_case(fixed(5, 10), 5, 4), 10);
  EXPECT_EQ(worst_case(fixed(5, 10, 1), 5, 4), 10);
  // Grid coarser than the window: every point its own window.
  EXPECT_EQ(worst_case(fixed(5, 10), 31, 15), 15);
}

TEST(WorstCase, SlidingLogHoldsEveryWindowToTheLimit) {
  EXPECT_EQ(worst_case(slog(7, 60), 60, 1), 7);
  EXPECT_EQ(worst_case(slog(7, 60), 61, 1), 14);
  EXPECT_EQ(worst_case(slog(7, 60), 1, 1), 7);
  // Grid of 7 against W = 60: the next fresh point is 63 ticks later.
  EXPECT_EQ(worst_case(slog(7, 60), 63, 7), 7);
  EXPECT_EQ(worst_case(slog(7, 60), 64, 7), 14);
}

TEST(WorstCase, TokenBucketOverflowingRefill) {
  // Refill outruns the bucket: L·g ≥ S·W, so every point passes S.
  EXPECT_EQ(worst_case(bucket(10, 1, 2), 5, 1), 10);
  // L·g = 5 > (S − 1)·W = 3 with W = 3, S = 2: d = 2, q = 2, pay 1, 2, 1, 2 …
  EXPECT_EQ(worst_case(bucket(5, 3, 2), 5, 1), 2 + 4 * 1 + 2);
  // S = 1: one request every ceil(W / L) ticks.
  EXPECT_EQ(worst_case(bucket(1, 3, 1), 7, 1), 3);
}

TEST(WorstCase, EdgeArguments) {
  EXPECT_EQ(worst_case(bucket(10, 60, 10), 0, 1), 0);
  EXPECT_EQ(worst_case(bucket(10, 60, 10), -3, 1), 0);
  EXPECT_EQ(worst_case(fixed(10, 60), 0, 1), 0);
  EXPECT_EQ(worst_case(slog(10, 60), i64min, 1), 0);
  // Granularity below 1 reads as 1.
  EXPECT_EQ(worst_case(bucket(10, 60, 10), 60, 0), 19);
  EXPECT_EQ(worst_case(fixed(10, 60), 60, -7), 20);
  EXPECT_EQ(worst_case(slog(10, 60), 60, i64min), 10);
  // L = 0 lets nothing through, not even a first burst.
  EXPECT_EQ(worst_case(bucket(0, 60, 10), 60, 1), 0);
  EXPECT_EQ(worst_case(meter(0, 60, 10), 60, 1), 0);
  EXPECT_EQ(worst_case(fixed(0, 60), 60, 1), 0);
  EXPECT_EQ(worst_case(slog(0, 60), 60, 1), 0);
  // W′ = 1: one instant.
  EXPECT_EQ(worst_case(bucket(10, 60, 4), 1, 1), 4);
  EXPECT_EQ(worst_case(fixed(10, 60), 1, 1), 10);
}

TEST(WorstCase, NanosecondsAndSaturation) {
  constexpr tick hour = 3'600'000'000'000;
  constexpr std::int64_t big = std::int64_t{1} << 62;
  // 10 per hour in nanoseconds, W′ an hour at granularity 1: closed form,
  // no loop over 3.6e12 ticks.
  EXPECT_EQ(worst_case(bucket(10, hour, 10), hour, 1), 19);
  EXPECT_EQ(worst_case(fixed(10, hour), hour, 1), 20);
  EXPECT_EQ(worst_case(slog(10, hour), hour, 1), 10);
  // Huge limits and bursts saturate instead of overflowing.
  EXPECT_EQ(worst_case(bucket(big, 1, big), i64max, 1), i64max);
  EXPECT_EQ(worst_case(bucket(big, big, 1), i64max, 1), i64max);
  EXPECT_EQ(worst_case(bucket(1, big, big), i64max, 1), big + 1);
  EXPECT_EQ(worst_case(fixed(big, 1), i64max, 1), i64max);
  EXPECT_EQ(worst_case(fixed(big, big, big - 1), i64max, i64max), big);
  EXPECT_EQ(worst_case(slog(big, 1), i64max, 1), i64max);
  EXPECT_EQ(worst_case(slog(big, big), i64max, i64max), big);
  EXPECT_EQ(worst_case(meter(big, big, big), i64max, 3), i64max);
}

/// P096's bucket_most (limits.eml): the greedy, second by second.
std::int64_t p096_bucket_most(std::int64_t limit, std::int64_t w, std::int64_t size) {
  std::int64_t tokens = size * w;
  std::int64_t most = 0;
  for (std::int64_t t = 0; t < w; ++t) {
    if (t > 0) tokens = std::min(tokens + limit, size * w);
    const std::int64_t k = tokens / w;
    most += k;
    tokens -= k * w;
  }
  return most;
}

TEST(WorstCase, TokenBucketIsP096BucketMostOnEveryP096Limit) {
  // Every limit P096 accepts (1 to 100, bucket 1 to the limit) on windows
  // 1 to 130 and the largest ones; the full 1 to 3600 sweep is left to the
  // property test's random cases.
  std::vector<tick> windows;
  for (tick w = 1; w <= 130; ++w) windows.push_back(w);
  for (tick w : {599, 600, 601, 1799, 3599, 3600}) windows.push_back(w);
  for (std::int64_t l = 1; l <= 100; ++l)
    for (std::int64_t s = 1; s <= l; ++s)
      for (tick w : windows)
        ASSERT_EQ(worst_case(bucket(l, w, s), w, 1), p096_bucket_most(l, w, s))
            << l << " per " << w << ", bucket " << s;
}

}  // namespace
}  // namespace sluice::unit_analysis_test
