// Carrying a Redis store's states over a redefinition (private to
// sluice::redis; docs/redis.md, "Redefining a policy").
//
// The states live in Redis, written by many processes, so a redefinition
// cannot sweep them. Instead every stored value carries its configuration's
// tag, the store keeps every earlier configuration of a name with the
// instant it took over, and a decision that meets values of an earlier
// configuration carries the check's state over then: decoded with the plan
// that wrote it, then `reconfigure`d through every later configuration,
// each at the instant it was defined — the state the memory store's eager
// sweep would hold (store/memory.hpp), computed when first needed.
//
// The memory store keeps one state per (policy, key), and a sweep that
// leaves it fresh drops it (the key then starts fresh under every later
// configuration). So a check is carried whole, and dropped as a whole: the
// values of one key's leaves share one configuration (an absent leaf is
// fresh in it), which the store keeps true by writing every carried leaf
// of a request it admits (carry.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "redis/store/protocol.hpp"
#include "sluice/core/any.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice::redis {

/// One configuration of a policy name: its plan, and the instant it took
/// over (its `define_at`; the first configuration's is never read).
struct epoch {
  std::shared_ptr<const plan> p;
  tick since = 0;
};

/// How a check's stored values were read.
enum class read_outcome : std::uint8_t {
  current,  ///< absent, or written for the current configuration
  carried,  ///< written for an earlier one, carried over
  unknown,  ///< a value of this library with a tag no configuration here has
  corrupt,  ///< not a value of this library, or one that fails its checks
};

/// The state of a check under the last epoch of `epochs` (oldest first, the
/// current configuration last) from the values stored at its leaves' keys
/// (`values[j]` for leaf j of that configuration; nullopt: absent).
/// `latest` is raised to the instant of the latest admit a value holds.
/// `stale[j]` (when not empty) is set for each leaf whose value was written
/// for an earlier configuration. Never returns a state for an `unknown` or
/// `corrupt` value.
std::optional<any_state> read_check(std::span<const epoch> epochs,
                                    std::span<const std::optional<std::string_view>> values, tick& latest,
                                    read_outcome& how, std::span<bool> stale = {});

/// A check's state read for a write back (a refund, a release): read_check
/// over its current configuration's leaves, whose values are
/// `values[at .. at + leaves)`, with the latest admit they hold, how they
/// were read and which of them were written for an earlier configuration.
struct check_read {
  std::optional<any_state> state;
  tick latest = detail::i64_min;
  read_outcome how = read_outcome::current;
  std::unique_ptr<bool[]> stale;
};
check_read read_check_at(std::span<const epoch> epochs, std::span<const std::optional<std::string_view>> values,
                         std::size_t at);

}  // namespace sluice::redis
