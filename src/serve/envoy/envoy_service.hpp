// Envoy's rate limit service (envoy.service.ratelimit.v3.RateLimitService/
// ShouldRateLimit) over gRPC, a front end of `sluice serve` beside the HTTP
// endpoints, deciding through the same service, rules and store.
//
// A request's domain and each descriptor's entries are matched to the
// configuration's [[envoy]] rules (envoy_rules.hpp); every matching
// descriptor is one check, and all checks of a request are decided as one
// atomic store request (a denied request charges none) with hits_addend as
// the cost (0 → 1). docs/serve.md, "Envoy", has the whole mapping.
//
// With server.token set, a call without `authorization: Bearer <token>`
// metadata is answered UNAUTHENTICATED before its request is read; the
// listener may speak TLS and verify client certificates (config.hpp,
// tls_files).
//
// This header includes no gRPC header: the server lives behind a pointer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "config.hpp"
#include "service.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice::serve::envoy {

/// A running gRPC server for one service. Thread-safe; its threads are
/// gRPC's own, created with the caller's signal mask.
class grpc_front_end {
 public:
  /// Binds `where` (port 0: any free port) and starts serving `svc`, which
  /// must outlive the front end: over TLS when `tls` is given (verifying
  /// client certificates when it names client CAs), else cleartext. Every
  /// call must carry the configuration's server.token, read at each call
  /// (docs/serve.md, "Token and TLS"). The error names "grpc.listen", or
  /// "grpc.tls_key_file" when gRPC refuses the TLS files.
  static result<std::unique_ptr<grpc_front_end>> start(service& svc, const listen_address& where,
                                                       const std::optional<tls_files>& tls = std::nullopt);

  ~grpc_front_end();
  grpc_front_end(const grpc_front_end&) = delete;
  grpc_front_end& operator=(const grpc_front_end&) = delete;

  /// The address bound (the port the system chose for port 0).
  [[nodiscard]] const listen_address& address() const noexcept;

  /// Stops accepting calls, lets calls in flight finish for at most
  /// `drain` ns, then cancels the rest and returns.
  void shutdown(tick drain);

  struct impl;

 private:
  explicit grpc_front_end(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace sluice::serve::envoy
