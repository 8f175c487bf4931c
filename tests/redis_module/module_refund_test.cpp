// The module's release, refund and compare-and-set commands do as the Lua
// library's functions on the same keys (twin keys: the same replies, values
// and TTLs), and SLUICE.INFO says what the loaded module decides.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "redis_module/module_support.hpp"
#include "sluice/core/concurrency.hpp"
#include "sluice/core/policy_expr.hpp"

namespace sluice::redis_module_test::module_refund_test {
namespace {

using module_support::run;
using module_support::tree_header;

/// Runs `argv` on both twins' keys: `key_at` names the arguments that are
/// keys (prefixed lua: and mod:).
void on_both(redis::test_client& c, std::vector<std::string> argv, std::size_t key_at = 1) {
  for (const char* prefix : {"lua:", "mod:"}) {
    std::vector<std::string> a = argv;
    a[key_at] = prefix + a[key_at];
    ASSERT_EQ(run(c, a).substr(0, 3) == "ERR", false) << run(c, a);
  }
}

TEST(RedisModule, ReleaseFreesTheLeaseAsTheLuaLibrarysRelease) {
  auto c = module_support::client_of(module_support::shared_server());
  module_support::twin tw(c);
  for (const char* expr : {"concurrency 3 lease=10s", "all(concurrency 2 lease=5s, gcra 10/1s burst=5)"}) {
    const redis::plan pl = redis::plan::make(parse_policy(expr).value()).value();
    std::vector<std::string> keys;
    for (const auto& leaf : pl.leaves()) keys.push_back(std::string("rel:") + expr + leaf.suffix);
    tick now = 1'700'000'000'000'000'000;
    // Leases of nonces 11, 12, 13 (some refused: the limit), written alike
    // through both.
    for (std::uint64_t nonce = 11; nonce <= 13; ++nonce) {
      const lease_scope scope(nonce);
      std::string blob = tree_header(now, 1, 5000);
      pl.append_tree(now, 1, blob);
      ASSERT_EQ(tw.send("decide", keys, {blob}), "") << expr;
      now += 1'000'000;
    }
    // A nonce held, the same again (already released), one never issued,
    // the last lease after its expiry (nothing held then).
    for (const std::uint64_t nonce : {12ULL, 12ULL, 99ULL, 11ULL}) {
      const std::string held = run(c, {"GET", "mod:" + keys[0]});
      ASSERT_EQ(tw.send("release", keys, {module_support::release_blob(now, nonce, pl)}), "")
          << expr << " nonce " << nonce;
      if (nonce == 99) {
        EXPECT_EQ(run(c, {"GET", "mod:" + keys[0]}), held) << expr;  // never issued: unchanged
      }
      if (nonce == 11) {
        EXPECT_NE(run(c, {"GET", "mod:" + keys[0]}), held) << expr;  // held: released
      }
      now += 1'000'000;
    }
    ASSERT_EQ(tw.send("release", keys, {module_support::release_blob(now + 60'000'000'000, 13, pl)}), "") << expr;
  }
  // A key written under another configuration: {3, values}, nothing written.
  const redis::plan a = redis::plan::make(parse_policy("concurrency 2 lease=1s").value()).value();
  const redis::plan b = redis::plan::make(parse_policy("concurrency 3 lease=1s").value()).value();
  {
    const lease_scope scope(7);
    std::string blob = tree_header(5'000'000'000, 1, 5000);
    a.append_tree(5'000'000'000, 1, blob);
    ASSERT_EQ(tw.send("decide", {"rel:cfg"}, {blob}), "");
  }
  ASSERT_EQ(tw.send("release", {"rel:cfg"}, {module_support::release_blob(5'000'000'001, 7, b)}), "");
  ASSERT_EQ(tw.send("release", {"rel:none"}, {module_support::release_blob(5'000'000'001, 7, b)}),
            "");  // no value: {1 nil nil}
  EXPECT_EQ(module_support::module_call(c, "release", {"rel:cfg"}, {"short"}).substr(0, 22), "ERR<sluice: bad reques");
  EXPECT_EQ(tw.errors, 0u);
  EXPECT_GE(tw.with_ttl, 10u);  // the released keys kept their TTL, as the library's KEEPTTL
}

TEST(RedisModule, RefundAndCasWriteAsTheLuaLibrarys) {
  auto c = module_support::client_of(module_support::shared_server());
  module_support::twin tw(c);
  // _refund: id-key mark-key state-keys... record, per state key expected
  // new px, then channel message.
  on_both(c, {"SET", "rf:id", "the-record", "PX", "60000"});
  on_both(c, {"SET", "rf:s1", "v1", "PX", "30000"});
  on_both(c, {"SET", "rf:s2", "v2"});
  const std::vector<std::string> keys{"rf:id", "rf:mark", "rf:s1", "rf:s2", "rf:s3"};
  // Another record ({0}); a state that moved ({0}); then the refund ({1}):
  // s1 rewritten with an expiry, s2 deleted, s3 (none) left; and a repeat
  // (marked: {6}).
  ASSERT_EQ(tw.send("refund", keys, {"another", "=v1", "w1", "20000", "=v2", "-", "0", "-", "", "0"}), "");
  ASSERT_EQ(tw.send("refund", keys, {"the-record", "=v0", "w1", "20000", "=v2", "-", "0", "-", "", "0"}), "");
  ASSERT_EQ(tw.send("refund", keys, {"the-record", "=v1", "w1", "20000", "=v2", "-", "0", "-", "", "0", "chan", "msg"}),
            "");
  ASSERT_EQ(tw.send("refund", keys, {"the-record", "=w1", "w2", "0", "-", "x", "0", "-", "", "0"}), "");
  EXPECT_EQ(run(c, {"GET", "mod:rf:mark"}), "s1:31");
  EXPECT_EQ(run(c, {"EXISTS", "mod:rf:s2"}), "0");
  // _refund_read: the values, in order (nil for none).
  ASSERT_EQ(tw.send("refund_read", keys, {}), "");
  // _cas without an id: {0} when a value moved, {1} and the writes.
  const std::vector<std::string> ckeys{"cs:a", "cs:b"};
  ASSERT_EQ(tw.send("cas", ckeys, {"0", "0", "", "", "=zz", "n1", "0", "-", "n2", "0"}), "");
  ASSERT_EQ(tw.send("cas", ckeys, {"0", "0", "", "", "-", "n1", "15000", "-", "n2", "0", "chan", "msg"}), "");
  ASSERT_EQ(tw.send("cas", ckeys, {"0", "0", "", "", "=n1", "-", "0", "=n2", "", "0"}), "");
  // With a request id: the record written ({1}), a repeat ({2, record}),
  // another request's identity ({5}).
  const std::vector<std::string> ikeys{"cs:id", "cs:c"};
  ASSERT_EQ(tw.send("cas", ikeys, {"1", "40000", "100 200 1|rec", "ident", "-", "n3", "9000"}), "");
  ASSERT_EQ(tw.send("cas", ikeys, {"1", "40000", "100 200 1|rec", "ident", "=n3", "n4", "9000"}), "");
  ASSERT_EQ(tw.send("cas", ikeys, {"1", "40000", "100 200 1|rec", "other", "=n3", "n4", "9000"}), "");
  EXPECT_EQ(tw.errors, 0u);
  EXPECT_GE(tw.with_ttl, 8u);
  // Bad arguments: clear errors, nothing written.
  EXPECT_EQ(module_support::module_call(c, "cas", {"cs:z"}, {"0", "0", "", "", "-", "n1", "soon"}),
            "ERR<sluice: bad request (an expiry is not a number of ms)>");
  EXPECT_EQ(module_support::module_call(c, "cas", {"cs:z"}, {"0", "0", "", "", "-", "n1"}).substr(0, 25),
            "ERR<sluice: bad request (");
  EXPECT_EQ(run(c, {"EXISTS", "cs:z"}), "0");
}

/// A subscriber of one channel on 127.0.0.1:`port`, on a plain socket:
/// the RESP it reads, until a deadline.
class subscriber {
 public:
  subscriber(int port, const std::string& channel) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
    const std::string cmd = "*2\r\n$9\r\nSUBSCRIBE\r\n$" + std::to_string(channel.size()) + "\r\n" + channel + "\r\n";
    connected_ = connected_ && ::write(fd_, cmd.data(), cmd.size()) == static_cast<ssize_t>(cmd.size());
  }
  ~subscriber() {
    if (fd_ >= 0) ::close(fd_);
  }
  subscriber(const subscriber&) = delete;
  subscriber& operator=(const subscriber&) = delete;

  /// Whether what it has read contains `want` within 10 s.
  bool reads(const std::string& want) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (connected_ && got_.find(want) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buf[4096];
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) return false;
      got_.append(buf, static_cast<std::size_t>(n));
    }
    return connected_;
  }

 private:
  int fd_;
  bool connected_ = false;
  std::string got_;
};

TEST(RedisModule, CasAndRefundPublishTheDenyCachesInvalidation) {
  auto c = module_support::client_of(module_support::shared_server());
  subscriber sub(module_support::shared_server().port(), "pub:chan");
  ASSERT_TRUE(sub.reads("pub:chan\r\n:1\r\n"));  // subscribed
  ASSERT_EQ(module_support::module_call(c, "cas", {"pub:k"}, {"0", "0", "", "", "-", "v", "0", "pub:chan", "one"}),
            "[1]");
  EXPECT_TRUE(sub.reads("$3\r\none\r\n"));
  ASSERT_EQ(run(c, {"SET", "pub:id", "rec"}), "+OK");
  ASSERT_EQ(module_support::module_call(c, "refund", {"pub:id", "pub:mark"}, {"rec", "pub:chan", "two"}), "[1]");
  EXPECT_TRUE(sub.reads("$3\r\ntwo\r\n"));
}

TEST(RedisModule, InfoSaysWhatTheLoadedModuleDecides) {
  auto c = module_support::client_of(module_support::shared_server());
  const redis::reply r = module_support::answer(c.call(std::vector<std::string_view>{"SLUICE.INFO"}));
  ASSERT_EQ(r.kind, redis::reply::type::array) << module_support::show(r);
  ASSERT_EQ(r.elements.size(), 8u);
  EXPECT_EQ(r.elements[0].str, "version");
  EXPECT_EQ(r.elements[1].integer, 2);
  EXPECT_EQ(r.elements[2].str, "protocol");
  EXPECT_EQ(r.elements[3].str, "sluice_v2");
  EXPECT_TRUE(std::string(redis::lua_library_name).starts_with(r.elements[3].str + "_"));
  EXPECT_EQ(r.elements[4].str, "letters");
  // Every algorithm's letter (each leaf the Lua library decides).
  const std::string letters = r.elements[5].str;
  for (const char* expr : {"gcra 1/1s burst=1", "token-bucket 1/1s burst=1", "leaky-queue 1/1s queue=1",
                           "fixed-window 1/1s", "sliding-counter 1/1s", "sliding-log 1/1s",
                           "sliding-buckets 2/2s buckets=2", "quota 1", "concurrency 1 lease=1s"}) {
    const redis::plan pl = redis::plan::make(parse_policy(expr).value()).value();
    EXPECT_NE(letters.find(pl.leaves()[0].letter), std::string::npos) << expr << " in " << letters;
  }
  EXPECT_EQ(r.elements[6].str, "commands");
  // Every command it lists is one the server knows.
  ASSERT_EQ(r.elements[7].kind, redis::reply::type::array);
  EXPECT_EQ(r.elements[7].elements.size(), 10u);
  for (const redis::reply& name : r.elements[7].elements)
    EXPECT_TRUE(run(c, {"COMMAND", "INFO", name.str}).starts_with("[[s")) << name.str;
  EXPECT_TRUE(run(c, {"SLUICE.INFO", "extra"}).find("wrong number of arguments") != std::string::npos);
}

}  // namespace
}  // namespace sluice::redis_module_test::module_refund_test
