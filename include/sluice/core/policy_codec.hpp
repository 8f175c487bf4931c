// A policy's canonical bytes, read back, and in words (and CRC-32C, the
// checksum of such bytes): what tells two
// policies apart (equal bytes, equal policies), so that a store can see
// whether a redefinition changed anything, a snapshot which policy it was
// saved for, and a Redis store's keys which policy their states are of.
//
// The bytes are the snapshot format's (docs/snapshot-format.md, "Policy"):
// a tag per algorithm, every parameter as a little-endian int64 in the
// order of the algorithm's description (portable.hpp), a composite's parts
// recursively. They are the same on every machine and every version that
// reads the format.
//
// Thread safety: every function is pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/any.hpp"
#include "sluice/core/result.hpp"

namespace sluice {

/// The canonical bytes of a policy (the algorithm and every parameter,
/// composites recursively): equal bytes, equal policies.
std::string encode_policy(const any_policy& p);

/// A policy from `encode_policy`'s bytes; the error says what is wrong.
result<any_policy> decode_policy(std::string_view bytes);

/// A policy in words for messages: "gcra(limit=10, window=1000000000,
/// burst=10)", "all(...)".
std::string describe_policy(const any_policy& p);

/// CRC-32C (Castagnoli, reflected, as iSCSI and ext4 use) of `n` bytes,
/// continuing from `crc` (0 to start): the snapshot's checksum, and a
/// Redis store's tag of a policy's bytes.
std::uint32_t crc32c(const void* data, std::size_t n, std::uint32_t crc = 0) noexcept;

}  // namespace sluice
