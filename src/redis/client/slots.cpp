// slots: CRC16/XMODEM by a 256-entry table, the hash-tag rule, and a table
// of one short tag per slot.
#include "redis/client/slots.hpp"

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::redis {
namespace {

constexpr std::array<std::uint16_t, 256> make_table() {
  std::array<std::uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    unsigned crc = i << 8;
    for (int b = 0; b < 8; ++b) crc = (crc & 0x8000U) != 0 ? (crc << 1) ^ 0x1021U : crc << 1;
    t[i] = static_cast<std::uint16_t>(crc & 0xFFFFU);
  }
  return t;
}

constexpr auto crc_table = make_table();

}  // namespace

std::uint16_t crc16(std::string_view bytes) noexcept {
  unsigned crc = 0;
  for (const char c : bytes) {
    const unsigned index = ((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xFFU;
    crc = ((crc << 8) ^ crc_table[index]) & 0xFFFFU;
  }
  return static_cast<std::uint16_t>(crc);
}

std::string_view hash_tag(std::string_view key) noexcept {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t key_slot(std::string_view key) noexcept {
  return static_cast<std::uint16_t>(crc16(hash_tag(key)) & (slot_count - 1));
}

std::optional<std::uint16_t> braced_key_slot(std::string_view key) noexcept {
  const std::string_view tag = key.substr(0, key.find('}'));
  if (tag.empty()) return std::nullopt;
  return static_cast<std::uint16_t>(crc16(tag) & (slot_count - 1));
}

std::string_view slot_tag(std::uint16_t slot) {
  static std::once_flag once;
  static std::unique_ptr<std::vector<std::string>> tags;
  std::call_once(once, [] {
    auto t = std::make_unique<std::vector<std::string>>(slot_count);
    std::size_t filled = 0;
    // Coupon collecting: about 16384·ln(16384) ≈ 160,000 numbers fill every
    // slot; the bound is far above that (the loop ends as soon as all are).
    for (std::uint32_t n = 0; filled < slot_count && n < 10'000'000; ++n) {
      std::string s = std::to_string(n);
      std::string& at = (*t)[crc16(s) & (slot_count - 1)];
      if (!at.empty()) continue;
      at = std::move(s);
      ++filled;
    }
    tags = std::move(t);
  });
  return (*tags)[slot & (slot_count - 1)];
}

}  // namespace sluice::redis
