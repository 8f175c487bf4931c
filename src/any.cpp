// The run-time choice of algorithm: names, fresh states, and building a
// policy from a spec.
#include "sluice/any.hpp"

#include <array>

namespace sluice {
namespace {

constexpr std::array<std::string_view, 10> names{
    "fixed-window", "sliding-log", "sliding-counter", "sliding-buckets", "token-bucket",
    "gcra",         "leaky-queue", "quota",           "always-allow",    "always-deny",
};

}  // namespace

std::string_view name_of(algorithm a) noexcept { return names[static_cast<std::size_t>(a)]; }

std::optional<algorithm> algorithm_named(std::string_view name) noexcept {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<algorithm>(i);
  return std::nullopt;
}

std::string algorithm_names() {
  std::string out;
  for (auto n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

any_state fresh_state(const any_policy& p) {
  return std::visit(
      [](const auto& pol) -> any_state {
        using policy_t = std::decay_t<decltype(pol)>;
        return typename policy_t::state{};
      },
      p);
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
  }
  return error{"algorithm", "unknown"};
}

tick window_of(const any_policy& p) noexcept {
  return std::visit(
      [](const auto& pol) -> tick {
        if constexpr (requires { pol.limit().window; }) {
          return pol.limit().window;
        } else {
          return 1;
        }
      },
      p);
}

}  // namespace sluice
