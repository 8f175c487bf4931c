// One leaf's stored value (the Lua library's encoding: its tag, then its
// fields as doubles) read into and written from a core state, given the
// leaf's plan alone (no `plan` around it): what `plan::decode_leaf`,
// `encode_leaf` and `ticks_to_fresh` do, as free functions, so that code
// outside the Redis store — the Redis module (src/redis_module/), which
// links neither hiredis nor Asio — reads and writes the very same values.
// Implemented in values.cpp; it needs only the core.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "redis/store/protocol.hpp"
#include "sluice/core/any.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice::redis {

/// The state of the leaf `lp` from its stored value (nullopt: fresh),
/// checked exactly as the Lua library checks it; an error naming the
/// field when the value is not one this leaf writes (its tag included).
/// `latest` is raised to the instant of the value's latest admit.
[[nodiscard]] result<any_state> decode_value(const leaf_plan& lp, std::optional<std::string_view> value, tick& latest);

/// Appends the stored value of `s` (a state of `lp` after an admit at `at`)
/// to `out`, tag first; false when the library could not hold it (then
/// nothing is appended).
bool encode_value(const leaf_plan& lp, const any_state& s, tick at, std::string& out);

/// How many ticks after the write of `value` (as encode_value writes it)
/// the leaf's state is fresh, as the library computes its TTL; -1: never.
[[nodiscard]] std::int64_t value_ticks_to_fresh(const leaf_plan& lp, std::string_view value);

}  // namespace sluice::redis
