// The client's address behind proxies (forwarded.hpp; docs/serve.md, "The
// client behind proxies"): X-Forwarded-For and Forwarded read from the
// right across every line, a single-value header given once, and every
// entry read an IP address or the request invalid.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "forwarded.hpp"
#include "rules.hpp"

namespace sluice::serve {
namespace serve_forwarded_test {

const std::vector<std::string> trusted{"10.0.0.1", "10.0.0.2", "2001:db8::9"};

// One request from `peer` with these headers: the client, or "invalid".
struct row {
  std::vector<header_view> headers;
  std::string_view peer;
  std::string_view client;
};

void check(const forwarded_reader& r, const std::vector<row>& rows) {
  for (const auto& t : rows) {
    std::string out;
    std::string seen;
    for (const auto& h : t.headers) seen += std::string(h.name) + ": " + std::string(h.value) + " | ";
    const auto why = r.client(t.headers, t.peer, out);
    if (t.client == "invalid") {
      EXPECT_TRUE(why) << seen << " gave " << out;
    } else {
      EXPECT_FALSE(why) << seen << ": " << why.value_or("");
      EXPECT_EQ(out, t.client) << seen;
    }
  }
}

TEST(Forwarded, XForwardedForIsOneListReadFromTheRight) {
  const forwarded_reader r(trusted, "X-Forwarded-For");
  check(r, {
               // An untrusted peer is the client, whatever it sends.
               {{{"X-Forwarded-For", "1.1.1.1"}}, "192.0.2.7", "192.0.2.7"},
               {{}, "10.0.0.1", "10.0.0.1"},
               {{{"X-Forwarded-For", "1.1.1.1"}}, "10.0.0.1", "1.1.1.1"},
               // The client's own line first, the proxy's appended: the proxy's counts.
               {{{"X-Forwarded-For", "6.6.6.6"}, {"X-Forwarded-For", "1.1.1.1"}}, "10.0.0.1", "1.1.1.1"},
               {{{"x-forwarded-for", "6.6.6.6, 7.7.7.7"}, {"X-Forwarded-For", " 1.1.1.1 "}}, "10.0.0.1", "1.1.1.1"},
               // Trusted proxies on the right are skipped; the first other address is the client.
               {{{"X-Forwarded-For", "6.6.6.6, 1.1.1.1, 10.0.0.2"}}, "10.0.0.1", "1.1.1.1"},
               {{{"X-Forwarded-For", "6.6.6.6, 1.1.1.1"}, {"X-Forwarded-For", "10.0.0.2"}}, "10.0.0.1", "1.1.1.1"},
               // Every entry trusted: the leftmost.
               {{{"X-Forwarded-For", "10.0.0.2, 10.0.0.1"}}, "10.0.0.1", "10.0.0.2"},
               // Entries left of the client are the client's own: never read.
               {{{"X-Forwarded-For", "not-an-ip, unknown, 1.1.1.1"}}, "10.0.0.1", "1.1.1.1"},
               // Empty entries are skipped (RFC 9110 5.6.1); an empty header is no header.
               {{{"X-Forwarded-For", "1.1.1.1,,  ,"}}, "10.0.0.1", "1.1.1.1"},
               {{{"X-Forwarded-For", ""}}, "10.0.0.1", "10.0.0.1"},
               // IPv6, bare or bracketed, keyed canonically.
               {{{"X-Forwarded-For", "2001:DB8:0::1"}}, "10.0.0.1", "2001:db8::1"},
               {{{"X-Forwarded-For", "[2001:db8::1], 2001:db8::9"}}, "10.0.0.1", "2001:db8::1"},
               // An entry read that is no address: invalid, never another address.
               {{{"X-Forwarded-For", "1.1.1.1, garbage"}}, "10.0.0.1", "invalid"},
               {{{"X-Forwarded-For", "1.1.1.1:4711"}}, "10.0.0.1", "invalid"},
               {{{"X-Forwarded-For", "unknown"}}, "10.0.0.1", "invalid"},
               {{{"X-Forwarded-For", "01.1.1.1"}}, "10.0.0.1", "invalid"},
               {{{"X-Forwarded-For", "[1.1.1.1]"}}, "10.0.0.1", "invalid"},
               {{{"X-Forwarded-For", "1.1.1"}}, "10.0.0.1", "invalid"},
               {{{"X-Forwarded-For", "1.1.1.1 2.2.2.2"}}, "10.0.0.1", "invalid"},
           });
}

TEST(Forwarded, ASingleValueHeaderIsOneAddressGivenOnce) {
  const forwarded_reader r(trusted, "X-Real-IP");
  check(r, {
               {{{"X-Real-IP", " 1.1.1.1 "}}, "10.0.0.1", "1.1.1.1"},
               {{{"X-Real-IP", "1.1.1.1"}}, "192.0.2.7", "192.0.2.7"},
               {{{"X-Real-IP", "6.6.6.6"}, {"X-Real-IP", "1.1.1.1"}}, "10.0.0.1", "invalid"},
               {{{"X-Real-IP", "6.6.6.6"}, {"x-real-ip", "6.6.6.6"}}, "10.0.0.1", "invalid"},
               {{{"X-Real-IP", "1.1.1.1, 2.2.2.2"}}, "10.0.0.1", "invalid"},
               {{{"X-Real-IP", "1.1.1.1:80"}}, "10.0.0.1", "invalid"},
               {{{"X-Real-IP", "::ffff:1.1.1.1"}}, "10.0.0.1", "::ffff:1.1.1.1"},
           });
}

TEST(Forwarded, Rfc7239ForNodesFromTheRight) {
  const forwarded_reader r(trusted, "Forwarded");
  check(r, {
               {{{"Forwarded", "for=1.1.1.1"}}, "10.0.0.1", "1.1.1.1"},
               {{{"Forwarded", "for=6.6.6.6"}, {"forwarded", "for=1.1.1.1;proto=http"}}, "10.0.0.1", "1.1.1.1"},
               {{{"Forwarded", "for=6.6.6.6, For=1.1.1.1;by=10.0.0.1, for=10.0.0.2"}}, "10.0.0.1", "1.1.1.1"},
               {{{"Forwarded", "proto=https;for=\"1.1.1.1:4711\""}}, "10.0.0.1", "1.1.1.1"},
               {{{"Forwarded", "for=\"[2001:db8::1]:4711\""}}, "10.0.0.1", "2001:db8::1"},
               {{{"Forwarded", "for=\"[2001:DB8::1]\""}}, "10.0.0.1", "2001:db8::1"},
               {{{"Forwarded", "for=\"[2001:db8::1]:_port\""}}, "10.0.0.1", "2001:db8::1"},
               // A ',' or ';' inside a quoted string splits nothing.
               {{{"Forwarded", "for=1.1.1.1;x=\"a,b;c\""}}, "10.0.0.1", "1.1.1.1"},
               // Left of the client: not read.
               {{{"Forwarded", "for=unknown, for=_hidden, garbage, for=1.1.1.1"}}, "10.0.0.1", "1.1.1.1"},
               // Read and not an address: invalid.
               {{{"Forwarded", "for=unknown"}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=_hidden"}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=\"_hidden:80\""}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "proto=http"}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=1.1.1.1;for=2.2.2.2"}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=2001:db8::1"}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=\"2001:db8::1\""}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=[2001:db8::1]"}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=\"[1.1.1.1]\""}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=1.1.1.1:80"}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=\"1.1.1.1:\""}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=\"1.1.1.1:123456\""}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=\"1.1.1.1"}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for="}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "1.1.1.1"}}, "10.0.0.1", "invalid"},
               {{{"Forwarded", "for=1.1.1.1, for=10.0.0.2;for=x"}}, "10.0.0.1", "invalid"},
           });
}

TEST(Forwarded, AnInvalidClientIsAnInvalidRequestNotAnotherKey) {
  auto c = parse_config(
      "[server]\ntrusted_proxies = [\"127.0.0.1\"]\nforwarded_header = \"X-Real-IP\"\n"
      "[policies]\np = \"gcra 1/1s\"\n[[rules]]\npolicy = \"p\"\nkey = \"client\"\n",
      "t.toml");
  ASSERT_TRUE(c.ok()) << c.err().what();
  const rule_set rs(*c);
  std::vector<planned_check> out;
  const std::vector<header_view> twice{{"X-Real-IP", "10.0.0.1"}, {"X-Real-IP", "6.6.6.6"}};
  const auto e = rs.plan(request_view{"GET", "/", twice, "127.0.0.1"}, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->field, "header");
  const std::vector<header_view> once{{"X-Real-IP", "10.0.0.1"}};
  ASSERT_FALSE(rs.plan(request_view{"GET", "/", once, "127.0.0.1"}, out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].key, "10.0.0.1");
}

}  // namespace serve_forwarded_test
}  // namespace sluice::serve
