// Certificates for TLS tests, made at test time by the `openssl` command in
// a temporary directory (removed by the destructor): a CA, a server
// certificate it signed for 127.0.0.1 and localhost, a client certificate
// it signed, and a second, unrelated CA. If openssl is missing the
// constructor throws: the test fails, it never skips.
#pragma once

#include <string>

namespace sluice::testing {

class tls_certs {
 public:
  tls_certs();
  ~tls_certs();
  tls_certs(const tls_certs&) = delete;
  tls_certs& operator=(const tls_certs&) = delete;

  [[nodiscard]] std::string ca() const { return dir_ + "/ca.crt"; }
  [[nodiscard]] std::string server_cert() const { return dir_ + "/server.crt"; }
  [[nodiscard]] std::string server_key() const { return dir_ + "/server.key"; }
  [[nodiscard]] std::string client_cert() const { return dir_ + "/client.crt"; }
  [[nodiscard]] std::string client_key() const { return dir_ + "/client.key"; }
  /// A CA that signed none of the above.
  [[nodiscard]] std::string other_ca() const { return dir_ + "/other.crt"; }
  [[nodiscard]] const std::string& dir() const noexcept { return dir_; }

 private:
  std::string dir_;
};

}  // namespace sluice::testing
