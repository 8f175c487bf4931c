// Each leaf of the library decided by the core (leaves.hpp), on one path:
// a leaf's arguments are read into the core policy, the cost and the mode
// they were computed from (one reader per letter, in `readers` below: the
// only per-algorithm code here), then the Redis store's own codec
// (redis/store/value_codec.hpp) reads the stored value into the policy's
// state, the core's `decide` (mode 1) or `report` (mode 2) steps it, and the
// codec writes it back, its TTL as the library computes it. Mode 0 (a cost
// that can never be admitted) only checks the value, as the library does.
//
// The readers rebuild a policy that decides exactly as the client's:
//   - GCRA and the token bucket (gcra.lua): the client sends c·W = cq·L + cr,
//     S·W = sq·L + sr and the report bound K = kq·L + kr. The core's GCRA in
//     units of 1/L tick depends on W, S and c only through c·W and S·W
//     (gcra.hpp: the debt grows by c·W and is held to S·W), so the leaf
//     decides with gcra(L per W', burst S'), cost c', where W' = gcd(c·W,
//     S·W), S' = S·W / W', c' = c·W / W': the same admissions, the same
//     debt written. W' is a multiple of the policy's W, so S' <= S, c' <= c.
//   - The leaky queue (leaky.lua): W is sent, c = Y/W + 1 and Q = X/W + c;
//     a report whose cost does not fit sends X below every backlog and Y
//     saturated at K + 1, and is charged as a cost past a queue of 1 whose
//     report bound is K (every queue the store holds has the bound
//     2^52·L − 1: report_bound.hpp).
//   - The windowed leaves (fixed.lua, counter.lua, buckets.lua) send the
//     client's split of the call's instant into a window and an offset; the
//     fixed window's origin (in [0, W): fixed_window.hpp) is the instant
//     minus the split. The leaf is decided at the call's instant (the
//     store's clock, when asked: the library moves the split by the same
//     shift), and a split that is not the instant's is a bad request.
//   - The others send their parameters as they are.
#include "redis_module/leaves.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <utility>

#include "redis/client/binary.hpp"
#include "redis/store/protocol.hpp"
#include "redis/store/value_codec.hpp"
#include "sluice/core/concurrency.hpp"
#include "sluice/core/gcra.hpp"
#include "sluice/core/report.hpp"

