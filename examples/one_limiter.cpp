// One limiter: 2 requests a second with bursts of up to 10, for one thing
// (one client, one outbound quota). The README's first example.
//
// Build and run:  cmake --build build --target one_limiter && build/examples/one_limiter
#include <sluice/sluice.hpp>

#include <chrono>
#include <cstdio>

int main() {
  using namespace std::chrono_literals;

  // The policy: a token bucket of 10, refilled at 2 a second. `make` checks
  // it and answers an error naming the bad field ("window", "burst", ...).
  // A std::chrono duration is read as nanoseconds, exactly.
  auto policy = sluice::token_bucket::make(sluice::rate{2, 1s}, 10);
  if (!policy) {
    std::fprintf(stderr, "%s\n", policy.err().what().c_str());
    return 1;
  }

  // The limiter reads a clock of nanoseconds. A program passes nothing and
  // gets the steady clock (`sluice::limiter<sluice::token_bucket>
  // limiter(*policy)`); this one moves a clock by hand so that it prints
  // the same every time.
  sluice::manual_clock clock;
  sluice::limiter<sluice::token_bucket, sluice::manual_clock> limiter(*policy, clock);

  int through = 0;
  for (int i = 0; i < 11; ++i) through += limiter.try_acquire().allowed ? 1 : 0;
  std::printf("%d of 11 requests through at once\n", through);

  // A denial says exactly when the same request would pass: retry_after,
  // in ticks (here nanoseconds) from now.
  const sluice::decision denied = limiter.try_acquire();
  std::printf("the next: %s, retry after %s s\n", denied.allowed ? "allowed" : "denied",
              sluice::format_seconds(denied.retry_after).c_str());

  clock.advance(600ms);
  const sluice::decision later = limiter.try_acquire();
  std::printf("600 ms later: %s, %lld left\n", later.allowed ? "allowed" : "denied",
              static_cast<long long>(later.remaining));
  return 0;
}
