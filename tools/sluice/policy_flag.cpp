#include "policy_flag.hpp"

#include <algorithm>
#include <string>
#include <type_traits>
#include <variant>

#include "sluice/core/algorithm.hpp"
#include "sluice/core/policy_expr.hpp"

namespace sluice::cli {

result<any_policy> parse_policy_flag(std::string_view text) {
  auto p = parse_policy(text);
  if (!p) return error{"--policy", p.err().message};
  return p;
}

std::optional<error> policy_excludes(std::string_view algorithm_flag, bool algorithm_given, const limiter_flags& f) {
  const auto clash = [](std::string_view flag, std::string_view why) {
    return error{"--policy", "cannot be combined with " + std::string(flag) + " (" + std::string(why) + ")"};
  };
  if (algorithm_given) return clash(algorithm_flag, "the expression names the algorithm");
  const std::pair<const char*, const std::string*> flags[] = {{"--limit", &f.limit},
                                                              {"--burst", &f.burst},
                                                              {"--buckets", &f.buckets},
                                                              {"--queue", &f.queue},
                                                              {"--quota", &f.quota}};
  for (const auto& [flag, value] : flags)
    if (!value->empty()) return clash(flag, "write it in the expression, e.g. 'token-bucket 10/1s burst=5'");
  return std::nullopt;
}

bool has_leaky_queue(const any_policy& p) {
  if (const auto* a = std::get_if<all_of>(&p))
    return std::any_of(a->parts().begin(), a->parts().end(), has_leaky_queue);
  if (const auto* o = std::get_if<any_of>(&p))
    return std::any_of(o->parts().begin(), o->parts().end(), has_leaky_queue);
  return limit_of(p)->queues;
}

bool admits_without_bound(const any_policy& p) {
  if (const auto* a = std::get_if<all_of>(&p))
    return std::all_of(a->parts().begin(), a->parts().end(), admits_without_bound);
  if (const auto* o = std::get_if<any_of>(&p))
    return std::any_of(o->parts().begin(), o->parts().end(), admits_without_bound);
  return limit_of(p)->unbounded;
}

std::optional<tick> largest_window(const any_policy& p) {
  return std::visit(
      [](const auto& pol) -> std::optional<tick> {
        using P = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          std::optional<tick> most;
          for (const auto& part : pol.parts())
            if (const auto w = largest_window(part); w && (!most || *w > *most)) most = w;
          return most;
        } else if constexpr (requires { pol.limit().window; }) {
          return pol.limit().window;
        } else {
          return std::nullopt;
        }
      },
      p);
}

}  // namespace sluice::cli
