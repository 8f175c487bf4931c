// The Redis store's clocks (semantics.md, "Clocks of a fleet"; docs/redis.md,
// "The store's clock"): the instant a call sends, the instant a reply at the
// store's clock returns, this process's estimate of the store's clock (for
// the deny cache), and the measured offset to it (for the operator).
#include <charconv>
#include <chrono>

#include "redis/client/binary.hpp"
#include "redis/store/store_impl.hpp"
#include "sluice/core/rate.hpp"

namespace sluice {

namespace {

constexpr std::int64_t p31 = std::int64_t{1} << 31;
constexpr std::int64_t p32 = std::int64_t{1} << 32;

std::int64_t realtime_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t magnitude(std::int64_t v) noexcept { return v < 0 ? (v == detail::i64_min ? detail::i64_max : -v) : v; }

}  // namespace

void redis_store::impl::put_instant(std::string& out, tick now) const {
  if (!at_store_clock()) return redis::put_limbs(out, now);
  std::int64_t h = 0;
  std::int64_t l = 0;
  redis::split_limbs(now, h, l);
  redis::put_number(out, h + p32);  // outside every instant's range: "at the store's clock"
  redis::put_number(out, l);
}

bool redis_store::impl::take_instant(redis::reply& rep, std::int64_t sent_ns, tick& now) {
  if (!at_store_clock() || rep.is_error()) return true;
  if (rep.kind != redis::reply::type::array || rep.elements.size() < 2) return false;
  auto& e = rep.elements;
  const auto h = e[e.size() - 2].as_integer();
  const auto l = e.back().as_integer();
  if (!h || !l || *h < -p31 || *h >= p31 || *l < 0 || *l >= p32) return false;
  e.resize(e.size() - 2);
  now = *h * p32 + *l;
  // The store's clock read that instant after the call was sent: at any
  // later steady time s, the store's clock is at most `now` plus s minus
  // the send time (an upper bound, up to the clocks' rates).
  const detail::i128 base = static_cast<detail::i128>(now) * opt.tick_ns - sent_ns;
  if (base > detail::i64_max || base < detail::i64_min) return true;
  store_minus_steady.store(static_cast<std::int64_t>(base), std::memory_order_relaxed);
  have_store_estimate.store(true, std::memory_order_release);
  return true;
}

tick redis_store::impl::lookup_now(tick now) const noexcept {
  if (!at_store_clock()) return now;
  if (!have_store_estimate.load(std::memory_order_acquire)) {
    // No reply yet: this machine's clock, corrected by the measured offset
    // once there is one (the request's `now` may be anything: it is not an
    // instant of the store's clock).
    const std::int64_t off =
        have_offset.load(std::memory_order_relaxed) ? offset_ns.load(std::memory_order_relaxed) : 0;
    return static_cast<tick>((static_cast<detail::i128>(realtime_ns()) + off) / opt.tick_ns);
  }
  const detail::i128 ns = static_cast<detail::i128>(remote::circuit_breaker::steady_ns()) +
                          store_minus_steady.load(std::memory_order_relaxed);
  const detail::i128 t = (ns + opt.tick_ns - 1) / opt.tick_ns;  // rounded up: never below the bound
  return t > detail::i64_max ? detail::i64_max : static_cast<tick>(t);
}

bool redis_store::impl::ahead_of_store(tick now) const noexcept {
  if (at_store_clock() || opt.tick_ns <= 0 || !have_offset.load(std::memory_order_relaxed)) return false;
  const detail::i128 store_now =
      (static_cast<detail::i128>(realtime_ns()) + offset_ns.load(std::memory_order_relaxed)) / opt.tick_ns;
  return static_cast<detail::i128>(now) > store_now + opt.skew_tolerance;
}

void redis_store::impl::maybe_measure_clock() {
  const std::int64_t s = remote::circuit_breaker::steady_ns();
  std::int64_t next = next_measure_ns.load(std::memory_order_relaxed);
  if (s < next || !next_measure_ns.compare_exchange_strong(next, s + 1'000'000'000, std::memory_order_relaxed)) return;
  enter();
  slow.post([this] {
    measure_clock();
    leave();
  });
}

std::optional<std::int64_t> redis_store::impl::measure_clock() {
  const std::int64_t t0 = realtime_ns();
  const auto res = cli->call({"TIME"});
  const std::int64_t t1 = realtime_ns();
  const auto* rep = std::get_if<redis::reply>(&res);
  const auto* arr = rep != nullptr ? rep->as_array() : nullptr;
  if (arr == nullptr || arr->size() != 2) return std::nullopt;
  std::int64_t part[2] = {0, 0};
  for (std::size_t i = 0; i < 2; ++i) {
    const auto text = (*arr)[i].as_string();
    if (!text) return std::nullopt;
    const auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), part[i]);
    if (ec != std::errc{} || p != text->data() + text->size() || part[i] < 0 || part[i] > 1'000'000'000'000)
      return std::nullopt;
  }
  // TIME was read between t0 and t1: set against their midpoint.
  const std::int64_t offset = part[0] * 1'000'000'000 + part[1] * 1000 - (t0 + (t1 - t0) / 2);
  offset_ns.store(offset, std::memory_order_relaxed);
  have_offset.store(true, std::memory_order_relaxed);
  const std::int64_t bound = std::chrono::duration_cast<std::chrono::nanoseconds>(opt.max_clock_offset).count();
  if (bound <= 0) return offset;
  const bool past = magnitude(offset) > bound;
  if (past == offset_past_bound.exchange(past) || !opt.on_health_change) return offset;
  const std::string how = offset > 0 ? "behind" : "ahead of";
  opt.on_health_change(
      "sluice: this process's clock is " + format_seconds(magnitude(offset)) + " s " + how + " the store's (" + node +
      ")" + (past ? ", past max_clock_offset " : ", back within max_clock_offset ") + format_seconds(bound) + " s" +
      (at_store_clock() ? " (decisions use the store's clock)"
                        : " (decisions use this process's clock: semantics.md, \"Clocks of a fleet\")"));
  return offset;
}

}  // namespace sluice
