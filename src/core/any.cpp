// The run-time choice of algorithm: names, fresh states, and building a
// policy from a spec.
#include "sluice/core/any.hpp"

#include "sluice/core/algorithm.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "detail/compose.hpp"

namespace sluice {
namespace {

/// Every alternative's name, in the order of any_policy (and `algorithm`).
template <std::size_t... I>
constexpr std::array<std::string_view, sizeof...(I)> names_of(std::index_sequence<I...>) noexcept {
  return {std::variant_alternative_t<I, any_policy>::name...};
}
constexpr auto names = names_of(std::make_index_sequence<std::variant_size_v<any_policy>>{});

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
/// The policy of the I-th alternative of any_policy, or a later one's, that
/// `s.algo` names: each single algorithm builds its own (`from_spec`).
template <std::size_t I>
result<any_policy> make_from(const spec& s) {
  if constexpr (I < algorithm_count) {
    using policy_t = std::variant_alternative_t<I, any_policy>;
    if (static_cast<std::size_t>(s.algo) != I) return make_from<I + 1>(s);
    result<policy_t> r = policy_t::from_spec(s);
    if (!r) return r.err();
    return any_policy{std::move(r).value()};
  } else {
    if (s.algo == algorithm::all_of || s.algo == algorithm::any_of)
      return error{"algorithm", "a composite is built from its parts (all_of::make, any_of::make)"};
    return error{"algorithm", "unknown"};
  }
}
}  // namespace

result<any_policy> make_policy(const spec& s) { return make_from<0>(s); }

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

std::optional<limit_figures> limit_of(const any_policy& p) noexcept {
  return std::visit(
      [](const auto& pol) -> std::optional<limit_figures> {
        using P = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          return std::nullopt;
        } else {
          return limit_of(pol);
        }
      },
      p);
}

bool may_leave_debt(const any_policy& from, const any_policy& to) noexcept {
  if (from.index() != to.index()) return false;
  return std::visit(
      [&](const auto& pol) -> bool {
        using P = std::decay_t<decltype(pol)>;
        const P& next = *std::get_if<P>(&to);
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          if (pol.parts().size() != next.parts().size()) return false;
          for (std::size_t i = 0; i < pol.parts().size(); ++i)
            if (may_leave_debt(pol.parts()[i], next.parts()[i])) return true;
          return false;
        } else {
          return may_leave_debt(pol, next);
        }
      },
      from);
}

}  // namespace sluice
