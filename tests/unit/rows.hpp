// Shared by the unit tests: one row of an explicit-time table, and the loop
// that plays a table, in order, through one limiter state.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/decision.hpp"
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"

namespace sluice {

/// Prints a decision field by field when an expectation fails.
inline void PrintTo(const decision& d, std::ostream* os) {
  const auto ticks = [](tick t) { return t == never ? std::string("never") : std::to_string(t); };
  *os << "{allowed=" << (d.allowed ? "yes" : "no") << ", remaining=" << d.remaining
      << ", retry_after=" << ticks(d.retry_after) << ", reset_after=" << ticks(d.reset_after)
      << ", release_after=" << ticks(d.release_after) << "}";
}

namespace test {

inline constexpr tick N = never;

/// One request and the decision semantics.md says it gets.
struct row {
  tick now;
  std::int64_t cost;
  bool allowed;
  std::int64_t remaining;
  tick retry_after;
  tick reset_after;
  tick release_after;
};

/// A row for every limiter but the leaky queue (release_after is 0).
constexpr row r(tick now, std::int64_t cost, bool allowed, std::int64_t remaining, tick retry_after, tick reset_after) {
  return row{now, cost, allowed, remaining, retry_after, reset_after, 0};
}

inline decision expected(const row& w) {
  decision d;
  d.allowed = w.allowed;
  d.remaining = w.remaining;
  d.retry_after = w.retry_after;
  d.reset_after = w.reset_after;
  d.release_after = w.release_after;
  return d;
}

/// Plays `rows` in order through `s`, checking every field of every decision.
template <typename Policy, typename State>
void play(const Policy& p, State& s, const std::vector<row>& rows) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const row& w = rows[i];
    SCOPED_TRACE("row " + std::to_string(i + 1) + ": now=" + std::to_string(w.now) + " cost=" + std::to_string(w.cost));
    const decision got = decide(p, s, w.now, w.cost);
    EXPECT_EQ(got, expected(w));
  }
}

/// Plays `rows` from a fresh state.
template <typename Policy>
void play(const Policy& p, const std::vector<row>& rows) {
  typename Policy::state s{};
  play(p, s, rows);
}

/// The policy of an ok() result; fails the test (and returns a copy of the
/// error-free fallback) otherwise.
template <typename T>
T ok(const result<T>& r) {
  if (!r.ok()) ADD_FAILURE() << "unexpected configuration error: " << r.err().what();
  return r.value();
}

/// The field a failed build names ("" and a test failure if it did not fail).
template <typename T>
std::string field_of(const result<T>& r) {
  if (r.ok()) {
    ADD_FAILURE() << "expected a configuration error";
    return "";
  }
  EXPECT_FALSE(r.err().message.empty());
  return r.err().field;
}

/// Builds a spec field by field (designated initializers would leave the
/// other fields to -Wmissing-field-initializers).
struct spec_builder {
  spec s;
  spec_builder& burst(std::int64_t v) {
    s.burst = v;
    return *this;
  }
  spec_builder& buckets(std::int64_t v) {
    s.buckets = v;
    return *this;
  }
  spec_builder& queue(std::int64_t v) {
    s.queue = v;
    return *this;
  }
  spec_builder& units(std::int64_t v) {
    s.units = v;
    return *this;
  }
  spec_builder& origin(tick v) {
    s.origin = v;
    return *this;
  }
  operator spec() const { return s; }  // NOLINT(google-explicit-constructor)
};

inline spec_builder spec_of(algorithm a, rate limit = rate{}) {
  spec_builder b;
  b.s.algo = a;
  b.s.limit = limit;
  return b;
}

}  // namespace test
}  // namespace sluice
