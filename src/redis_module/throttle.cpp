// CL.THROTTLE (throttle.hpp): its arguments, and the core's GCRA over the
// Lua library's GCRA value.
//
// The value's tag names only `count` (L): the stored debt is in 1/L µs, so
// the instant it stands for (the theoretical arrival time) does not depend
// on max_burst or period, and a call with another burst or period decides
// on the same state, as redis-cell does. A value of another count (or not
// one of CL.THROTTLE's) is an error reply: its units differ.
#include "redis_module/throttle.hpp"

#include <charconv>
#include <cstdio>
#include <utility>

#include "redis/store/protocol.hpp"
#include "redis/store/value_codec.hpp"
#include "sluice/core/gcra.hpp"

namespace sluice::redis_module {
namespace {

using detail::i128;

constexpr std::int64_t us_per_second = 1000000;
constexpr i128 p52 = i128{1} << 52;

reply bad(std::string_view field, std::string_view why) {
  return reply::error("ERR CL.THROTTLE: " + std::string(field) + " " + std::string(why));
}

/// `s` with every byte outside printable ASCII as '?' (an error reply is one line).
std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c < 0x20 || c > 0x7e) c = '?';
  return out;
}

std::optional<reply> integer(std::string_view text, std::string_view field, std::int64_t low, std::int64_t& out) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return bad(field, "must be an integer (got '" + printable(text.substr(0, 32)) + "')");
  if (v < low) return bad(field, "must be at least " + std::to_string(low) + " (got " + std::to_string(v) + ")");
  out = v;
  return std::nullopt;
}

/// 'g' and 8 hex digits: FNV-1a of "cl.throttle:" and the count.
void tag_of(std::int64_t count, char* tag) {
  const std::string text = "cl.throttle:" + std::to_string(count);
  std::uint32_t h = 2166136261u;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", h);
  tag[0] = 'g';
  for (int i = 0; i < 8; ++i) tag[i + 1] = hex[i];
}

/// Whole seconds from µs, rounded up.
std::int64_t seconds_up(std::int64_t us) { return us <= 0 ? 0 : (us - 1) / us_per_second + 1; }

}  // namespace

std::optional<reply> parse_throttle(std::span<const std::string_view> args, throttle_args& out) {
  if (args.size() < 3 || args.size() > 4)
    return reply::error("ERR wrong number of arguments for 'cl.throttle' command");
  if (auto e = integer(args[0], "max_burst", 0, out.max_burst)) return e;
  if (auto e = integer(args[1], "count", 1, out.count)) return e;
  if (auto e = integer(args[2], "period", 1, out.period)) return e;
  out.quantity = 1;
  if (args.size() == 4)
    if (auto e = integer(args[3], "quantity", 0, out.quantity)) return e;
  if (out.max_burst >= max_quantity) return bad("max_burst", "must be below 2^62");
  if (out.count > p52) return bad("count", "must be at most 2^52 (4503599627370496)");
  if (out.period > max_quantity / us_per_second) return bad("period", "must be at most 4611686018427 seconds");
  // The longest debt a state holds, S·W / L in µs, below 2^52 (values.cpp).
  const i128 span = static_cast<i128>(out.max_burst + 1) * out.period * us_per_second / out.count;
  if (span >= p52)
    return bad("period", "times max_burst + 1, divided by count, must be below 2^52 microseconds (142 years)");
  return std::nullopt;
}

throttle_result throttle(const throttle_args& a, const std::optional<std::string>& before, std::int64_t now_us) {
  throttle_result out;
  const gcra policy = gcra::make(rate{a.count, a.period * us_per_second}, a.max_burst + 1).value();
  const any_policy any{policy};
  redis::leaf_plan lp;
  lp.policy = &any;
  lp.letter = 'g';
  tag_of(a.count, lp.tag);
  if (before && std::string_view(*before).substr(0, redis::tag_size) != lp.tag_view()) {
    out.answer = reply::error(redis::has_tag_shape(*before)
                                  ? "ERR CL.THROTTLE: the key holds a state of another count (its units differ); "
                                    "delete it or use another key"
                                  : "WRONGTYPE CL.THROTTLE: the key holds a value that is not a throttle's state");
    return out;
  }
  tick latest = detail::i64_min;
  auto st = redis::decode_value(lp, before ? std::optional<std::string_view>(*before) : std::nullopt, latest);
  if (!st) {
    out.answer = reply::error("ERR CL.THROTTLE: corrupt state (" + st.err().message + ")");
    return out;
  }
  auto& s = std::get<gcra::state>(st.value());
  const bool ask = a.quantity == 0;  // redis-cell: a quantity of 0 asks, admits, takes nothing
  const decision d = decide(policy, s, now_us, a.quantity);
  const bool admitted = d.allowed || ask;
  out.answer = reply::array({reply::of(admitted ? 0 : 1), reply::of(a.max_burst + 1), reply::of(d.remaining),
                             reply::of(admitted || d.retry_after == never ? -1 : seconds_up(d.retry_after)),
                             reply::of(seconds_up(d.reset_after))});
  if (!d.allowed) return out;
  std::string v;
  if (!redis::encode_value(lp, st.value(), now_us, v)) {
    out.answer = reply::error("ERR CL.THROTTLE: the state after this call is outside what the value holds");
    return out;
  }
  // Expires when fresh: the store's TTL for ticks of 1 µs with no grace
  // (main.lua, `put`: floor(ticks / 1000) + 2 ms).
  out.px = redis::value_ticks_to_fresh(lp, v) / 1000 + 2;
  out.after = std::move(v);
  return out;
}

}  // namespace sluice::redis_module
