// Fuzz target: any sequence of requests (times, costs, including clocks
// stepping back and extreme values) through every algorithm keeps the
// contract: a denial changes nothing, retry_after is exact, remaining is
// never negative.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sluice/core/any.hpp"

namespace {

/// Reads little-endian integers off the input, zero once it runs out.
struct reader {
  const std::uint8_t* p;
  std::size_t n;
  std::int64_t i64() {
    std::uint64_t v = 0;
    const std::size_t k = n < 8 ? n : 8;
    std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return static_cast<std::int64_t>(v);
  }
  std::uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
};

/// Small-ish values most of the time, extreme ones sometimes.
std::int64_t shape(reader& r, std::int64_t small) {
  const std::uint8_t k = r.u8();
  const std::int64_t v = r.i64();
  if (k < 200) return (v % small + small) % small;
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  reader r{data, size};
  sluice::spec s;
  s.algo = static_cast<sluice::algorithm>(r.u8() % 10);
  const auto plus1 = [](std::int64_t v) { return v == INT64_MAX ? v : v + 1; };
  s.limit = {shape(r, 8), plus1(shape(r, 20))};
  s.burst = plus1(shape(r, 6));
  s.buckets = plus1(shape(r, 4));
  s.queue = plus1(shape(r, 6));
  s.units = shape(r, 10);
  s.origin = shape(r, 30);
  auto policy = sluice::make_policy(s);
  if (!policy) return 0;
  sluice::any_state state = sluice::fresh_state(*policy);
  sluice::tick now = shape(r, 100);
  for (int i = 0; i < 64 && r.n > 0; ++i) {
    const std::int64_t step = shape(r, 15);
    sluice::tick next = 0;
    // Mostly forward, sometimes back; an extreme step that would overflow is a jump to the end.
    if (__builtin_add_overflow(now, step - (step > INT64_MIN + 3 ? 3 : 0), &next))
      next = step < 0 ? INT64_MIN : INT64_MAX;
    now = next;
    const std::int64_t cost = shape(r, 5);
    const sluice::any_state before = state;
    const sluice::decision d = sluice::decide(*policy, state, now, cost);
    if (d.remaining < 0) std::abort();
    if (!d.allowed) {
      if (!(state == before)) std::abort();  // a denial is a pure read
      if (d.retry_after != sluice::never && d.retry_after > 0 && now <= INT64_MAX - d.retry_after) {
        sluice::any_state at = state;
        if (!sluice::decide(*policy, at, now + d.retry_after, cost).allowed) std::abort();
        sluice::any_state early = state;
        if (sluice::decide(*policy, early, now + d.retry_after - 1, cost).allowed) std::abort();
      }
    } else if (d.retry_after != 0) {
      std::abort();
    }
  }
  return 0;
}