namespace sluice::redis_module {
namespace {

using detail::i128;

constexpr std::int64_t p32 = std::int64_t{1} << 32;
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
/// A leaf the core cannot hold in the form its arguments give, which the Lua
/// library decides: "not in the module" (nothing read or written), so the
/// store sends that call to the library (docs/redis.md, "The store and the
/// module").
reply not_here(std::string_view why) {
  return reply::error("sluice: not in the module (" + std::string(why) + "; the Lua library decides it)");
}

leaf_step fail(reply r) {
  leaf_step s;
  s.error = std::move(r);
  return s;
}

i128 gcd128(i128 a, i128 b) {
  while (b != 0) {
    const i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

bool limbs_ok(std::int64_t h, std::int64_t l) { return h >= -(p32 / 2) && h < p32 / 2 && l >= 0 && l < p32; }

std::int64_t join(std::int64_t h, std::int64_t l) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(h) << 32 | static_cast<std::uint64_t>(l));
}

/// What a leaf's arguments say: the mode (0: never admitted, only the value
/// is checked; 1: a decision; 2: a report), the core policy and cost the
/// client computed them from, and what the library's step needs besides.
struct reading {
  std::int64_t mode = 0;
  std::optional<any_policy> policy;  ///< nullopt in mode 0 when none can be built: the value is not read
  std::int64_t cost = 0;
  std::uint64_t nonce = 0;  ///< a concurrency leaf's lease nonce
  bool charges = true;      ///< false: a report only answers whether it fits (concurrency)
  std::int64_t wq = 0;      ///< a leaky queue's W / L (its TTL)
};

/// The arguments `x` of a leaf read into `out`; an error reply when they
/// are not ones the store sends. `sent`: the call's instant as the client
/// sent it (before any shift to the store's clock).
using reader = std::optional<reply> (*)(std::span<const std::int64_t> x, tick sent, reading& out);

/// `made`'s policy into `out`, or (mode 0 only) none; an error naming the
/// leaf otherwise.
template <typename P>
std::optional<reply> take(result<P> made, const char* leaf, reading& out) {
  if (made) {
    out.policy.emplace(std::move(made).value());
    return std::nullopt;
  }
  if (out.mode != 1 && out.mode != 2) return std::nullopt;
  return bad(std::string("a ") + leaf + " leaf: " + made.err().message);
}

std::optional<reply> read_gcra(std::span<const std::int64_t> x, tick, reading& out) {
  out.mode = x[0];
  const std::int64_t l = x[1];
  if (l < 1 || l > p52) return bad("a GCRA leaf's limit must be 1 to 2^52");
  for (int k = 2; k < 8; ++k)
    if (x[k] < 0 || (k % 2 == 1 && x[k] >= l))
      return bad("a GCRA leaf's quotients must be >= 0 and its remainders below its limit");
  const i128 cw = static_cast<i128>(x[2]) * l + x[3];
  const i128 sw = static_cast<i128>(x[4]) * l + x[5];
  const bool decides = out.mode == 1 || out.mode == 2;
  if (decides && (cw == 0 || sw == 0)) return bad("a GCRA leaf's c*W and S*W must be positive");
  // The policy: W' = gcd(c·W, S·W) when the leaf decides; else any (the
  // codec reads a value with L only). A report's c·W sent above its bound K
  // (it is sent as at most K + 1, and K >= S·W) never fits and leaves the
  // debt at K whatever its size: it is charged as ceil((K + 1) / W') units
  // of W' = S·W (or a divisor; at most INT64_MAX units: at least K, past
  // S·W, saturating at K).
  const i128 k = static_cast<i128>(x[6]) * l + x[7];
  const bool over = out.mode == 2 && cw > k;
  i128 g = !decides ? 1 : over ? sw : gcd128(cw, sw);
  // A W' past the core's 2^62: a divisor of it will do as well, while S'
  // and c' stay within 2^62 (found by dividing out small factors, as ticks
  // of a window are mostly 2s and 5s).
  for (i128 f = 2; g > max_quantity && f < 100000; f += (f == 2 ? 1 : 2))
    while (g > max_quantity && g % f == 0) g /= f;
  const i128 burst = decides ? sw / g : 1;
  const i128 units = !decides ? 1 : over ? std::min<i128>((k + g) / g, detail::i64_max) : cw / g;
  if (g > max_quantity || burst > max_quantity || units > (over ? detail::i64_max : max_quantity))
    return not_here("a GCRA leaf's c*W = " + text(cw) + " and S*W = " + text(sw) +
                    " have no common window the core holds (up to 2^62)");
  auto made = gcra::make(rate{l, static_cast<tick>(g)}, static_cast<std::int64_t>(burst));
  if (!made) return bad("a GCRA leaf: " + made.err().message);
  out.policy.emplace(made.value());
  out.cost = static_cast<std::int64_t>(units);
  return std::nullopt;
}

std::optional<reply> read_leaky(std::span<const std::int64_t> x, tick, reading& out) {
  out.mode = x[0];
  const std::int64_t l = x[1];
  if (l < 1 || l > p52) return bad("a leaky queue leaf's limit must be 1 to 2^52");
  for (int k = 2; k < 10; ++k)
    if ((x[k] < 0 && k != 4) || (k % 2 == 1 && (x[k] < 0 || x[k] >= l)))
      return bad("a leaky queue leaf's quotients must be >= 0 and its remainders below its limit");
  const i128 w = static_cast<i128>(x[2]) * l + x[3];
  const i128 xx = static_cast<i128>(x[4]) * l + x[5];
  const i128 y = static_cast<i128>(x[6]) * l + x[7];
  const i128 k = static_cast<i128>(x[8]) * l + x[9];
  out.wq = x[2];
  if (out.mode != 1 && out.mode != 2) {  // the value is read with L alone
    return take(leaky_queue::make(rate{l, static_cast<tick>(std::clamp<i128>(w, 1, max_quantity))}, 1), "leaky queue",
                out);
  }
  if (w < 1 || w > max_quantity) return bad("a leaky queue leaf's window must be 1 to 2^62");
  // c − 1 = Y / W; a report's Y saturated at K + 1 (not a multiple of W) is
  // a cost whose (c − 1)·W passes K: the charge saturates there alike.
  const bool saturated = out.mode == 2 && y == k + 1;
  if (y % w != 0 && !saturated) return bad("a leaky queue leaf's (c-1)*W is not a multiple of its window");
  const i128 c = y / w + (y % w != 0 ? 2 : 1);
  if (c > max_quantity) return bad("a leaky queue leaf's cost is past 2^62");
  i128 q = 1;  // a report's cost past the queue (X below every backlog): any queue below c with the bound K
  if (xx >= 0) {
    if (xx % w != 0) return bad("a leaky queue leaf's (Q-c)*W is not a multiple of its window");
    q = xx / w + c;
  } else if (out.mode != 2 || c < 2) {
    return bad("a leaky queue leaf's (Q-c)*W is negative for a cost its queue holds");
  }
  if (q > max_quantity) return bad("a leaky queue leaf's queue is past 2^62");
  if (report_debt_bound(l, q * w - 1) != k) {
    // A report whose cost is past its queue no longer carries the queue (X
    // is sent far below any backlog): the library charges it.
    if (out.mode == 2 && xx < 0) return not_here("a leaky queue report past its queue");
    return bad("a leaky queue leaf's K is not its queue's report bound");
  }
  out.cost = static_cast<std::int64_t>(c);
  return take(leaky_queue::make(rate{l, static_cast<tick>(w)}, static_cast<std::int64_t>(q)), "leaky queue", out);
}

/// The window index k (limbs h l) and offset o of a windowed leaf, checked
/// to split `sent` in windows of `w` from an origin in [0, w) (0 when
/// `zero_origin`); the origin, or an error reply.
std::optional<reply> split_of(std::int64_t h, std::int64_t lo, std::int64_t o, i128 w, tick sent, bool zero_origin,
                              const char* leaf, tick& origin) {
  if (!limbs_ok(h, lo)) return bad(std::string("a ") + leaf + " leaf's window limbs");
  if (w < 1 || o < 0 || o >= w) return bad(std::string("a ") + leaf + " leaf's offset must be below its window");
  const i128 r = static_cast<i128>(sent) - static_cast<i128>(join(h, lo)) * w - o;
  if (r < 0 || r >= w || (zero_origin && r != 0))
    return bad(std::string("a ") + leaf + " leaf's window and offset are not the call's instant");
  origin = static_cast<tick>(r);
  return std::nullopt;
}

std::optional<reply> read_fixed(std::span<const std::int64_t> x, tick sent, reading& out) {
  out.mode = x[0];
  out.cost = x[5];
  tick origin = 0;
  if (auto e = split_of(x[1], x[2], x[3], x[6], sent, false, "fixed window", origin)) return e;
  return take(fixed_window::make(rate{x[4], x[6]}, origin), "fixed window", out);
}

std::optional<reply> read_counter(std::span<const std::int64_t> x, tick sent, reading& out) {
  out.mode = x[0];
  out.cost = x[6];
  tick origin = 0;
  if (auto e = split_of(x[1], x[2], x[3], x[5], sent, true, "sliding counter", origin)) return e;
  return take(sliding_counter::make(rate{x[4], x[5]}), "sliding counter", out);
}

std::optional<reply> read_log(std::span<const std::int64_t> x, tick, reading& out) {
  out.mode = x[0];
  out.cost = x[2];
  return take(sliding_log::make(rate{x[1], x[3]}), "sliding log", out);
}

std::optional<reply> read_buckets(std::span<const std::int64_t> x, tick sent, reading& out) {
  out.mode = x[0];
  out.cost = x[5];
  if (x[6] < 1 || x[7] < 1 || x[7] % x[6] != 0) return bad("a sliding buckets leaf's buckets must divide its window");
  tick origin = 0;
  if (auto e = split_of(x[1], x[2], x[3], x[7] / x[6], sent, true, "sliding buckets", origin)) return e;
  return take(sliding_buckets::make(rate{x[4], x[7]}, x[6]), "sliding buckets", out);
}

std::optional<reply> read_quota(std::span<const std::int64_t> x, tick, reading& out) {
  out.mode = x[0];
  out.cost = x[2];
  return take(quota::make(x[1]), "quota", out);
}

std::optional<reply> read_concurrency(std::span<const std::int64_t> x, tick, reading& out) {
  out.mode = x[0];
  out.cost = x[2];
  out.charges = false;
  if (!limbs_ok(x[3], x[4])) return bad("a concurrency leaf's lease length limbs");
  if (x[5] < 0 || x[5] >= p32 || x[6] < 0 || x[6] >= p32) return bad("a concurrency leaf's nonce halves");
  out.nonce = static_cast<std::uint64_t>(x[5]) << 32 | static_cast<std::uint64_t>(x[6]);
  return take(concurrency::make(x[1], join(x[3], x[4])), "concurrency", out);
}

/// Every leaf of the library: its letter, how many numbers its arguments
/// are (main.lua, `arg_bytes`, in doubles), their reader, and whether its
/// reading is kept (`memo` below): not for the windowed leaves, whose
/// reading depends on the instant sent, nor for a concurrency leaf, whose
/// arguments carry a new nonce in every call.
struct leaf_kind {
  char letter;
  std::size_t numbers;
  reader read;
  bool kept;
};
constexpr std::array<leaf_kind, 8> kinds{{
    {portable::of<gcra>::letter, 8, read_gcra, true},
    {portable::of<leaky_queue>::letter, 10, read_leaky, true},
    {portable::of<fixed_window>::letter, 7, read_fixed, false},
    {portable::of<sliding_counter>::letter, 7, read_counter, false},
    {portable::of<quota>::letter, 3, read_quota, true},
    {portable::of<sliding_log>::letter, 4, read_log, true},
    {portable::of<sliding_buckets>::letter, 8, read_buckets, false},
    {portable::of<concurrency>::letter, 7, read_concurrency, false},
}};
constexpr std::size_t most_numbers = 10;

/// The readings of the leaves met last, by their letter and arguments'
/// bytes: a kept leaf's reading is a function of these alone, and building
/// it again (GCRA's gcd and divisor in 128 bits, the core's checks) was a
/// tenth of SLUICE.ONE's own code (docs/redis.md, "What it costs Redis").
/// Direct-mapped; a reading that is an error is not kept. Redis runs a
/// module's commands on its main thread only.
class reading_memo {
 public:
  /// The reading of `kind`'s arguments `args` (8 bytes per number, their
  /// numbers `x`), kept or read now; an error reply when they are not ones
  /// the store sends.
  const reading* find(const leaf_kind& kind, std::string_view args, std::span<const std::int64_t> x, tick sent,
                      reading& fresh, std::optional<reply>& error) {
    if (!kind.kept) return read(kind, x, sent, fresh, error);
    std::uint64_t h = static_cast<unsigned char>(kind.letter);
    for (const std::int64_t v : x) h = (h ^ static_cast<std::uint64_t>(v)) * 0x9E3779B97F4A7C15ULL;
    entry& e = slots_[(h >> 58) % slots_.size()];
    if (e.letter == kind.letter && std::string_view(e.bytes.data(), e.size) == args) return &e.r;
    const reading* r = read(kind, x, sent, fresh, error);
    if (r == nullptr) return nullptr;
    e.letter = 0;  // an entry half written is never found
    e.r = fresh;
    std::copy(args.begin(), args.end(), e.bytes.begin());
    e.size = args.size();
    e.letter = kind.letter;
    return &e.r;
  }

