// The snapshot format's states in bytes (private to sluice::keyed), on the
// core's little-endian byte writer and reader (sluice/core/detail/bytes.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/any.hpp"
#include "sluice/core/detail/bytes.hpp"
#include "sluice/core/result.hpp"

namespace sluice::codec {

/// Appends little-endian integers to a string.
using writer = detail::byte_writer;
/// Reads little-endian integers from bytes; past the end every read gives 0
/// and `ok()` turns false for good.
using reader = detail::byte_reader;

/// Writes one state (kind byte and fields) of `p`, times relative to `moment`.
void encode_state_to(writer& w, const any_policy& p, const any_state& s, tick moment);
/// Reads one state of `p`, times placed relative to `moment`; checks ranges.
result<any_state> decode_state_from(reader& r, const any_policy& p, tick moment);

}  // namespace sluice::codec
