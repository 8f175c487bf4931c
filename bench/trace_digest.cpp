// A digest of every GCRA and token-bucket decision (and the state after it)
// on a few million random requests (bench/random_requests.hpp), to check that
// a change to a step function (include/sluice/core/gcra.hpp, token_bucket.hpp,
// detail/arith.hpp) changes no decision: build it against the headers before
// and after the change, run both, compare the digests (same seed, same count).
//
//   trace_digest [requests (default 4000000)] [seed (default 1)] [--print N]
//
// prints one line: requests, seed, and per algorithm the digest and the
// number of admits. --print N also prints the first N decisions, one per line.
//
// Comparing two builds (from the repository root; bench/run.sh configures
// build-bench, or configure it as run.sh does: -DSLUICE_BUILD_BENCH=ON):
//
//   cmake --build build-bench -j2 --target trace_digest
//   cp build-bench/bench/trace_digest /tmp/trace_digest.before
//   ... edit the step function ...
//   cmake --build build-bench -j2 --target trace_digest
//   for seed in 1 2 3; do
//     a=$(/tmp/trace_digest.before 4000000 $seed)
//     b=$(build-bench/bench/trace_digest 4000000 $seed)
//     [ "$a" = "$b" ] && echo "seed $seed: same" || printf 'DIFFERS\n%s\n%s\n' "$a" "$b"
//   done
//
// For the "before" of an older revision, build the target in a checkout of
// it (e.g. `git worktree add /tmp/before REV`, then configure and build
// /tmp/before as above; copy bench/trace_digest.cpp and random_requests.hpp
// there first if REV predates them: it links sluice::core, so it cannot be
// compiled against REV's headers alone). When digests differ,
// `--print N` on both sides and a diff of the output find the first request
// that decides differently. Both builds must use the same standard library:
// std::uniform_int_distribution, which draws the requests, is
// implementation-defined, so a digest is comparable only with one from the
// same toolchain, same requests count and seed.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "random_requests.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/token_bucket.hpp"

namespace {

using namespace sluice_bench::random_requests;

/// FNV-1a, 64 bits.
struct digest {
  std::uint64_t h = 1469598103934665603ULL;
  void add(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
  }
  void add64(std::int64_t v) { add(&v, sizeof v); }
  void add128(i128 v) {
    add64(static_cast<std::int64_t>(v));
    add64(static_cast<std::int64_t>(v >> 64));
  }
  void add(const sluice::decision& d) {
    add64(d.allowed ? 1 : 0);
    add64(d.remaining);
    add64(d.retry_after);
    add64(d.reset_after);
    add64(d.release_after);
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::int64_t requests = 4'000'000;
  std::uint64_t seed = 1;
  std::int64_t print = 0;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--print") == 0 && i + 1 < argc) {
      print = std::strtoll(argv[++i], nullptr, 10);
    } else if (positional++ == 0) {
      requests = std::strtoll(argv[i], nullptr, 10);
    } else {
      seed = std::strtoull(argv[i], nullptr, 10);
    }
  }
  rng.seed(seed);
  digest dg, dt;
  std::int64_t n = 0, admits_g = 0, admits_t = 0;
  while (n < requests) {
    sluice::rate r;
    std::int64_t burst = 0;
    a_policy(r, burst);
    const auto g = sluice::gcra::make(r, burst);
    const auto t = sluice::token_bucket::make(r, burst);
    if (!g || !t) {
      std::fprintf(stderr, "bad policy\n");
      return 1;
    }
    tick now = first_instant();
    sluice::gcra::state gs = a_gcra_state(*g, now);
    sluice::token_bucket::state ts = a_bucket_state(t->capacity(), now);
    const std::int64_t len = between(1, 2000);
    for (std::int64_t i = 0; i < len && n < requests; ++i, ++n) {
      const std::int64_t cost = a_cost(burst);
      const sluice::decision a = decide(*g, gs, now, cost);
      const sluice::decision b = decide(*t, ts, now, cost);
      dg.add(a);
      dg.add128(gs.u);
      dg.add64(gs.last);
      dt.add(b);
      dt.add128(ts.spent);
      dt.add64(ts.last);
      admits_g += a.allowed;
      admits_t += b.allowed;
      if (n < print) {
        std::printf("%" PRId64 " L=%" PRId64 " W=%" PRId64 " S=%" PRId64 " now=%" PRId64 " cost=%" PRId64
                    " | gcra %d %" PRId64 " %" PRId64 " %" PRId64 " | bucket %d %" PRId64 " %" PRId64 " %" PRId64 "\n",
                    n, r.limit, r.window, burst, now, cost, a.allowed ? 1 : 0, a.remaining, a.retry_after,
                    a.reset_after, b.allowed ? 1 : 0, b.remaining, b.retry_after, b.reset_after);
      }
      now = next_instant(now, r.limit, r.window);
    }
  }
  std::printf("requests=%" PRId64 " seed=%" PRIu64 " gcra_digest=%016" PRIx64 " (admits %" PRId64
              ") token_bucket_digest=%016" PRIx64 " (admits %" PRId64 ")\n",
              n, seed, dg.h, admits_g, dt.h, admits_t);
  return 0;
}
