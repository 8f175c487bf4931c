// POST /v1/release (docs/serve.md, "Leases"): the body read, the lease id
// checked, the service's release made and answered. Free of the service's
// configuration: the caller resolves policy names.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "metrics.hpp"
#include "service.hpp"
#include "sluice/core/store.hpp"

namespace sluice::serve {

/// A release's answer: its status and JSON body.
struct release_answer {
  unsigned status = 200;
  std::string body;
};

/// Releases the lease the body `{"lease": "..."}` names at `now`: 200 with
/// the units freed per check; 400 naming `body` or `lease` (not JSON, an
/// unknown field, not a lease id); 404 naming `lease` when no check holds
/// it (never issued, released, expired, or a policy this configuration does
/// not define); 503 naming `store` when the store cannot release
/// (service::release). `id_of` maps a policy name to its store id. Counts
/// into `m`.
release_answer release_lease(service& svc, metrics& m, std::string_view body,
                             const std::function<std::optional<policy_id>(std::string_view)>& id_of, tick now);

}  // namespace sluice::serve
