// A report (report.hpp) against a decision of the same policy, in the same
// run: nanoseconds per call, single key, single thread, virtual time. Each
// loop advances the clock by one unit's refill, so both stay in their
// steady state (an admit per step; the report's debt never grows). The
// issue's bar: a report costs no more than a decision of the same policy.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "sluice/sluice.hpp"

namespace {

using namespace sluice;

any_policy policy_of(int which) {
  const auto leaf = [](algorithm a, std::int64_t l, tick w) {
    spec s;
    s.algo = a;
    s.limit = rate{l, w};
    return make_policy(s).value();
  };
  switch (which) {
    case 0:
      return leaf(algorithm::gcra, 100, 1'000'000'000);
    case 1:
      return leaf(algorithm::token_bucket, 100, 1'000'000'000);
    case 2:
      return leaf(algorithm::fixed_window, 100, 1'000'000'000);
    case 3:
      return leaf(algorithm::sliding_log, 100, 1'000'000'000);
    default:
      return any_policy{
          all_of::make({leaf(algorithm::gcra, 100, 1'000'000'000), leaf(algorithm::fixed_window, 1000, 60'000'000'000),
                        leaf(algorithm::sliding_counter, 100, 1'000'000'000)})
              .value()};
  }
}

template <bool Report>
void run(benchmark::State& st) {
  const any_policy p = policy_of(static_cast<int>(st.range(0)));
  any_state s = fresh_state(p);
  tick now = 0;
  constexpr tick step = 10'000'000;  // 1 / (100 per s): one unit's refill
  for (auto _ : st) {
    now += step;
    decision d = Report ? report(p, s, now, 1) : decide(p, s, now, 1);
    benchmark::DoNotOptimize(d);
  }
}

void names(benchmark::internal::Benchmark* b) {
  for (int i = 0; i < 5; ++i) b->Arg(i);
  b->ArgName("policy");  // 0 gcra, 1 token-bucket, 2 fixed-window, 3 sliding-log, 4 all3
}

}  // namespace

BENCHMARK(run<false>)->Name("decide")->Apply(names);
BENCHMARK(run<true>)->Name("report")->Apply(names);

BENCHMARK_MAIN();
