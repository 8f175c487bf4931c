#include "sluice/core/override.hpp"

#include <string>

#include "sluice/core/fresh.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/reconfigure.hpp"

namespace sluice {

result<bool> check_override(const any_policy& configured, const any_policy& limit) {
  const auto there = reconfigure(configured, fresh_state(configured), limit, 0);
  const auto back = reconfigure(limit, fresh_state(limit), configured, 0);
  if (!there || !back) {
    const error& e = !there ? there.err() : back.err();
    return error{"policy", "an override must be able to continue the configured policy's states (" +
                               format_policy(configured) + "): " + e.message};
  }
  return true;
}

}  // namespace sluice
