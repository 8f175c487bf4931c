// envoyproxy/ratelimit's `quota_mode` on the one decision path (decide.hpp),
// exact and atomic (docs/serve.md, "envoyproxy/ratelimit files"): a call
// is denied by its quota checks only when every one of them is over its
// limit. Its checks go as one atomic store request; when that is denied
// only by quota checks and some quota check has room, the call is decided
// again without the quota checks over their limit, until a round is
// admitted or nothing is left to leave out. So an admitted call charges its
// other checks and the quota checks with room, never one over its limit,
// and a denied call charges nothing. At most one round more than there are
// quota checks; every round decides at the call's one instant.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "decide.hpp"

namespace sluice::serve {

/// Decides one round: `checks` as decide_checks does, `then` called once.
using round_decider = std::function<void(std::vector<planned_check> checks, checks_decided then)>;

/// Decides `checks`, of which those with `quota[j]` set (never a shadow
/// one) are quota checks, in rounds through `decide`. `quota_passes`: a
/// quota descriptor of the call always passes (a shadow one), so the quota
/// checks never deny the call. `then` gets `checks` and one outcome for
/// them all: the deciding round's, with the quota checks it left out added
/// (their decision from the round that found them over their limit, never
/// charged) and the shadow checks' decisions from the first round (the only
/// one that decides them).
void decide_with_quotas(std::vector<planned_check> checks, std::vector<bool> quota, bool quota_passes,
                        round_decider decide, checks_decided then);

}  // namespace sluice::serve
