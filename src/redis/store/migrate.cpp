// Carrying a Redis store's states over a redefinition (migrate.hpp).
#include "redis/store/migrate.hpp"

#include <algorithm>

#include "sluice/core/reconfigure.hpp"

namespace sluice::redis {
namespace {

/// The latest epoch whose leaf `leaf` writes `value`'s tag, if any.
std::optional<std::size_t> epoch_of(std::span<const epoch> epochs, std::size_t leaf, std::string_view value) {
  if (value.size() < tag_size) return std::nullopt;
  for (std::size_t e = epochs.size(); e-- > 0;)
    if (value.substr(0, tag_size) == epochs[e].p->leaves()[leaf].tag_view()) return e;
  return std::nullopt;
}

/// `s` (a state of epoch `from`'s policy) carried through every later epoch,
/// each at its instant, as the memory store's sweeps carry a key: a sweep
/// that leaves the state fresh drops the key, which stays fresh from then on.
std::optional<any_state> carry(std::span<const epoch> epochs, std::size_t from, any_state s) {
  for (std::size_t e = from + 1; e < epochs.size(); ++e) {
    const any_policy& to = epochs[e].p->policy();
    auto next = reconfigure(epochs[e - 1].p->policy(), s, to, epochs[e].since);
    if (!next) return std::nullopt;  // define refuses such a change; kept as a guard
    s = std::move(next).value();
    if (s == fresh_state(to)) return fresh_state(epochs.back().p->policy());
  }
  return s;
}

}  // namespace

std::optional<any_state> read_check(std::span<const epoch> epochs,
                                    std::span<const std::optional<std::string_view>> values, tick& latest,
                                    read_outcome& how, std::span<bool> stale) {
  const std::size_t last = epochs.size() - 1;
  const std::size_t n = epochs[last].p->leaves().size();
  how = read_outcome::current;
  // The configuration each present value was written for; `f`, the latest
  // of them, is the key's (its other leaves were left behind by a write
  // under f, or are absent: fresh under f).
  std::vector<std::size_t> at(n, last);
  std::optional<std::size_t> f;
  for (std::size_t j = 0; j < n; ++j) {
    if (!values[j]) continue;
    const auto e = epoch_of(epochs, j, *values[j]);
    if (!e) {
      how = has_tag_shape(*values[j]) ? read_outcome::unknown : read_outcome::corrupt;
      return std::nullopt;
    }
    at[j] = *e;
    if (!stale.empty()) stale[j] = *e != last;
    if (!f || *e > *f) f = e;
  }
  const std::size_t key_epoch = f.value_or(last);
  std::vector<any_state> leaves;
  leaves.reserve(n);
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t from = values[j] ? at[j] : key_epoch;
    auto s = epochs[from].p->decode_leaf(j, values[j], latest);
    if (!s) {
      how = read_outcome::corrupt;
      return std::nullopt;
    }
    any_state st = std::move(s).value();
    // A leaf left behind: carried on its own up to the key's configuration
    // (no sweep between dropped the key, or the write would have deleted it).
    for (std::size_t e = from + 1; e <= key_epoch; ++e) {
      auto next =
          reconfigure(*epochs[e - 1].p->leaves()[j].policy, st, *epochs[e].p->leaves()[j].policy, epochs[e].since);
      if (!next) {
        how = read_outcome::corrupt;
        return std::nullopt;
      }
      st = std::move(next).value();
    }
    leaves.push_back(std::move(st));
  }
  any_state whole = epochs[key_epoch].p->assemble(leaves);
  for (std::size_t j = 0; j < n; ++j)
    if (values[j] && at[j] != last) how = read_outcome::carried;
  if (key_epoch == last) return whole;
  return carry(epochs, key_epoch, std::move(whole));
}

check_read read_check_at(std::span<const epoch> epochs, std::span<const std::optional<std::string_view>> values,
                         std::size_t at) {
  const std::size_t k = epochs.back().p->leaves().size();
  check_read r;
  r.stale.reset(new bool[k]());
  r.state = read_check(epochs, values.subspan(at, k), r.latest, r.how, std::span<bool>(r.stale.get(), k));
  return r;
}

}  // namespace sluice::redis
