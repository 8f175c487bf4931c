// A keyed limiter: the same limit for every client, each client (an API
// key, an IP) with a state of its own, for millions of keys and any number
// of threads.
//
// Build and run:  cmake --build build --target keyed_limiter && build/examples/keyed_limiter
#include <sluice/keyed/keyed.hpp>
#include <sluice/sluice.hpp>

#include <chrono>
#include <cstdio>

namespace {

void show(const char* key, const sluice::decision& d) {
  if (d.allowed)
    std::printf("%s: allowed, %lld left\n", key, static_cast<long long>(d.remaining));
  else
    std::printf("%s: denied, retry after %s s\n", key, sluice::format_seconds(d.retry_after).c_str());
}

}  // namespace

int main() {
  using namespace std::chrono_literals;

  // 5 requests a second per key, at most 2 at once (GCRA). An expression
  // works too: sluice::parse_policy("gcra 5/1s burst=2").
  auto policy = sluice::gcra::make(sluice::rate{5, 1s}, 2);
  if (!policy) {
    std::fprintf(stderr, "%s\n", policy.err().what().c_str());
    return 1;
  }

  // A program passes no clock and the store reads the Unix clock
  // (`sluice::keyed_limiter limiter(*policy)`); this one moves a clock by
  // hand so that it prints the same every time.
  sluice::manual_clock clock;
  sluice::keyed_limiter limiter(*policy, {}, clock);

  for (const char* key : {"alice", "alice", "alice", "bob"}) show(key, limiter.try_acquire(key));
  clock.advance(200ms);
  std::printf("200 ms later\n");
  show("alice", limiter.try_acquire("alice"));
  std::printf("%llu keys held\n", static_cast<unsigned long long>(limiter.stats().keys));
  return 0;
}
