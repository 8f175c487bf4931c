// Lease ids (lease_token.hpp).
#include "lease_token.hpp"

#include <array>

#include "config.hpp"
#include "sluice/core/store.hpp"

namespace sluice::serve {
namespace {

constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void put_base64url(std::string& out, std::string_view in) {
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16 | static_cast<unsigned char>(in[i + 1]) << 8 |
                       static_cast<unsigned char>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += alphabet[(v >> s) & 63];
  }
  const std::size_t left = in.size() - i;
  if (left == 1) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
  } else if (left == 2) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16 | static_cast<unsigned char>(in[i + 1]) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
  }
}

int value_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

/// base64url without padding, canonical (the unused low bits 0), or nullopt.
std::optional<std::string> get_base64url(std::string_view in) {
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (char c : in) {
    const int v = value_of(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if ((acc & ((1U << bits) - 1)) != 0) return std::nullopt;  // not the canonical spelling
  return out;
}

}  // namespace

std::string format_lease(const lease_token& t) {
  std::string out = "l1.";
  constexpr std::string_view hex = "0123456789abcdef";
  for (int s = 60; s >= 0; s -= 4) out += hex[(t.nonce >> s) & 15];
  for (const auto& [name, key] : t.checks) {
    out += '.';
    put_base64url(out, name);
    out += '.';
    put_base64url(out, key);
  }
  return out;
}

std::size_t longest_lease(std::size_t checks, std::size_t key_bytes) noexcept {
  const auto base64url = [](std::size_t n) { return (n * 4 + 2) / 3; };  // no padding
  return 3 + 16 + checks * (1 + base64url(longest_policy_name) + 1 + base64url(key_bytes));
}

std::size_t longest_release_body(std::size_t key_bytes) noexcept {
  constexpr std::size_t around = std::string_view(R"({"lease":""})").size() + 1024;  // the JSON, whitespace
  return longest_lease(max_checks, key_bytes) + around;
}

std::optional<lease_token> parse_lease(std::string_view text, std::size_t most) {
  if (text.size() > longest_lease(most, longest_key_bytes) || text.substr(0, 3) != "l1.") return std::nullopt;
  text.remove_prefix(3);
  std::vector<std::string_view> parts;
  for (;;) {
    const std::size_t dot = text.find('.');
    parts.push_back(text.substr(0, dot));
    if (dot == std::string_view::npos) break;
    text.remove_prefix(dot + 1);
  }
  if (parts.size() < 3 || parts.size() % 2 == 0 || (parts.size() - 1) / 2 > most) return std::nullopt;
  lease_token t;
  if (parts[0].size() != 16) return std::nullopt;
  for (char c : parts[0]) {
    int v = -1;
    if (c >= '0' && c <= '9') v = c - '0';
    if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    if (v < 0) return std::nullopt;
    t.nonce = (t.nonce << 4) | static_cast<unsigned>(v);
  }
  if (t.nonce == 0) return std::nullopt;
  for (std::size_t i = 1; i + 1 < parts.size(); i += 2) {
    auto name = get_base64url(parts[i]);
    auto key = get_base64url(parts[i + 1]);
    if (!name || !key || name->empty()) return std::nullopt;
    t.checks.emplace_back(std::move(*name), std::move(*key));
  }
  return t;
}

}  // namespace sluice::serve
