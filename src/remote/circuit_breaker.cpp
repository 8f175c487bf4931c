// circuit_breaker: the transitions, under one mutex.
#include "sluice/remote/circuit_breaker.hpp"

#include <algorithm>
#include <bit>

namespace sluice::remote {

circuit_breaker::circuit_breaker(circuit_breaker_options options) : options_(options) {
  options_.consecutive_failures = std::max<std::uint32_t>(1, options_.consecutive_failures);
  options_.rate_window = std::clamp<std::uint32_t>(options_.rate_window, 1, 64);
  options_.rate_min_calls = std::clamp<std::uint32_t>(options_.rate_min_calls, 1, options_.rate_window);
  options_.cool_down = std::max<std::int64_t>(0, options_.cool_down);
}

std::string_view circuit_breaker::name(state s) noexcept {
  switch (s) {
    case state::closed:
      return "closed";
    case state::open:
      return "open";
    case state::half_open:
      return "half-open";
  }
  return "?";
}

namespace {
// a + b, saturating (cool-downs near the end of time stay "not yet").
std::int64_t add_sat(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
}  // namespace

bool circuit_breaker::allow_call(std::int64_t now) {
  if (state_.load(std::memory_order_acquire) == state::closed) return true;
  std::lock_guard lock(mu_);
  switch (state_.load(std::memory_order_relaxed)) {
    case state::closed:
      return true;
    case state::open:
      if (now < add_sat(opened_at_, options_.cool_down)) return false;
      state_.store(state::half_open, std::memory_order_release);
      probe_at_ = now;
      return true;
    case state::half_open:
      // The probe's outcome never came back: let a new one through after a cool-down.
      if (now < add_sat(probe_at_, options_.cool_down)) return false;
      probe_at_ = now;
      return true;
  }
  return false;
}

bool circuit_breaker::rate_trips() const {
  if (options_.failure_rate_percent == 0 || recorded_ < options_.rate_min_calls) return false;
  const std::uint64_t mask = options_.rate_window == 64 ? ~0ULL : (1ULL << options_.rate_window) - 1;
  const auto failed = static_cast<std::uint64_t>(std::popcount(history_ & mask));
  return failed * 100 >= static_cast<std::uint64_t>(options_.failure_rate_percent) * recorded_;
}

void circuit_breaker::open(std::int64_t now) {
  state_.store(state::open, std::memory_order_release);
  opened_at_ = now;
  opened_.fetch_add(1, std::memory_order_relaxed);
  failures_in_row_ = 0;
  history_ = 0;
  recorded_ = 0;
}

bool circuit_breaker::record_success(std::int64_t now) {
  (void)now;
  std::lock_guard lock(mu_);
  failures_in_row_ = 0;
  history_ <<= 1;
  recorded_ = std::min(recorded_ + 1, options_.rate_window);
  if (state_.load(std::memory_order_relaxed) == state::closed) return false;
  state_.store(state::closed, std::memory_order_release);
  history_ = 0;
  recorded_ = 0;
  return true;
}

bool circuit_breaker::record_failure(std::int64_t now) {
  std::lock_guard lock(mu_);
  switch (state_.load(std::memory_order_relaxed)) {
    case state::half_open:
      open(now);
      return false;
    case state::open:
      return false;  // a call let through before it opened
    case state::closed:
      break;
  }
  ++failures_in_row_;
  history_ = (history_ << 1) | 1;
  recorded_ = std::min(recorded_ + 1, options_.rate_window);
  if (failures_in_row_ < options_.consecutive_failures && !rate_trips()) return false;
  open(now);
  return true;
}

}  // namespace sluice::remote
