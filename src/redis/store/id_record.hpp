// A request id's record in Redis (private to sluice::redis; docs/redis.md,
// "Request ids"): written by main.lua, or by carry.cpp for a request the
// client decided; read back by a repeat (carry.cpp, replay) and by a refund
// (refund.cpp). One format, read in one place.
//
// The record: its identity as an item, then "th tl admitted" (the decision's
// instant as two limbs, protocol.hpp split_limbs; admitted 0 or 1), then per
// leaf '|', its tag and two items, the value before and the value written.
// A check decided under an override has "|V" and the override's bytes as an
// item before its first leaf. An item is '-' for none, else the length,
// ':' and the bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/core/time.hpp"

namespace sluice::redis {

/// Appends an item: '-' for none, else length ':' bytes.
void put_item(std::string& out, std::optional<std::string_view> v);

/// Reads the item at `pos` of `rec` and moves past it; false when malformed.
[[nodiscard]] bool read_item(std::string_view rec, std::size_t& pos, std::optional<std::string_view>& v);

/// A record after its identity, read (views into the record's bytes).
struct id_record {
  tick at = 0;            ///< the instant the id's request was decided at
  bool admitted = false;  ///< whether it was admitted
  std::vector<std::string_view> tags;
  std::vector<std::optional<std::string_view>> before;  ///< per leaf, the value it read
  std::vector<std::optional<std::string_view>> after;   ///< per leaf, the value it wrote
  /// The overrides that decided: (index of the check's first leaf, bytes).
  std::vector<std::pair<std::size_t, std::string_view>> marks;
};

/// Reads `rec`, the record after its identity item; nullopt when malformed
/// (also a record without a leaf, and an override not followed by its
/// check's leaves: no writer writes either).
[[nodiscard]] std::optional<id_record> read_id_record(std::string_view rec);

}  // namespace sluice::redis
