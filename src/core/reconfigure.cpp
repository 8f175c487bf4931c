// Live reconfiguration: mapping a state of one policy to a state of another
// of the same algorithm. The rules and why they hold are in reconfigure.hpp;
// each single algorithm's carry-over is beside it (src/<name>.cpp, sharing
// detail/carry.hpp); here are the composites' and the dispatch.
#include "sluice/core/reconfigure.hpp"

#include <cstddef>
#include <string>
#include <utility>
#include <variant>

namespace sluice {
namespace {

template <typename Composite, typename State>
result<State> reconfigure_parts(const Composite& from, const State& s, const Composite& to, tick now) {
  if (from.parts().size() != to.parts().size() || s.parts.size() != from.parts().size())
    return error{"parts", "the new policy has " + std::to_string(to.parts().size()) + " parts, the old one " +
                              std::to_string(from.parts().size())};
  State out;
  out.parts.reserve(s.parts.size());
  for (std::size_t i = 0; i < s.parts.size(); ++i) {
    result<any_state> part = reconfigure(from.parts()[i], s.parts[i], to.parts()[i], now);
    if (!part) return error{"parts", "part " + std::to_string(i + 1) + ": " + part.err().what()};
    out.parts.push_back(std::move(part).value());
  }
  return out;
}

}  // namespace

result<all_of_state> reconfigure(const all_of& from, const all_of_state& s, const all_of& to, tick now) {
  return reconfigure_parts(from, s, to, now);
}

result<any_of_state> reconfigure(const any_of& from, const any_of_state& s, const any_of& to, tick now) {
  return reconfigure_parts(from, s, to, now);
}

result<any_state> reconfigure(const any_policy& from, const any_state& s, const any_policy& to, tick now) {
  if (from.index() != to.index())
    return error{"algorithm", "cannot change " + std::string(name_of(algorithm_of(from))) + " into " +
                                  std::string(name_of(algorithm_of(to))) + " (only its parameters)"};
  return std::visit(
      [&](const auto& pol) -> result<any_state> {
        using policy_t = std::decay_t<decltype(pol)>;
        using state_t = typename policy_t::state;
        const auto& next = *std::get_if<policy_t>(&to);
        const auto& st = *std::get_if<state_t>(&s);
        if constexpr (std::is_same_v<policy_t, all_of> || std::is_same_v<policy_t, any_of>) {
          result<state_t> r = reconfigure(pol, st, next, now);
          if (!r) return r.err();
          return any_state{std::move(r).value()};
        } else {
          return any_state{reconfigure(pol, st, next, now)};
        }
      },
      from);
}

}  // namespace sluice
