// The states whose encodings the golden tests pin (tests/keyed/
// snapshot_golden_test.cpp: the snapshot's bytes; tests/redis/
// values_golden_test.cpp: the Redis values and the Lua arguments): one
// reached state per algorithm, a composite, and the carried states a limit
// of 0 keeps, each built by the core's own steps at explicit instants (or,
// for a carried state, written as the carry leaves it). Shared so both
// encodings are pinned on the same states.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/core/any.hpp"

namespace sluice::codec_cases {

/// One pinned state: the policy, its state, the instant the state's bytes
/// are written at (a Redis value's `at`, a snapshot's moment) and whether
/// the state is one a snapshot reads back (a state carried to a limit of 0
/// is outside the snapshot's ranges).
struct codec_case {
  std::string name;
  any_policy policy;
  any_state state;
  tick at = 0;
  bool snapshot_reads = true;
};

/// The state `p` reaches after deciding `steps` ({instant, cost}) in order
/// under the lease nonce of each step (concurrency: the lease's nonce).
inline any_state after(const any_policy& p, std::initializer_list<std::pair<tick, std::int64_t>> steps) {
  any_state s = fresh_state(p);
  std::uint64_t nonce = 0x0123456789abcdefULL;
  for (const auto& [t, c] : steps) {
    const lease_scope scope(nonce);
    (void)decide(p, s, t, c);
    nonce += 0x1111111111ULL;
  }
  return s;
}

inline std::vector<codec_case> cases() {
  std::vector<codec_case> out;
  const auto add = [&](std::string name, any_policy p, std::initializer_list<std::pair<tick, std::int64_t>> steps,
                       tick at) {
    any_state s = after(p, steps);
    out.push_back({std::move(name), std::move(p), std::move(s), at, true});
  };
  add("fixed_window", fixed_window::make(rate{5, 100}, 7).value(), {{1234, 2}, {1250, 1}}, 1260);
  add("sliding_log", sliding_log::make(rate{5, 100}).value(), {{1000, 1}, {1030, 2}, {1090, 1}}, 1095);
  add("sliding_counter", sliding_counter::make(rate{10, 100}).value(), {{950, 3}, {1010, 4}}, 1020);
  add("sliding_buckets", sliding_buckets::make(rate{10, 100}, 4).value(), {{950, 2}, {990, 3}, {1010, 1}}, 1012);
  add("token_bucket", token_bucket::make(rate{3, 10}, 5).value(), {{1000, 2}, {1004, 2}}, 1004);
  add("gcra", gcra::make(rate{3, 10}, 5).value(), {{1000, 2}, {1004, 2}}, 1004);
  add("gcra_negative_time", gcra::make(rate{7, 1000}, 9).value(), {{-5'000'000'000'123, 4}, {-5'000'000'000'100, 3}},
      -5'000'000'000'100);
  add("leaky_queue", leaky_queue::make(rate{3, 10}, 4).value(), {{1000, 1}, {1001, 2}}, 1001);
  add("quota", quota::make(10).value(), {{5, 3}, {9, 2}}, 9);
  add("concurrency", concurrency::make(4, 500).value(), {{1000, 1}, {1010, 2}}, 1010);
  add("all_of", all_of::make({gcra::make(rate{3, 10}, 5).value(), fixed_window::make(rate{5, 100}).value()}).value(),
      {{1000, 2}, {1004, 1}}, 1004);
  add("any_of",
      any_of::make({quota::make(2).value(), sliding_counter::make(rate{4, 50}).value(), always_allow{},
                    token_bucket::make(rate{1, 10}, 1).value()})
          .value(),
      {{10, 2}, {20, 1}}, 20);  // the token bucket stays fresh
  // A limit of 0 keeps what a carry hands it (reconfigure.hpp): a debt, spent
  // units, a release instant after `last`.
  out.push_back({"gcra_limit_0", gcra::make(rate{0, 10}, 5).value(), gcra::state{37, 1000}, 1000, false});
  out.push_back(
      {"token_bucket_limit_0", token_bucket::make(rate{0, 10}, 5).value(), token_bucket::state{23, 1000}, 1000, false});
  out.push_back(
      {"leaky_queue_limit_0", leaky_queue::make(rate{0, 10}, 4).value(), leaky_queue::state{1030, 1000}, 1000, false});
  return out;
}

/// Bytes as lower-case hex.
inline std::string hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(digits[u >> 4]);
    out.push_back(digits[u & 15]);
  }
  return out;
}

}  // namespace sluice::codec_cases
