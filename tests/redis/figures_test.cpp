// call_figures and the breaker's transitions: what /metrics and the health
// lines are made of, against their definitions, with explicit durations.
#include "redis/client/figures.hpp"

#include <gtest/gtest.h>

#include "sluice/remote/circuit_breaker.hpp"

namespace sluice::redis::redis_figures_test {
namespace {

std::size_t index_of(std::string_view name) {
  for (std::size_t i = 0; i < redis_store_stats::failure_reasons.size(); ++i)
    if (redis_store_stats::failure_reasons[i] == name) return i;
  ADD_FAILURE() << name;
  return 0;
}

TEST(CallFigures, EachFailureUnderItsReason) {
  call_figures f;
  f.note(call_error{call_error::timeout, "127.0.0.1:1: no reply", true});
  f.note(call_error{call_error::refused, "127.0.0.1:1: Connection refused", false});
  f.note(call_error{call_error::io, "127.0.0.1:1: Connection reset", true});
  f.note(call_error{call_error::auth, "127.0.0.1:1: AUTH failed: WRONGPASS invalid", false});
  f.note(call_error{call_error::server, "OOM command not allowed when used memory > 'maxmemory'.", false});
  f.note(
      call_error{call_error::server, "SCRIPT LOAD of library sluice_v2_x: NOPERM this user has no permissions", false});
  f.note(reply::make_error("CLUSTERDOWN The cluster is down"));
  f.note(reply::make_error("BUSY Redis is busy running a script"));
  f.note(reply::make_error("ERR something else"));
  f.note(call_error{call_error::protocol, "a reply of an unknown RESP type", true});
  // Not failures of the store: a call the breaker kept back, the library's
  // verdict on a key's value, a reply.
  f.note(call_error{call_error::breaker, "not sent", false});
  f.note(reply::make_error("sluice: corrupt state (gcra length)"));
  f.note(call_error{call_error::server, "sluice: corrupt state (not a string key)", false});
  f.note(reply::make_integer(1));
  redis_store_stats s;
  f.read(s);
  for (const auto name :
       {"timeout", "refused", "io", "auth", "oom", "noperm", "cluster-down", "busy", "server", "protocol"})
    EXPECT_EQ(s.call_failures[index_of(name)], 1U) << name;
  EXPECT_EQ(f.last_reason(), failure_reason::protocol);
}

TEST(CallFigures, ATlsFailureUnderItsCauseWithItsWords) {
  // The words tls.cpp writes (tls_words) name the cause, whichever kind
  // of error carried them (refused at the handshake, io at the first read,
  // timeout for a handshake that got no answer).
  call_figures f;
  const std::string at = "127.0.0.1:6380: ";
  const std::pair<call_error, std::string_view> cases[] = {
      {{call_error::refused, at + std::string(tls_words::untrusted) + " (self-signed certificate)", false},
       "untrusted"},
      {{call_error::refused, at + std::string(tls_words::name_mismatch) + " \"x\" (hostname mismatch)", false},
       "name-mismatch"},
      {{call_error::refused, at + std::string(tls_words::expired) + " (certificate has expired)", false}, "expired"},
      {{call_error::refused, at + "read: " + std::string(tls_words::no_client_certificate) + ": tlsv13 alert", false},
       "no-client-certificate"},
      {{call_error::refused, at + std::string(tls_words::plaintext_peer) + " (wrong version number)", false},
       "plaintext-peer"},
      {{call_error::timeout, at + "no TLS handshake within the connect timeout (200 ms): a plaintext port?", false},
       "plaintext-peer"},
      {{call_error::refused, at + "TLS: decryption failed", false}, "handshake"},
  };
  for (const auto& [e, name] : cases) {
    f.note(e);
    redis_store_stats s;
    f.read(s);
    EXPECT_EQ(s.call_failures[index_of(name)], name == "plaintext-peer" && e.kind == call_error::timeout ? 2U : 1U)
        << e.message;
    EXPECT_EQ(f.last_failure(), std::string(name) + ": " + e.message);
  }
  // A connection refused says no TLS words: refused, as before.
  f.note(call_error{call_error::refused, at + "connect: Connection refused", false});
  redis_store_stats s;
  f.read(s);
  EXPECT_EQ(s.call_failures[index_of("refused")], 1U);
}

TEST(CallFigures, LatencyBucketsHoldTheirUpperBound) {
  // Bucket i counts durations d with bounds[i-1] < d <= bounds[i]: a
  // duration equal to a bound is in that bound's bucket.
  call_figures f;
  const auto& b = redis_store_stats::call_latency_bounds;
  f.observe(0);
  f.observe(b[0]);
  f.observe(b[0] + 1);
  f.observe(b[3]);
  f.observe(b.back() + 1);
  f.observe(-5);  // a clock that stepped back: counted as 0
  redis_store_stats s;
  f.read(s);
  EXPECT_EQ(s.call_latency_buckets[0], 3U);
  EXPECT_EQ(s.call_latency_buckets[1], 1U);
  EXPECT_EQ(s.call_latency_buckets[3], 1U);
  EXPECT_EQ(s.call_latency_buckets.back(), 1U);
  std::uint64_t n = 0;
  for (auto c : s.call_latency_buckets) n += c;
  EXPECT_EQ(n, 6U);
  EXPECT_EQ(s.call_latency_sum_ns, static_cast<std::uint64_t>(b[0] + b[0] + 1 + b[3] + b.back() + 1));
}

TEST(CircuitBreaker, TellsEachChangeOfHealthOnce) {
  remote::circuit_breaker_options o;
  o.consecutive_failures = 2;
  o.cool_down = 100;
  remote::circuit_breaker b(o);
  EXPECT_FALSE(b.record_failure(1));
  EXPECT_TRUE(b.record_failure(2));     // closed -> open
  EXPECT_FALSE(b.record_failure(3));    // already open
  EXPECT_TRUE(b.allow_call(200));       // half-open: the probe
  EXPECT_FALSE(b.record_failure(201));  // reopens: it was never healthy meanwhile
  EXPECT_TRUE(b.allow_call(400));
  EXPECT_TRUE(b.record_success(401));   // -> closed
  EXPECT_FALSE(b.record_success(402));  // already closed
}

}  // namespace
}  // namespace sluice::redis::redis_figures_test
