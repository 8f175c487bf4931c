// tls_certs: openssl req/x509 runs into a temporary directory (tls_certs.hpp).
#include "support/tls_certs.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "support/redis_server.hpp"

namespace sluice::testing {
namespace {

void run(const std::string& dir, const std::string& cmd) {
  const std::string full = "cd '" + dir + "' && " + cmd + " >>openssl.log 2>&1";
  if (std::system(full.c_str()) != 0) {
    std::ifstream log(dir + "/openssl.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    throw std::runtime_error("tls_certs: `" + cmd + "` failed: " + text);
  }
}

}  // namespace

tls_certs::tls_certs() {
  if (find_in_path("openssl").empty())
    throw std::runtime_error("tls_certs: openssl is not in PATH (Debian package openssl)");
  char tmpl[] = "/tmp/sluice-tls-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error(std::string("tls_certs: mkdtemp: ") + std::strerror(errno));
  dir_ = tmpl;
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  try {
    for (const char* ca : {"ca", "other"})
      run(dir_, "openssl req -x509 " + key + " -keyout " + ca + ".key -out " + ca + ".crt -days 2 -subj /CN=sluice-" +
                    ca + "-ca");
    {
      std::ofstream ext(dir_ + "/server.ext");
      ext << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
      std::ofstream cext(dir_ + "/client.ext");
      cext << "extendedKeyUsage=clientAuth\n";
    }
    for (const char* who : {"server", "client"})
      run(dir_, "openssl req " + key + " -keyout " + who + ".key -out " + who + ".csr -subj /CN=sluice-" + who +
                    " && openssl x509 -req -in " + who + ".csr -CA ca.crt -CAkey ca.key -CAcreateserial -out " + who +
                    ".crt -days 2 -extfile " + who + ".ext");
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
}

tls_certs::~tls_certs() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace sluice::testing
