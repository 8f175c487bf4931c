// The policy codec (policy_codec.hpp): a policy's canonical bytes, read
// back, and in words; CRC-32C. Little-endian, fixed width; the tags and the order of
// the parameters are docs/snapshot-format.md's.
#include "sluice/core/policy_codec.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sluice/core/detail/bytes.hpp"
#include "sluice/core/portable.hpp"

namespace sluice {

namespace {

using byte_writer = detail::byte_writer;
using byte_reader = detail::byte_reader;

// The policy's tag on disk: an algorithm's is in its description
// (portable.hpp), the composites' are these (they came before concurrency's
// 12, which was added after them; so a file written before it reads the
// same).
constexpr std::uint8_t all_of_tag = 10;
constexpr std::uint8_t any_of_tag = 11;

template <typename P>
constexpr std::uint8_t tag_of_alternative() noexcept {
  if constexpr (std::is_same_v<P, all_of>) {
    return all_of_tag;
  } else if constexpr (std::is_same_v<P, any_of>) {
    return any_of_tag;
  } else {
    return portable::of<P>::tag;
  }
}

/// Every alternative's tag, by its index in any_policy.
template <std::size_t... I>
constexpr std::array<std::uint8_t, sizeof...(I)> tags_of(std::index_sequence<I...>) noexcept {
  return {tag_of_alternative<std::variant_alternative_t<I, any_policy>>()...};
}
constexpr auto tags = tags_of(std::make_index_sequence<std::variant_size_v<any_policy>>{});

constexpr bool tags_distinct() noexcept {
  for (std::size_t i = 0; i < tags.size(); ++i)
    for (std::size_t j = i + 1; j < tags.size(); ++j)
      if (tags[i] == tags[j]) return false;
  return true;
}
static_assert(tags_distinct(), "two algorithms' descriptions declare the same tag on disk (portable::of<P>::tag)");

std::uint8_t tag_of(std::size_t index) noexcept { return tags[index]; }
/// The index in any_policy of the tag's alternative; none: not a tag.
std::optional<std::size_t> index_of_tag(std::uint8_t tag) noexcept {
  for (std::size_t i = 0; i < tags.size(); ++i)
    if (tags[i] == tag) return i;
  return std::nullopt;
}

void put_policy(byte_writer& w, const any_policy& p) {
  w.u8(tag_of(p.index()));
  std::visit(
      [&](const auto& pol) {
        using P = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          w.u32(static_cast<std::uint32_t>(pol.parts().size()));
          for (const auto& part : pol.parts()) put_policy(w, part);
        } else {
          for (const auto& param : portable::of<P>::params) w.i64(param.get(pol));
        }
      },
      p);
}

template <typename T>
result<any_policy> widen(result<T> r) {
  if (!r) return r.err();
  return any_policy{std::move(r).value()};
}

/// The policy of alternative I from its parameters, in the description's
/// order (portable.hpp).
template <std::size_t I>
result<any_policy> get_params(byte_reader& r) {
  using P = std::variant_alternative_t<I, any_policy>;
  std::array<std::int64_t, portable::of<P>::params.size()> v{};
  for (auto& x : v) x = r.i64();
  if (!r.ok()) return error{"policy", "ends early"};
  return widen(portable::of<P>::make(v));
}

// The composites come last: every alternative before them is an algorithm
// with a description.
static_assert(static_cast<std::size_t>(algorithm::all_of) + 2 == std::variant_size_v<any_policy> &&
              static_cast<std::size_t>(algorithm::any_of) + 1 == std::variant_size_v<any_policy>);

/// The policy of alternative `index` (an algorithm, not a composite).
template <std::size_t... I>
result<any_policy> get_params_of(std::size_t index, byte_reader& r, std::index_sequence<I...>) {
  using get = result<any_policy> (*)(byte_reader&);
  static constexpr get table[] = {&get_params<I>...};
  return table[index](r);
}

result<any_policy> get_policy(byte_reader& r, int depth) {
  if (depth > 64) return error{"policy", "nested too deeply"};
  const std::uint8_t tag = r.u8();
  if (!r.ok()) return error{"policy", "ends early"};
  // Bytes from a file: a tag of no algorithm is checked here.
  const auto index = index_of_tag(tag);
  if (!index) return error{"policy", "unknown algorithm " + std::to_string(tag)};
  const auto a = static_cast<algorithm>(*index);
  if (a == algorithm::all_of || a == algorithm::any_of) {
    const std::uint32_t n = r.u32();
    if (!r.ok() || n == 0 || n > r.left()) return error{"policy", "bad number of parts"};
    std::vector<any_policy> parts;
    parts.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      auto part = get_policy(r, depth + 1);
      if (!part) return part.err();
      parts.push_back(std::move(part).value());
    }
    return a == algorithm::all_of ? widen(all_of::make(std::move(parts))) : widen(any_of::make(std::move(parts)));
  }
  return get_params_of(static_cast<std::size_t>(a), r,
                       std::make_index_sequence<static_cast<std::size_t>(algorithm::all_of)>{});
}

constexpr std::array<std::uint32_t, 256> crc_table = [] {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1U) != 0 ? (c >> 1) ^ 0x82F63B78U : c >> 1;
    t[i] = c;
  }
  return t;
}();

}  // namespace

std::string encode_policy(const any_policy& p) {
  std::string out;
  byte_writer w(out);
  put_policy(w, p);
  return out;
}

result<any_policy> decode_policy(std::string_view bytes) {
  byte_reader r(bytes);
  auto p = get_policy(r, 0);
  if (p && r.left() != 0) return error{"policy", "has trailing bytes"};
  return p;
}

std::string describe_policy(const any_policy& p) {
  return std::visit(
      [](const auto& pol) -> std::string {
        using P = std::decay_t<decltype(pol)>;
        std::string out(name_of(algorithm_of(any_policy{pol})));
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          out += "(";
          for (std::size_t i = 0; i < pol.parts().size(); ++i) out += (i ? ", " : "") + describe_policy(pol.parts()[i]);
          return out + ")";
        } else {
          const auto& params = portable::of<P>::params;
          for (std::size_t i = 0; i < params.size(); ++i)
            out += (i ? ", " : "(") + std::string(params[i].name) + "=" + std::to_string(params[i].get(pol));
          return params.empty() ? out : out + ")";
        }
      },
      p);
}

std::uint32_t crc32c(const void* data, std::size_t n, std::uint32_t crc) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i) crc = crc_table[(crc ^ p[i]) & 0xFFU] ^ (crc >> 8);
  return ~crc;
}

}  // namespace sluice
