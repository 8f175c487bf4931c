// tls_context: OpenSSL through asio::ssl for rediss:// (tls.hpp).
#include "redis/client/tls.hpp"

#include <cstring>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>

#include "redis/client/figures.hpp"

namespace sluice::redis {
namespace {

namespace ssl = boost::asio::ssl;

// OpenSSL's reasons for the errors in its queue, which is emptied: each
// one's text ("No such file or directory" for a system error, "no
// certificate or crl found", ...), never a bare number.
std::string openssl_reason() {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    std::string one;
    if (ERR_SYSTEM_ERROR(code)) {
      one = std::strerror(static_cast<int>(ERR_GET_REASON(code)));
    } else if (const char* r = ERR_reason_error_string(code)) {
      one = r;
    } else {
      char buf[256];
      ERR_error_string_n(code, buf, sizeof buf);
      one = buf;
    }
    if (out.find(one) == std::string::npos) out += (out.empty() ? "" : "; ") + one;
  }
  return out.empty() ? "no reason given" : out;
}

bool is_ip(const std::string& name) {
  boost::system::error_code ec;
  (void)boost::asio::ip::make_address(name, ec);
  return !ec;
}

}  // namespace

tls_context::tls_context(const tls_settings& s) : ctx_(ssl::context::tls_client), settings_(s) {}

result<std::shared_ptr<tls_context>> tls_context::make(const tls_settings& settings) {
  std::shared_ptr<tls_context> t(new tls_context(settings));
  SSL_CTX* c = t->ctx_.native_handle();
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  ERR_clear_error();
  if (settings.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(c) != 1)
      return error{"ca_file", "the system's CAs could not be loaded: " + openssl_reason()};
  } else if (SSL_CTX_load_verify_locations(c, settings.ca_file.c_str(), nullptr) != 1) {
    return error{"ca_file", "cannot load CA certificates from \"" + settings.ca_file + "\": " + openssl_reason()};
  }
  if (!settings.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(c, settings.cert_file.c_str()) != 1)
      return error{"cert_file", "cannot load a certificate from \"" + settings.cert_file + "\": " + openssl_reason()};
    if (SSL_CTX_use_PrivateKey_file(c, settings.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
      return error{"key_file", "cannot load a private key from \"" + settings.key_file + "\": " + openssl_reason()};
    if (SSL_CTX_check_private_key(c) != 1)
      return error{"key_file", "\"" + settings.key_file + "\" is not the key of the certificate in \"" +
                                   settings.cert_file + "\": " + openssl_reason()};
  }
  SSL_CTX_set_verify(c, settings.verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  return t;
}

bool tls_context::prepare(SSL* ssl, const std::string& host) const {
  const std::string name = name_for(host);
  if (!is_ip(name)) {
    // SNI carries a DNS name only (RFC 6066).
    if (SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) return false;
    if (settings_.verify && SSL_set1_host(ssl, name.c_str()) != 1) return false;
  } else if (settings_.verify && X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) != 1) {
    return false;
  }
  return true;
}

std::string tls_context::explain(SSL* ssl, const boost::system::error_code& ec, const std::string& host) const {
  const std::string name = name_for(host);
  const long v = ssl != nullptr ? SSL_get_verify_result(ssl) : X509_V_OK;
  if (settings_.verify && v != X509_V_OK) {
    const std::string why = X509_verify_cert_error_string(v);
    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
      return std::string(tls_words::name_mismatch) + " \"" + name + "\" (" + why +
             "; server_name=... names the one it was issued to)";
    if (v == X509_V_ERR_CERT_HAS_EXPIRED || v == X509_V_ERR_CERT_NOT_YET_VALID)
      return std::string(tls_words::expired) + " (" + why + ")";
    return std::string(tls_words::untrusted) + " (" + why + "; ca_file=... names the CA that issued it)";
  }
  if (ec == ssl::error::stream_truncated || ec == boost::asio::error::eof)
    return std::string(tls_words::handshake) + "the server closed the connection during the handshake";
  if (ec.category() == boost::asio::error::get_ssl_category()) {
    const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
    switch (reason) {
      case SSL_R_WRONG_VERSION_NUMBER:
      case SSL_R_PACKET_LENGTH_TOO_LONG:
      case SSL_R_UNKNOWN_PROTOCOL:
      case SSL_R_RECORD_LENGTH_MISMATCH:
        return std::string(tls_words::plaintext_peer) + " (" + ec.message() + ")";
      case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
      case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
      case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
      case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
        return std::string(tls_words::no_client_certificate) + " (cert_file=..., key_file=...): " + ec.message();
      default:
        break;
    }
  }
  return std::string(tls_words::handshake) + ec.message();
}

}  // namespace sluice::redis
