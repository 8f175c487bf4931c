// The run-time choice of algorithm: names, fresh states, and building a
// policy from a spec.
#include "sluice/any.hpp"

#include <algorithm>
#include <array>

#include "detail/compose.hpp"

namespace sluice {
namespace {

constexpr std::array<std::string_view, 13> names{
    "fixed-window", "sliding-log",  "sliding-counter", "sliding-buckets", "token-bucket", "gcra", "leaky-queue",
    "quota",        "always-allow", "always-deny",     "concurrency",     "all",          "any",
};
/// How many of `names` are single algorithms (the rest are composites).
constexpr std::size_t algorithm_count = 11;
// One name per alternative of any_policy: a new algorithm fails here until it is named.
static_assert(names.size() == std::variant_size_v<any_policy>,
              "a new algorithm: name it here (docs/architecture.md, \"Adding an algorithm\")");

}  // namespace

std::string_view name_of(algorithm a) noexcept { return names[static_cast<std::size_t>(a)]; }

std::optional<algorithm> algorithm_named(std::string_view name) noexcept {
  for (std::size_t i = 0; i < algorithm_count; ++i)
    if (names[i] == name) return static_cast<algorithm>(i);
  return std::nullopt;
}

std::string algorithm_names() {
  std::string out;
  for (std::size_t i = 0; i < algorithm_count; ++i) {
    const std::string_view n = names[i];
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

any_state fresh_state(const any_policy& p) {
  return std::visit(
      [](const auto& pol) -> any_state {
        using policy_t = std::decay_t<decltype(pol)>;
        typename policy_t::state s{};
        if constexpr (std::is_same_v<policy_t, all_of> || std::is_same_v<policy_t, any_of>) {
          s.parts.reserve(pol.parts().size());
          for (const auto& part : pol.parts()) s.parts.push_back(fresh_state(part));
        }
        return s;
      },
      p);
}

all_of::all_of(std::vector<any_policy> parts) : parts_(std::move(parts)) {
  for (const auto& part : parts_) choices_ += detail::choices_of(part);
}
any_of::any_of(std::vector<any_policy> parts) : parts_(std::move(parts)), choices_(1) {
  for (const auto& part : parts_) choices_ += detail::choices_of(part);
}

result<all_of> all_of::make(std::vector<any_policy> parts) {
  if (parts.empty()) return error{"parts", "all(...) needs at least one limiter"};
  return all_of(std::move(parts));
}

result<any_of> any_of::make(std::vector<any_policy> parts) {
  if (parts.empty()) return error{"parts", "any(...) needs at least one limiter"};
  return any_of(std::move(parts));
}

namespace {
template <typename T>
result<any_policy> widen(result<T> r) {
  if (!r) return r.err();
  return any_policy{std::move(r).value()};
}
}  // namespace

result<any_policy> make_policy(const spec& s) {
  const std::int64_t burst = s.burst.value_or(s.limit.limit);
  switch (s.algo) {
    case algorithm::fixed_window:
      return widen(fixed_window::make(s.limit, s.origin));
    case algorithm::sliding_log:
      return widen(sliding_log::make(s.limit));
    case algorithm::sliding_counter:
      return widen(sliding_counter::make(s.limit));
    case algorithm::sliding_buckets:
      if (!s.buckets) return error{"buckets", "is required by sliding-buckets (the number of sub-windows)"};
      return widen(sliding_buckets::make(s.limit, *s.buckets));
    case algorithm::token_bucket:
      if (!s.burst && s.limit.limit == 0) return widen(token_bucket::make(s.limit, 1));
      return widen(token_bucket::make(s.limit, burst));
    case algorithm::gcra:
      if (!s.burst && s.limit.limit == 0) return widen(gcra::make(s.limit, 1));
      return widen(gcra::make(s.limit, burst));
    case algorithm::leaky_queue:
      if (!s.queue && s.limit.limit == 0) return widen(leaky_queue::make(s.limit, 1));
      return widen(leaky_queue::make(s.limit, s.queue.value_or(s.limit.limit)));
    case algorithm::quota:
      if (!s.units) return error{"quota", "is required by quota (the number of units in all)"};
      return widen(quota::make(*s.units));
    case algorithm::always_allow:
      return any_policy{always_allow{}};
    case algorithm::always_deny:
      return any_policy{always_deny{}};
    case algorithm::concurrency:
      if (!s.units) return error{"concurrency", "is required by concurrency (the units in flight at most)"};
      return widen(concurrency::make(*s.units, s.lease.value_or(default_lease)));
    case algorithm::all_of:
    case algorithm::any_of:
      return error{"algorithm", "a composite is built from its parts (all_of::make, any_of::make)"};
  }
  return error{"algorithm", "unknown"};
}

tick window_of(const any_policy& p) noexcept {
  return std::visit(
      [](const auto& pol) -> tick {
        using policy_t = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<policy_t, all_of> || std::is_same_v<policy_t, any_of>) {
          tick w = 1;
          for (const auto& part : pol.parts()) w = std::max(w, window_of(part));
          return w;
        } else if constexpr (requires { pol.limit().window; }) {
          return pol.limit().window;
        } else if constexpr (std::is_same_v<policy_t, concurrency>) {
          return pol.lease_length();
        } else {
          return 1;
        }
      },
      p);
}

}  // namespace sluice
