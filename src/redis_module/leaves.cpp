// Each leaf of the library decided by the core (leaves.hpp).
//
// GCRA and the token bucket (one value, "g"; gcra.lua): the client sends
// c·W = cq·L + cr, S·W = sq·L + sr and the report bound K = kq·L + kr. The
// core's GCRA in units of 1/L tick depends on W, S and c only through c·W
// and S·W (gcra.hpp: the debt grows by c·W and is held to S·W), so the
// leaf decides with the core policy gcra(L per W', burst S'), cost c',
// where W' = gcd(c·W, S·W), S' = S·W / W', c' = c·W / W': the same
// admissions, the same debt written. W' is a multiple of the policy's W, so
// S' <= S and c' <= c. The stored value is read and written by the Redis
// store's own codec (redis/store/value_codec.hpp), which needs only L.
#include "redis_module/leaves.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "redis/client/binary.hpp"
#include "redis/store/protocol.hpp"
#include "redis/store/value_codec.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/report.hpp"

namespace sluice::redis_module {
namespace {

using detail::i128;

constexpr std::int64_t p52 = std::int64_t{1} << 52;

/// `v` in decimal (it may pass 64 bits).
std::string text(i128 v) {
  if (v == 0) return "0";
  std::string out;
  const bool negative = v < 0;
  for (; v != 0; v /= 10) out.insert(out.begin(), static_cast<char>('0' + (negative ? -(v % 10) : v % 10)));
  return negative ? "-" + out : out;
}

reply bad(std::string_view why) { return reply::error("sluice: bad request (" + std::string(why) + ")"); }

leaf_step fail(reply r) {
  leaf_step s;
  s.error = std::move(r);
  return s;
}

/// The `n` integers of `args` (each a double holding an integer below 2^53).
bool numbers(std::string_view args, std::size_t n, std::int64_t* out) {
  if (args.size() != 8 * n) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (!redis::get_number(args.data() + 8 * i, out[i])) return false;
  return true;
}

i128 gcd128(i128 a, i128 b) {
  while (b != 0) {
    const i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/// The leaf's plan: what the store's codec reads a value of `tag` with.
redis::leaf_plan plan_of(std::string_view tag, char letter, const any_policy& p) {
  redis::leaf_plan lp;
  lp.policy = &p;
  lp.letter = letter;
  for (std::size_t i = 0; i < redis::tag_size; ++i) lp.tag[i] = tag[i];
  return lp;
}

leaf_step gcra_leaf(std::string_view tag, std::string_view args, const std::optional<std::string>& before, tick now) {
  std::int64_t x[8] = {};
  if (!numbers(args, 8, x)) return fail(bad("a GCRA leaf's arguments are not integers below 2^53"));
  const std::int64_t mode = x[0];
  const std::int64_t l = x[1];
  if (l < 1 || l > p52) return fail(bad("a GCRA leaf's limit must be 1 to 2^52"));
  for (int k = 2; k < 8; ++k)
    if (x[k] < 0 || (k % 2 == 1 && x[k] >= l))
      return fail(bad("a GCRA leaf's quotients must be >= 0 and its remainders below its limit"));
  const i128 cw = static_cast<i128>(x[2]) * l + x[3];
  const i128 sw = static_cast<i128>(x[4]) * l + x[5];
  const bool decides = mode == 1 || mode == 2;
  if (decides && (cw == 0 || sw == 0)) return fail(bad("a GCRA leaf's c*W and S*W must be positive"));
  // The policy: W' = gcd(c·W, S·W) when the leaf decides; else any (the
  // codec reads a value with L only). A report's c·W sent above its bound K
  // (it is sent as at most K + 1, and K >= S·W) never fits and leaves the
  // debt at K whatever its size: it is charged as ceil((K + 1) / W') units
  // of W' = S·W (or a divisor; at most INT64_MAX units: at least K, past
  // S·W, saturating at K).
  const i128 k = static_cast<i128>(x[6]) * l + x[7];
  const bool over = mode == 2 && cw > k;
  i128 g = !decides ? 1 : over ? sw : gcd128(cw, sw);
  // A W' past the core's 2^62: a divisor of it will do as well, while S'
  // and c' stay within 2^62 (found by dividing out small factors, as ticks
  // of a window are mostly 2s and 5s).
  for (i128 f = 2; g > max_quantity && f < 100000; f += (f == 2 ? 1 : 2))
    while (g > max_quantity && g % f == 0) g /= f;
  const i128 burst = decides ? sw / g : 1;
  const i128 units = !decides ? 1 : over ? std::min<i128>((k + g) / g, detail::i64_max) : cw / g;
  if (g > max_quantity || burst > max_quantity || units > (over ? detail::i64_max : max_quantity))
    return fail(bad("a GCRA leaf's c*W = " + text(cw) + " and S*W = " + text(sw) +
                    " have no common window the core holds (up to 2^62)"));
  auto made = gcra::make(rate{l, static_cast<tick>(g)}, static_cast<std::int64_t>(burst));
  if (!made) return fail(bad("a GCRA leaf: " + made.err().message));
  const any_policy policy{made.value()};
  const redis::leaf_plan lp = plan_of(tag, 'g', policy);
  tick latest = detail::i64_min;
  auto st = redis::decode_value(lp, before ? std::optional<std::string_view>(*before) : std::nullopt, latest);
  if (!st) return fail(reply::error("sluice: corrupt state (gcra: " + st.err().message + ")"));
  if (!decides) return {};
  auto& s = std::get<gcra::state>(st.value());
  const auto cost = static_cast<std::int64_t>(units);
  leaf_step out;
  if (mode == 2) {
    gcra::state probe = s;  // whether it fits: what a decision would answer
    out.ok = decide(made.value(), probe, now, cost).allowed;
    (void)report(made.value(), s, now, cost);  // charged whatever it fits
  } else {
    out.ok = decide(made.value(), s, now, cost).allowed;
    if (!out.ok) return out;
  }
  std::string v;
  if (!redis::encode_value(lp, st.value(), now, v))
    return fail(bad("the GCRA state after this call is outside what the library holds"));
  out.ttl = redis::value_ticks_to_fresh(lp, v);
  out.after = std::move(v);
  return out;
}

}  // namespace

bool is_leaf_letter(char c) noexcept { return leaf_arg_bytes(c) > 0; }

std::size_t leaf_arg_bytes(char letter) noexcept {
  switch (letter) {
    case 'g':
      return 64;
    case 'q':
      return 80;
    case 'f':
    case 'c':
    case 'l':
      return 56;
    case 'u':
      return 24;
    case 's':
      return 32;
    case 'b':
      return 64;
    default:
      return 0;
  }
}

leaf_step step_leaf(std::string_view tag, std::string_view args, const std::optional<std::string>& before, tick now,
                    std::int64_t /*shift*/) {
  if (tag.size() != leaf_tag_size || !is_leaf_letter(tag[0])) return fail(reply::error("sluice: bad request"));
  if (tag[0] == 'g') return gcra_leaf(tag, args, before, now);
  return fail(reply::error("sluice: not in the module (a '" + std::string(1, tag[0]) +
                           "' leaf: only GCRA and token bucket leaves are decided by this module; use the Lua "
                           "library's FCALL for this policy)"));
}

}  // namespace sluice::redis_module