 private:
  static const reading* read(const leaf_kind& kind, std::span<const std::int64_t> x, tick sent, reading& out,
                             std::optional<reply>& error) {
    error = kind.read(x, sent, out);
    return error ? nullptr : &out;
  }
  struct entry {
    char letter = 0;  ///< 0: empty
    std::array<char, 8 * most_numbers> bytes{};
    std::size_t size = 0;
    reading r;
  };
  std::array<entry, 64> slots_{};
};
reading_memo memo;

constexpr const leaf_kind* kind_of(char letter) noexcept {
  for (const leaf_kind& k : kinds)
    if (k.letter == letter) return &k;
  return nullptr;
}

/// Whether every algorithm with a leaf state has a reader: a new algorithm
/// fails to compile here until it has one.
template <std::size_t... I>
constexpr bool every_letter_read(std::index_sequence<I...>) noexcept {
  const auto read = []<typename P>(const P*) {
    if constexpr (holds_no_leaf_state<P>) {
      return true;
    } else {
      return kind_of(portable::of<P>::letter) != nullptr;
    }
  };
  return (read(static_cast<const std::variant_alternative_t<I, any_policy>*>(nullptr)) && ...);
}
static_assert(every_letter_read(std::make_index_sequence<std::variant_size_v<any_policy>>{}),
              "a new algorithm: give its leaf a reader in `kinds` (docs/architecture.md, \"Adding an algorithm\")");

}  // namespace

bool is_leaf_letter(char c) noexcept { return kind_of(c) != nullptr; }

std::size_t leaf_arg_bytes(char letter) noexcept {
  const leaf_kind* k = kind_of(letter);
  return k != nullptr ? 8 * k->numbers : 0;
}

std::string decided_letters() {
  std::string out;
  for (const leaf_kind& k : kinds) out.push_back(k.letter);
  return out;
}

leaf_step step_leaf(std::string_view tag, std::string_view args, const std::optional<std::string>& before, tick now,
                    std::int64_t shift) {
  const leaf_kind* kind = tag.size() == leaf_tag_size ? kind_of(tag[0]) : nullptr;
  if (kind == nullptr) return fail(reply::error("sluice: bad request"));
  std::array<std::int64_t, most_numbers> x{};
  if (args.size() != 8 * kind->numbers) return fail(bad("a leaf's arguments are cut short"));
  for (std::size_t i = 0; i < kind->numbers; ++i)
    if (!redis::get_number(args.data() + 8 * i, x[i]))
      return fail(bad(std::string("a '") + kind->letter + "' leaf's arguments are not integers below 2^53"));
  const i128 sent = static_cast<i128>(now) - shift;
  if (sent < detail::i64_min || sent > detail::i64_max) return fail(bad("the instant sent"));
  reading fresh;
  std::optional<reply> error;
  const reading* found = memo.find(*kind, args, std::span<const std::int64_t>(x.data(), kind->numbers),
                                   static_cast<tick>(sent), fresh, error);
  if (found == nullptr) return fail(std::move(*error));
  const reading& r = *found;
  if (!r.policy) return {};  // mode 0 with parameters no policy has: nothing to read the value with
  redis::leaf_plan lp;
  lp.policy = &*r.policy;
  lp.letter = kind->letter;
  std::copy(tag.begin(), tag.end(), lp.tag);
  lp.wq = r.wq;
  tick latest = detail::i64_min;
  auto st = redis::decode_value(lp, before ? std::optional<std::string_view>(*before) : std::nullopt, latest);
  if (!st)
    return fail(reply::error("sluice: corrupt state (" + std::string(name_of(algorithm_of(*r.policy))) + ": " +
                             st.err().message + ")"));
  if (r.mode != 1 && r.mode != 2) return {};
  leaf_step out;
  {
    // A concurrency leaf's lease takes the client's nonce (no other leaf
    // reads it: its thread-local costs a call in a shared object).
    std::optional<lease_scope> scope;
    if (kind->letter == portable::of<concurrency>::letter) scope.emplace(r.nonce);
    if (r.mode == 2) {
      any_state probe = st.value();  // whether it fits: what a decision would answer
      out.ok = decide(*r.policy, probe, now, r.cost).allowed;
      if (!r.charges) return out;                        // answered, nothing charged
      (void)report(*r.policy, st.value(), now, r.cost);  // charged whatever it fits
    } else {
      out.ok = decide(*r.policy, st.value(), now, r.cost).allowed;
      if (!out.ok) return out;
    }
  }
  std::string v;
  if (!redis::encode_value(lp, st.value(), std::max(now, latest), v))
    return fail(bad("the state after this call is outside what the library holds"));
  out.ttl = redis::value_ticks_to_fresh(lp, v);
  out.after = std::move(v);
  return out;
}

}  // namespace sluice::redis_module
