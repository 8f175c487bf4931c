// Live reconfiguration: mapping a state of one policy to a state of another
// of the same algorithm. The rules and why they hold are in reconfigure.hpp.
#include "sluice/reconfigure.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "detail/wide.hpp"
#include "sluice/detail/log_rebuild.hpp"

namespace sluice {
namespace {

using detail::i128;

/// min(v, 2^62) for a count that is then held in an int64 state field: any
/// count of 2^62 already blocks every limit sluice accepts.
std::int64_t clamp_units(i128 v) noexcept {
  if (v < 0) return 0;
  return v > max_quantity ? max_quantity : static_cast<std::int64_t>(v);
}

/// The token-bucket rule (also GCRA's): the new tokens in 1/W_new token from
/// the old tokens `held` in 1/W_old token (may be negative: a debt).
i128 new_tokens(i128 held, rate from, std::int64_t s_from, rate to, std::int64_t s_to) noexcept {
  const i128 cap_from = static_cast<i128>(s_from) * from.window;
  const i128 cap_to = static_cast<i128>(s_to) * to.window;
  // Keep the deficit, rounded up in the new unit: S_new·W_new − ceil(D·W_new/W_old).
  i128 tokens = cap_to - detail::muldiv_ceil(cap_from - held, to.window, from.window);
  const bool rate_drops = static_cast<i128>(to.limit) * from.window < static_cast<i128>(from.limit) * to.window;
  if (rate_drops) tokens = std::min(tokens, detail::muldiv_floor(held, to.window, from.window));
  return std::min(tokens, cap_to);
}

/// Whether [a0, a1) and [b0, b1) share an instant.
bool overlaps(i128 a0, i128 a1, i128 b0, i128 b1) noexcept { return a0 < b1 && b0 < a1; }

/// Keeps, of runs of units oldest first, only those that can change a
/// decision of a window of limit `l` (semantics.md, "Reconfiguration"), as
/// a report leaves them: each run holds at most `l`, and while the runs
/// after the oldest hold `l` or more the oldest is dropped (it leaves the
/// window before any of them, and while it is in it they alone deny every
/// request). Nothing when `l` is 0 (a limit of 0 admits nothing, whatever
/// it counts). What is kept holds at most 2l − 1 units: what a window's
/// admits and reports leave, and all a Redis store holds.
template <class Run, class Units>
void keep_decisive(std::vector<Run>& runs, std::int64_t l, Units units) {
  if (l <= 0) {
    runs.clear();
    return;
  }
  i128 total = 0;
  for (Run& r : runs) {
    units(r) = std::min(units(r), l);
    total += units(r);
  }
  std::size_t first = 0;
  while (first + 1 < runs.size() && total - units(runs[first]) >= l) total -= units(runs[first++]);
  runs.erase(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(first));
}

/// `s` with only the units that can change a decision of `to` (keep_decisive).
sliding_buckets::state decisive(const sliding_buckets& to, const sliding_buckets::state& s) {
  const std::int64_t n = to.buckets();
  if (s.total() == 0 || s.counts().size() != static_cast<std::size_t>(n)) return s;
  struct sub_count {
    i128 sub;
    std::int64_t count;
  };
  std::vector<sub_count> runs;
  for (std::int64_t k = n - 1; k >= 0; --k) {
    const i128 sub = static_cast<i128>(s.newest()) - k;
    const std::int64_t c = s.counts()[static_cast<std::size_t>(detail::floor_mod(sub, static_cast<i128>(n)))];
    if (c > 0) runs.push_back({sub, c});
  }
  keep_decisive(runs, to.limit().limit, [](sub_count& r) -> std::int64_t& { return r.count; });
  // The ring, rebuilt the only way its interface allows: each sub-window's
  // count admitted at its first instant, oldest first, through a policy of
  // the same window and buckets and no limit.
  const tick width = to.limit().window / n;
  const sliding_buckets big = sliding_buckets::make(rate{max_quantity, to.limit().window}, n).value();
  sliding_buckets::state out;
  for (const sub_count& r : runs) {
    const i128 t = std::max<i128>(r.sub * width, detail::i64_min);
    (void)decide(big, out, static_cast<tick>(t), r.count);
  }
  return out;
}

}  // namespace

fixed_window::state reconfigure(const fixed_window& from, const fixed_window::state& s, const fixed_window& to,
                                tick now) noexcept {
  if (s.count <= 0) return {};
  const std::int64_t k_now = std::max(from.window_of(now), s.window);
  if (k_now != s.window) return {};  // counted in a window that is over: fresh under `from`
  const i128 a0 = from.start_of(s.window);
  const i128 a1 = a0 + from.limit().window;
  // Read `now` as at least the start of the counted window (a clock that
  // stepped back), as `decide` does.
  const tick e = a0 > now ? static_cast<tick>(a0) : now;
  const std::int64_t k = to.window_of(e);
  const i128 b0 = to.start_of(k);
  if (!overlaps(a0, a1, b0, static_cast<i128>(e) + 1)) return {};
  return {k, s.count};
}

sliding_log::state reconfigure(const sliding_log& from, const sliding_log::state& s, const sliding_log& to, tick now) {
  const tick e = detail::max64(now, s.last());
  const i128 horizon = static_cast<i128>(e) - from.limit().window;
  std::vector<sliding_log::entry> kept;
  kept.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s.at(i).at > horizon) kept.push_back(s.at(i));
  if (kept.empty()) return {};
  // Re-windowed first (the new window drops what it no longer holds), then
  // only what can change a decision of `to` is kept.
  const sliding_log::state exact = detail::rebuild_log(to.limit().window, kept);
  kept.clear();
  for (std::size_t i = 0; i < exact.size(); ++i) kept.push_back(exact.at(i));
  keep_decisive(kept, to.limit().limit, [](sliding_log::entry& run) -> std::int64_t& { return run.units; });
  if (kept.empty()) return {};
  return detail::rebuild_log(to.limit().window, kept);
}

