// Callgrind driver: runs N decisions of one explicit-time scenario of
// decide_bench (same policies, same loop) inside `run_loop`, so that
//   valgrind --tool=callgrind '--toggle-collect=*run_loop*' decide_ir SCENARIO N
// counts the instructions of the loop alone. bench/run.sh prints
// (Ir(2N) − Ir(N)) / N as the IR line of each scenario: repeatable on a
// noisy machine where nanoseconds are not.
//
// Usage: decide_ir SCENARIO N     decide_ir --list
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "loops.hpp"
#include "scenarios.hpp"

namespace {

using namespace sluice_bench;

struct entry {
  const char* name;
  std::int64_t (*fn)(std::int64_t);
};

// The explicit-time scenarios of decide_bench, under the same names.
constexpr entry scenarios[] = {
    {"1key-allow-virtualtime", run_n<&gcra_allow>},
    {"1key-deny-virtualtime", run_n<&gcra_deny>},
    {"token-bucket-allow-virtualtime", run_n<&token_bucket_allow>},
    {"token-bucket-deny-virtualtime", run_n<&token_bucket_deny>},
    {"fixed-window-allow-virtualtime", run_n<&fixed_window_allow>},
    {"fixed-window-deny-virtualtime", run_n<&fixed_window_deny>},
    {"sliding-log-allow-virtualtime", run_n<&sliding_log_allow>},
    {"sliding-log-deny-virtualtime", run_n<&sliding_log_deny>},
    {"sliding-counter-allow-virtualtime", run_n<&sliding_counter_allow>},
    {"sliding-counter-deny-virtualtime", run_n<&sliding_counter_deny>},
    {"sliding-buckets-allow-virtualtime", run_n<&sliding_buckets_allow>},
    {"sliding-buckets-deny-virtualtime", run_n<&sliding_buckets_deny>},
    {"leaky-queue-allow-virtualtime", run_n<&leaky_queue_allow>},
    {"leaky-queue-deny-virtualtime", run_n<&leaky_queue_deny>},
    {"quota-allow-virtualtime", run_n<&quota_allow>},
    {"quota-deny-virtualtime", run_n<&quota_deny>},
    {"any-token-bucket-allow-virtualtime", run_n<&any_token_bucket_allow>},
    {"any-token-bucket-deny-virtualtime", run_n<&any_token_bucket_deny>},
    {"any-gcra-allow-virtualtime", run_n<&any_gcra_allow>},
    {"any-gcra-deny-virtualtime", run_n<&any_gcra_deny>},
    {"all3-allow-virtualtime", run_n<&all3_allow>},
    {"all3-deny-virtualtime", run_n<&all3_deny>},
    {"nest32-allow-virtualtime", run_n<&nest32_allow>},
    {"nest32-deny-virtualtime", run_n<&nest32_deny>},
    {"calib-always-allow-virtualtime", run_n<&always_allow_calib>},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const entry& e : scenarios) std::printf("%s\n", e.name);
    return 0;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SCENARIO N | --list\n", argv[0]);
    return 2;
  }
  const std::int64_t n = std::strtoll(argv[2], nullptr, 10);
  for (const entry& e : scenarios) {
    if (std::strcmp(e.name, argv[1]) == 0) {
      std::printf("allowed=%lld/%lld\n", static_cast<long long>(e.fn(n)), static_cast<long long>(n));
      return 0;
    }
  }
  std::fprintf(stderr, "unknown scenario %s (see --list)\n", argv[1]);
  return 2;
}
