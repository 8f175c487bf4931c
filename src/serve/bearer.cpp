// The bearer token's comparison (bearer.hpp).
#include "bearer.hpp"

#include <cstddef>

#include "rules.hpp"

namespace sluice::serve {

bool bearer_ok(std::string_view token, std::string_view authorization) noexcept {
  if (token.empty()) return true;
  constexpr std::string_view scheme = "Bearer ";
  if (authorization.size() < scheme.size() || !iequals(authorization.substr(0, scheme.size()), scheme)) return false;
  authorization.remove_prefix(scheme.size());
  // Constant time in the token's length: no early exit on the first mismatch.
  unsigned diff = authorization.size() == token.size() ? 0u : 1u;
  for (std::size_t i = 0; i < token.size(); ++i)
    diff |= static_cast<unsigned>(static_cast<unsigned char>(token[i]) ^
                                  static_cast<unsigned char>(i < authorization.size() ? authorization[i] : 0));
  return diff == 0;
}

}  // namespace sluice::serve