sliding_counter::state reconfigure(const sliding_counter& from, const sliding_counter::state& s,
                                   const sliding_counter& to, tick now) noexcept {
  const i128 w0 = from.limit().window;
  const i128 w1 = to.limit().window;
  const tick e = detail::max64(now, s.last);
  const i128 k_e = detail::floor_div(e, w0);
  // The (old window, units) pairs the old counter still counts at e.
  struct counted {
    i128 window;
    i128 units;
  };
  counted held[2] = {{0, 0}, {0, 0}};
  if (k_e == s.window) {
    held[0] = {s.window, s.curr};
    held[1] = {static_cast<i128>(s.window) - 1, s.prev};
  } else if (k_e == static_cast<i128>(s.window) + 1) {
    held[0] = {s.window, s.curr};
  }
  if (held[0].units == 0 && held[1].units == 0) return {};
  if (w0 == w1) return s;
  const i128 k = detail::floor_div(e, w1);
  i128 curr = 0;
  i128 prev = 0;
  for (const counted& c : held) {
    if (c.units == 0) continue;
    const i128 a0 = c.window * w0;
    const i128 a1 = std::min(a0 + w0, static_cast<i128>(e) + 1);  // no unit is later than e
    if (overlaps(a0, a1, k * w1, (k + 1) * w1)) curr += c.units;
    if (overlaps(a0, a1, (k - 1) * w1, k * w1)) prev += c.units;
  }
  if (curr == 0 && prev == 0) return {};
  sliding_counter::state out;
  out.window = static_cast<std::int64_t>(k);
  out.prev = clamp_units(prev);
  out.curr = clamp_units(curr);
  out.last = s.last;
  return out;
}

