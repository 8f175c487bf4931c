// TLS for the asynchronous client (rediss://): an OpenSSL context made from
// a URL's tls_settings, set up per connection (SNI, the name verified), and
// handshake failures told by their cause. Private to sluice::redis.
//
// Verification is on unless the URL says `verify=no`: the chain against
// `ca_file` (or the system's CAs), and the name (`server_name`, else the
// host; an IP address is matched against the certificate's IP SANs).
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <memory>
#include <string>

#include "redis/client/client.hpp"
#include "sluice/core/result.hpp"

namespace sluice::redis {

/// An OpenSSL client context with its settings; shared by every connection
/// made with it.
class tls_context {
 public:
  /// Loads the CAs (`ca_file`, or the system's) and the client certificate
  /// and key; errors name the setting ("ca_file", "cert_file", "key_file")
  /// and OpenSSL's reason, never a password.
  static result<std::shared_ptr<tls_context>> make(const tls_settings& settings);

  boost::asio::ssl::context& native() noexcept { return ctx_; }
  [[nodiscard]] const tls_settings& settings() const noexcept { return settings_; }

  /// Sets SNI and the name to verify on a new connection's SSL object, for a
  /// server at `host` (used when `server_name` is empty). False when OpenSSL
  /// refuses the name.
  bool prepare(SSL* ssl, const std::string& host) const;

  /// Why a handshake (or the first exchange after it) failed: an untrusted
  /// certificate, a name mismatch, a plaintext server, a refused client
  /// certificate, else OpenSSL's words.
  [[nodiscard]] std::string explain(SSL* ssl, const boost::system::error_code& ec, const std::string& host) const;

 private:
  explicit tls_context(const tls_settings& s);
  [[nodiscard]] std::string name_for(const std::string& host) const {
    return settings_.server_name.empty() ? host : settings_.server_name;
  }
  boost::asio::ssl::context ctx_;
  tls_settings settings_;
};

}  // namespace sluice::redis
