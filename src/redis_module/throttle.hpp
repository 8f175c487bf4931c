// CL.THROTTLE, redis-cell's command, decided by the core's GCRA:
//
//   CL.THROTTLE key max_burst count period [quantity]
//
// admits `quantity` (default 1) at a rate of `count` per `period` seconds
// with a burst of max_burst + 1, at the server's clock in microseconds. The
// reply is redis-cell's: limited (0/1), limit (max_burst + 1), remaining,
// retry_after and reset_after in whole seconds (retry_after -1 when
// admitted, and when the quantity can never be admitted). Seconds are
// rounded up, where redis-cell truncates (docs/redis.md, "CL.THROTTLE").
// The state is the Lua library's GCRA value ("g", redis/store/value_codec.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "redis_module/engine.hpp"

namespace sluice::redis_module {

/// CL.THROTTLE's arguments after the key.
struct throttle_args {
  std::int64_t max_burst = 0;
  std::int64_t count = 0;
  std::int64_t period = 0;  ///< seconds
  std::int64_t quantity = 1;
};

/// Parses the arguments after the key; an error reply names the bad one.
/// Each is a decimal integer (no sign but '-', no spaces): max_burst >= 0,
/// count >= 1, period >= 1, quantity >= 0, and (max_burst + 1)·period
/// seconds / count below 2^52 µs (what the GCRA value holds).
std::optional<reply> parse_throttle(std::span<const std::string_view> args, throttle_args& out);

/// What one call answers and writes.
struct throttle_result {
  reply answer;
  std::optional<std::string> after;  ///< the value to write (nullopt: nothing)
  std::int64_t px = 0;               ///< its expiry in ms
};

/// Decides `a` on the key's value `before` at `now_us`; an error reply when
/// the key holds a value that is not this throttle's.
throttle_result throttle(const throttle_args& a, const std::optional<std::string>& before, std::int64_t now_us);

}  // namespace sluice::redis_module
