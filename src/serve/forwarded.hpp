// The client's address behind proxies (docs/serve.md, "The client behind
// proxies"): key part `client` is the peer, or, from a trusted proxy, the
// address the proxies wrote in `server.forwarded_header` — X-Forwarded-For
// and RFC 7239 Forwarded read as lists from the right (every line joined,
// trusted proxies skipped), any other header (X-Real-IP) as one address.
// An entry read that is no IP address is invalid, never another address.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::serve {

struct header_view;

/// An IP address by its bytes, so that two spellings of one address compare
/// equal (`2001:DB8::1`, `2001:db8:0::1`).
struct ip_address {
  bool v6 = false;
  std::array<unsigned char, 16> bytes{};  ///< the first 4 for IPv4
  friend bool operator==(const ip_address&, const ip_address&) = default;
};

/// An IPv4 address (four decimal numbers) or an IPv6 one (RFC 4291 text, no
/// brackets, no zone), as inet_pton reads them; nullopt for anything else.
std::optional<ip_address> parse_ip(std::string_view text);

/// The canonical text of an address (inet_ntop).
std::string ip_text(const ip_address& a);

/// Reads the client's address from a request's headers, as one
/// configuration says (server.trusted_proxies, server.forwarded_header).
/// Immutable once built: any number of threads may call `client` at once.
class forwarded_reader {
 public:
  /// `trusted` must be IP addresses (parse_config checks them); `header`
  /// empty: the peer is always the client.
  forwarded_reader(const std::vector<std::string>& trusted, std::string header);

  /// Writes the client's address to `out` (the peer's text as given when
  /// the peer is the client). Returns why the request is invalid instead
  /// (a single-value header given twice, an entry read that is no IP
  /// address, `unknown` or an obfuscated `Forwarded` node, ...), naming
  /// the header; `out` is then unspecified.
  std::optional<std::string> client(std::span<const header_view> headers, std::string_view peer,
                                    std::string& out) const;

 private:
  enum class kind : unsigned char { single, x_forwarded_for, forwarded };
  [[nodiscard]] bool trusted(const ip_address& a) const noexcept;

  std::vector<ip_address> trusted_;
  std::string header_;
  kind kind_ = kind::single;
};

}  // namespace sluice::serve
