// A ShouldRateLimit response's dynamic_metadata as envoyproxy/ratelimit
// builds it (its RESPONSE_DYNAMIC_METADATA; docs/serve.md, `metadata`):
// the request's domain, descriptors and hits_addend, and the `metadata` of
// the rules whose descriptors were answered OK, merged in order.
#pragma once

#include <google/protobuf/struct.pb.h>

#include <nlohmann/json_fwd.hpp>
#include <span>

#include "envoy/service/ratelimit/v3/rls.pb.h"

namespace sluice::serve::envoy {

/// Writes `out` for `req`; `passed` holds, in descriptor order, the
/// metadata (JSON objects) of the rules of the descriptors answered OK.
/// Merged as that service merges them: a key's first value stays, and two
/// objects under one key merge key by key.
void write_dynamic_metadata(const ::envoy::service::ratelimit::v3::RateLimitRequest& req,
                            std::span<const nlohmann::json* const> passed, google::protobuf::Struct& out);

}  // namespace sluice::serve::envoy
