// The names of decision sources (store.hpp).
#include "sluice/core/store.hpp"

namespace sluice {

std::string_view name_of(source s) noexcept {
  switch (s) {
    case source::store:
      return "store";
    case source::deny_cache:
      return "deny-cache";
    case source::replayed:
      return "replayed";
    case source::fallback:
      return "fallback";
    case source::fail_open:
      return "fail-open";
    case source::fail_closed:
      return "fail-closed";
    case source::error:
      return "error";
    case source::id_conflict:
      return "id-conflict";
    case source::rule:
      return "rule";
  }
  return "unknown";
}

}  // namespace sluice