sliding_buckets::state reconfigure(const sliding_buckets& from, const sliding_buckets::state& s,
                                   const sliding_buckets& to, tick now) {
  if (from.limit().window == to.limit().window && from.buckets() == to.buckets()) return decisive(to, s);
  const decision d = from.peek(s, now, 0);  // cost 0: what is in the window
  const i128 in_window = static_cast<i128>(from.limit().limit) - d.remaining;
  if (in_window <= 0) return {};
  // reset_after runs to the end of the window of the latest sub-window that
  // holds units; charge everything to that sub-window's last tick, the
  // latest instant any of them can have been admitted at.
  const i128 width = from.limit().window / from.buckets();
  const i128 latest_end = static_cast<i128>(now) + d.reset_after - from.limit().window + width - 1;
  const tick at = static_cast<tick>(std::clamp<i128>(latest_end, detail::i64_min, detail::i64_max));
  const sliding_buckets big = sliding_buckets::make(rate{max_quantity, to.limit().window}, to.buckets()).value();
  sliding_buckets::state out;
  (void)decide(big, out, at, clamp_units(in_window));
  return decisive(to, out);
}

token_bucket::state reconfigure(const token_bucket& from, const token_bucket::state& s, const token_bucket& to,
                                tick now) noexcept {
  const tick e = detail::max64(now, s.last);
  const i128 tokens = new_tokens(from.tokens_at(s, e), from.limit(), from.burst(), to.limit(), to.burst());
  if (tokens >= to.capacity()) return {};
  token_bucket::state out;
  out.spent = to.capacity() - tokens;
  out.last = e;
  return out;
}

gcra::state reconfigure(const gcra& from, const gcra::state& s, const gcra& to, tick now) noexcept {
  const tick e = detail::max64(now, s.last);
  const i128 el = static_cast<i128>(e) * from.limit().limit;  // 0 when L = 0: u then holds the deficit
  const i128 held = from.tolerance() - (s.u > el ? s.u - el : 0);
  const i128 tokens = new_tokens(held, from.limit(), from.burst(), to.limit(), to.burst());
  if (tokens >= to.tolerance()) return {};  // full: fresh
  gcra::state out;
  out.u = static_cast<i128>(e) * to.limit().limit + (to.tolerance() - tokens);
  out.last = e;
  return out;
}

leaky_queue::state reconfigure(const leaky_queue& from, const leaky_queue::state& s, const leaky_queue& to,
                               tick now) noexcept {
  if (s.release <= detail::minus_infinity) return {};
  const std::int64_t l0 = from.limit().limit;
  const std::int64_t l1 = to.limit().limit;
  if (l0 > 0) {
    const i128 el = static_cast<i128>(detail::max64(now, s.last)) * l0;
    if (s.release + from.limit().window <= el) return {};  // fresh under `from`
  }
  leaky_queue::state out;
  out.last = s.last;
  // R/L0 is the last unit's release instant (R itself when L0 = 0); keep it,
  // rounded later, in the new scale (unscaled when L1 = 0).
  if (l0 > 0 && l1 > 0) {
    out.release = detail::muldiv_ceil(s.release, l1, l0);
  } else if (l0 > 0) {
    out.release = detail::ceil_div(s.release, l0);
  } else if (l1 > 0) {
    // Saturating: a release far out (an untouched debt) times L1 may pass
    // 128 bits; clamped, as every other out-of-range release is.
    i128 scaled = 0;
    if (__builtin_mul_overflow(s.release, static_cast<i128>(l1), &scaled))
      scaled = s.release < 0 ? -detail::wide_bound : detail::wide_bound;
    out.release = detail::clamp_wide(scaled);
  } else {
    out.release = s.release;
  }
  return out;
}

quota::state reconfigure(const quota&, const quota::state& s, const quota&, tick) noexcept { return s; }

always_allow::state reconfigure(const always_allow&, const always_allow::state&, const always_allow&, tick) noexcept {
  return {};
}

always_deny::state reconfigure(const always_deny&, const always_deny::state&, const always_deny&, tick) noexcept {
  return {};
}

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
