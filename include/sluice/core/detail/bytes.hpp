// Little-endian, fixed-width byte writing and reading: the policy codec's
// (src/core/policy_codec.cpp) and the snapshot's states' (sluice::keyed).
// Shared by the targets, not API: it may change between versions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/core/detail/arith.hpp"

namespace sluice::detail {

/// Appends little-endian integers to a string.
class byte_writer {
 public:
  explicit byte_writer(std::string& out) noexcept : out_(out) {}
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void i64(std::int64_t v) { put(static_cast<std::uint64_t>(v), 8); }
  void i128v(i128 v) {
    const auto u = static_cast<u128>(v);
    put(static_cast<std::uint64_t>(u), 8);
    put(static_cast<std::uint64_t>(u >> 64), 8);
  }
  void bytes(std::string_view s) { out_.append(s); }

 private:
  void put(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFFU));
  }
  std::string& out_;
};

/// Reads little-endian integers from bytes; past the end every read gives 0
/// and `ok()` turns false for good.
class byte_reader {
 public:
  explicit byte_reader(std::string_view in) noexcept : in_(in) {}
  std::uint8_t u8() noexcept { return static_cast<std::uint8_t>(get(1)); }
  std::uint32_t u32() noexcept { return static_cast<std::uint32_t>(get(4)); }
  std::uint64_t u64() noexcept { return get(8); }
  std::int64_t i64() noexcept { return static_cast<std::int64_t>(get(8)); }
  i128 i128v() noexcept {
    const std::uint64_t lo = get(8);
    const std::uint64_t hi = get(8);
    return static_cast<i128>((static_cast<u128>(hi) << 64) | lo);
  }
  std::string_view bytes(std::size_t n) noexcept {
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return {};
    }
    const std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  [[nodiscard]] bool ok() const noexcept { return ok_; }
  [[nodiscard]] std::size_t left() const noexcept { return ok_ ? in_.size() - pos_ : 0; }
  [[nodiscard]] std::size_t pos() const noexcept { return pos_; }

 private:
  std::uint64_t get(std::size_t n) noexcept {
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return 0;
    }
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  std::string_view in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace sluice::detail
