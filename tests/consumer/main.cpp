// The README's first example, compiled and run by the consumer tests.
#include <sluice/sluice.hpp>

#include <cstdio>

int main() {
  // 2 requests per second, bursts of up to 10, on a clock we move by hand (ticks = ms).
  sluice::manual_clock clock;
  auto policy = sluice::token_bucket::make(sluice::rate{2, 1000}, 10);
  if (!policy) {
    std::fprintf(stderr, "%s\n", policy.err().what().c_str());
    return 1;
  }
  sluice::limiter<sluice::token_bucket, sluice::manual_clock> limiter(*policy, clock);
  int through = 0;
  for (int i = 0; i < 11; ++i) through += limiter.try_acquire().allowed ? 1 : 0;
  const sluice::decision denied = limiter.try_acquire();
  clock.advance(600);
  const sluice::decision later = limiter.try_acquire();
  std::printf("%d of 11 through; retry after %lld ms; after 600 ms: %s\n", through,
              static_cast<long long>(denied.retry_after), later.allowed ? "allowed" : "denied");
  return through == 10 && denied.retry_after == 500 && later.allowed ? 0 : 1;
}
