// rediss:// against a TLS-only redis-server with certificates made now by
// openssl (tests/support/tls_certs.hpp): calls and the store's conformance
// through it; an untrusted certificate, a wrong name, a plaintext port, a
// missing client certificate and unreadable files each refused with their
// own message, never showing the password; the deny cache never answering.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "conformance/traces.hpp"
#include "redis/client/sync_client.hpp"
#include "redis/conformance_draw.hpp"
#include "redis/store_support.hpp"
#include "sluice/core/policy_expr.hpp"
#include "support/redis_server.hpp"
#include "support/tls_certs.hpp"

namespace sluice::redis_test::redis_tls_test {
namespace {

using namespace std::chrono_literals;
using redis::call_error;
using redis::call_result;
using redis::reply;
using testing::redis_server;
using testing::redis_server_options;
using testing::tls_certs;

tls_certs& certs() {
  static tls_certs c;
  return c;
}

redis_server_options tls_options(bool auth_clients = false, std::string password = "") {
  redis_server_options o;
  o.tls = redis_server_options::tls_files{certs().server_cert(), certs().server_key(), certs().ca(), auth_clients};
  o.password = std::move(password);
  return o;
}

std::string tls_url(const redis_server& srv, const std::string& query, const std::string& login = "") {
  return "rediss://" + login + "127.0.0.1:" + std::to_string(srv.port()) + (query.empty() ? "" : "?" + query);
}

std::unique_ptr<redis::sync_client> open_sync(const std::string& text) {
  auto u = redis::parse_url(text);
  EXPECT_TRUE(u.ok()) << (u.ok() ? "" : u.err().what());
  redis::async_client_options o;
  o.where = u.value();
  o.connect_timeout = 2000ms;
  o.command_timeout = 2000ms;
  auto c = redis::sync_client::open(o);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.err().what());
  return c.ok() ? std::move(c).value() : nullptr;
}

// The error of a first call that must be refused.
call_error refused(const std::string& text) {
  auto c = open_sync(text);
  if (!c) return {};
  call_result r = c->call({"PING"});
  if (!std::holds_alternative<call_error>(r)) {
    ADD_FAILURE() << text << ": answered";
    return {};
  }
  return std::get<call_error>(r);
}

TEST(Tls, CallsThroughATlsOnlyServer) {
  redis_server srv(tls_options(false, "s3cret"));
  auto c = open_sync(tls_url(srv, "ca_file=" + certs().ca(), ":s3cret@"));
  ASSERT_TRUE(c);
  auto r = c->call({"SET", "k", "v"});
  ASSERT_TRUE(std::holds_alternative<reply>(r)) << std::get<call_error>(r).what();
  EXPECT_EQ(std::get<reply>(c->call({"GET", "k"})).as_string(), "v");
  // The name verified: localhost (a DNS SAN) as well as 127.0.0.1 (an IP SAN).
  auto by_name = open_sync(tls_url(srv, "ca_file=" + certs().ca() + "&server_name=localhost", ":s3cret@"));
  EXPECT_TRUE(std::holds_alternative<reply>(by_name->call({"PING"})));
}

TEST(Tls, AnUntrustedCertificateIsRefusedAsSuch) {
  redis_server srv(tls_options(false, "s3cret"));
  for (const std::string& q : {std::string(), "ca_file=" + certs().other_ca()}) {
    const call_error e = refused(tls_url(srv, q, ":s3cret@"));
    EXPECT_EQ(e.kind, call_error::refused) << e.what();
    EXPECT_FALSE(e.maybe_applied);
    EXPECT_NE(e.message.find("not trusted"), std::string::npos) << e.message;
    std::printf("untrusted: %s\n", e.message.c_str());
    EXPECT_EQ(e.message.find("s3cret"), std::string::npos) << e.message;
  }
  // verify=no: no check at all (the store warns).
  auto c = open_sync(tls_url(srv, "verify=no", ":s3cret@"));
  EXPECT_TRUE(std::holds_alternative<reply>(c->call({"PING"})));
}

TEST(Tls, AWrongNameIsRefusedAsSuch) {
  redis_server srv(tls_options(false, "s3cret"));
  const call_error e = refused(tls_url(srv, "ca_file=" + certs().ca() + "&server_name=redis.example", ":s3cret@"));
  EXPECT_EQ(e.kind, call_error::refused) << e.what();
  EXPECT_NE(e.message.find("does not match the name \"redis.example\""), std::string::npos) << e.message;
  std::printf("wrong name: %s\n", e.message.c_str());
  EXPECT_EQ(e.message.find("s3cret"), std::string::npos) << e.message;
}

TEST(Tls, APlaintextPortIsRefusedAsSuch) {
  redis_server plain({.password = "s3cret"});
  const call_error e = refused(tls_url(plain, "ca_file=" + certs().ca(), ":s3cret@"));
  EXPECT_FALSE(e.maybe_applied);
  EXPECT_NE(e.message.find("plaintext port"), std::string::npos) << e.message;
  std::printf("plaintext: %s\n", e.message.c_str());
  EXPECT_EQ(e.message.find("s3cret"), std::string::npos) << e.message;
}

TEST(Tls, ClientCertificates) {
  redis_server srv(tls_options(true));
  const call_error e = refused(tls_url(srv, "ca_file=" + certs().ca()));
  EXPECT_EQ(e.kind, call_error::refused) << e.what();
  EXPECT_NE(e.message.find("client certificate"), std::string::npos) << e.message;
  std::printf("no client certificate: %s\n", e.message.c_str());
  auto c = open_sync(tls_url(
      srv, "ca_file=" + certs().ca() + "&cert_file=" + certs().client_cert() + "&key_file=" + certs().client_key()));
  auto r = c->call({"PING"});
  EXPECT_TRUE(std::holds_alternative<reply>(r)) << std::get<call_error>(r).what();
}

TEST(Tls, UnreadableFilesAreErrorsNamingTheSetting) {
  redis_server srv(tls_options());
  struct bad {
    std::string query, field;
  };
  for (const bad& b : {bad{"ca_file=/nonexistent/ca.pem", "ca_file"},
                       bad{"cert_file=/nonexistent/c.pem&key_file=" + certs().client_key(), "cert_file"},
                       bad{"cert_file=" + certs().client_cert() + "&key_file=" + certs().ca(), "key_file"},
                       bad{"cert_file=" + certs().client_cert() + "&key_file=" + certs().server_key(), "key_file"}}) {
    store_options o;
    o.url = tls_url(srv, b.query, ":pw@");
    auto st = redis_store::open(o);
    ASSERT_FALSE(st.ok()) << b.query;
    EXPECT_EQ(st.err().field, b.field) << st.err().what();
    EXPECT_EQ(st.err().what().find(":pw"), std::string::npos);
  }
}

class TlsConformance : public ::testing::TestWithParam<algorithm> {};

TEST_P(TlsConformance, TracesPipelinedThroughTls) {
  redis_server srv(tls_options());
  store_options o;
  o.command_timeout = 10s;
  o.connect_timeout = 2s;
  auto st = open_store(o, tls_url(srv, "ca_file=" + certs().ca()));
  ASSERT_TRUE(st);
  constexpr std::size_t n = 300;
  std::size_t refused_traces = 0;
  const auto traces = draw_traces(GetParam(), n, 1, refused_traces, true);
  const auto prefix = [](std::size_t j) { return "c" + std::to_string(j) + ":"; };
  EXPECT_EQ(run_in_groups(*st, traces, prefix, prefix), n);
  EXPECT_EQ(st->redis_stats().mismatches, 0U);
  EXPECT_EQ(st->stats().store_failures, 0U);
}

// Over TLS no read of the subscription can be gated (docs/redis.md, "The
// deny cache"), so the cache, though subscribed, never answers: every
// denial comes from Redis, each counted as bypassed.
TEST(Tls, TheDenyCacheNeverAnswers) {
  redis_server srv(tls_options());
  store_options o;
  o.deny_cache = true;
  o.command_timeout = 2s;
  o.connect_timeout = 2s;
  auto st = open_store(o, tls_url(srv, "ca_file=" + certs().ca()));
  ASSERT_TRUE(st);
  ASSERT_TRUE(st->redis_stats().deny_cache_subscribed);
  const auto p = st->define_at("fw", parse_policy("fixed-window 1/1h").value(), 0);
  ASSERT_TRUE(p.ok()) << p.err().what();
  const check c{p.value(), "k"};
  ASSERT_TRUE(st->decide_at(one_check(c, 1)).d.allowed);
  for (int i = 0; i < 3; ++i) {
    const auto d = st->decide_at(one_check(c, 1));
    EXPECT_FALSE(d.d.allowed);
    EXPECT_EQ(d.from, source::store) << "denial " << i;
  }
  EXPECT_EQ(st->redis_stats().deny_cache_bypassed, 2U);  // the first denial found nothing cached
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, TlsConformance, ::testing::ValuesIn(conformance::all_algorithms),
                         algorithm_test_name);

}  // namespace
}  // namespace sluice::redis_test::redis_tls_test
