// Redis Cluster's key → hash slot mapping (the cluster specification's
// "Keys distribution model"): CRC16 (XMODEM: polynomial 0x1021, initial 0,
// no reflection) of the key's hash tag, modulo 16384. The hash tag is what
// lies between the key's first '{' and the next '}' when that is not empty;
// otherwise the whole key is hashed. Keys with one tag share a slot, so one
// FCALL may name them all.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice::redis {

/// The number of hash slots of a Redis Cluster.
inline constexpr std::uint16_t slot_count = 16384;

/// CRC16/XMODEM of `bytes` (crc16("123456789") = 0x31C3).
std::uint16_t crc16(std::string_view bytes) noexcept;

/// The bytes of `key` that decide its slot: its hash tag when it has a
/// non-empty one, else the whole key.
std::string_view hash_tag(std::string_view key) noexcept;

/// The hash slot of `key`, 0..16383 (as `CLUSTER KEYSLOT` answers).
std::uint16_t key_slot(std::string_view key) noexcept;

/// The slot of a key whose first '{' is written right before `key` and
/// which has a '}' right after it (the store's `<prefix>s:<name>:{<key>}...`
/// when neither prefix nor name holds a brace): the slot of `key` up to its
/// first '}'. nullopt when that part is empty (`key` is empty or starts with
/// '}'): Redis then hashes the whole key it sits in.
std::optional<std::uint16_t> braced_key_slot(std::string_view key) noexcept;

/// A short string without braces whose slot is `slot` (the smallest decimal
/// number that hashes there): `{` + slot_tag(s) + `}` in a key puts it in
/// slot `s`. Built once, on first use (about 2 ms). Requires slot < 16384.
std::string_view slot_tag(std::uint16_t slot);

}  // namespace sluice::redis
