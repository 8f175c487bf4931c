// Choosing an algorithm at run time: a policy and a state that can be any of
// sluice's limiters, one `decide` over them, and a plain description
// (`spec`) that the command line and the stores build policies from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "sluice/decision.hpp"
#include "sluice/fixed_window.hpp"
#include "sluice/gcra.hpp"
#include "sluice/leaky_queue.hpp"
#include "sluice/quota.hpp"
#include "sluice/rate.hpp"
#include "sluice/result.hpp"
#include "sluice/sliding_buckets.hpp"
#include "sluice/sliding_counter.hpp"
#include "sluice/sliding_log.hpp"
#include "sluice/token_bucket.hpp"

namespace sluice {

/// Every algorithm sluice implements.
enum class algorithm {
  fixed_window,
  sliding_log,
  sliding_counter,
  sliding_buckets,
  token_bucket,
  gcra,
  leaky_queue,
  quota,
  always_allow,
  always_deny,
};

/// The command-line name of an algorithm: "fixed-window", "token-bucket", ...
std::string_view name_of(algorithm a) noexcept;
/// The algorithm with that command-line name, if any.
std::optional<algorithm> algorithm_named(std::string_view name) noexcept;
/// All names, comma-separated, for help and error messages.
std::string algorithm_names();

/// A policy of any algorithm. The alternatives' order matches `algorithm`.
using any_policy = std::variant<fixed_window, sliding_log, sliding_counter, sliding_buckets, token_bucket, gcra,
                                leaky_queue, quota, always_allow, always_deny>;
/// A state of any algorithm; holds the alternative matching its policy.
using any_state =
    std::variant<fixed_window::state, sliding_log::state, sliding_counter::state, sliding_buckets::state,
                 token_bucket::state, gcra::state, leaky_queue::state, quota::state, always_allow::state,
                 always_deny::state>;

/// Which algorithm a policy is.
inline algorithm algorithm_of(const any_policy& p) noexcept { return static_cast<algorithm>(p.index()); }

/// The fresh state for `p` (a full bucket, an empty log, ...).
any_state fresh_state(const any_policy& p);

/// Decides one request with whichever algorithm `p` holds. Requires `s` to
/// hold the state type of `p` (as `fresh_state(p)` made it).
inline decision decide(const any_policy& p, any_state& s, tick now, std::int64_t cost) noexcept {
  return std::visit(
      [&](const auto& pol) -> decision {
        using policy_t = std::decay_t<decltype(pol)>;
        return decide(pol, *std::get_if<typename policy_t::state>(&s), now, cost);
      },
      p);
}

/// A description of a policy as a person gives it; `make_policy` validates it.
struct spec {
  algorithm algo = algorithm::token_bucket;
  rate limit{};                       ///< L per W (unused by quota, always-*)
  std::optional<std::int64_t> burst;  ///< token bucket, GCRA: S (default L)
  std::optional<std::int64_t> buckets;  ///< sliding buckets: N (required)
  std::optional<std::int64_t> queue;  ///< leaky queue: Q (default L)
  std::optional<std::int64_t> units;  ///< quota: N (required)
  tick origin = 0;                    ///< fixed window: where windows start
};

/// Builds and validates the policy a spec describes; the error names the
/// field ("burst", "buckets", "queue", "quota", ...).
result<any_policy> make_policy(const spec& s);

/// The window W of a policy, in ticks (1 for quota and always-*: they have
/// none).
tick window_of(const any_policy& p) noexcept;

}  // namespace sluice
