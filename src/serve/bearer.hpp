// The bearer token both front ends require when server.token is set: the
// HTTP endpoints read it from `Authorization`, the gRPC listener from its
// `authorization` metadata; one comparison decides for both.
#pragma once

#include <string_view>

namespace sluice::serve {

/// Whether `authorization` (a header's or a metadata entry's whole value)
/// is "Bearer <token>", the scheme in any case. True for an empty `token`
/// (none required). The token is compared in constant time in its length:
/// no early exit at the first byte that differs.
bool bearer_ok(std::string_view token, std::string_view authorization) noexcept;

}  // namespace sluice::serve
