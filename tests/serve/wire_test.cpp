// The RateLimit fields against their definitions (semantics.md, "On the wire
// (HTTP)"): every RateLimit-Policy item's q / w is its limiter's L / W
// exactly, q is the smallest such quota at least the limiter's capacity, a
// composite lists every part; every RateLimit item's r is the decision's
// remaining and t the time until a request of cost r + 1 is admitted.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "config.hpp"
#include "http_api.hpp"
#include "service.hpp"
#include "sluice/core/detail/arith.hpp"
#include "sluice/core/policy_expr.hpp"
#include "stores.hpp"
#include "wire.hpp"

namespace sluice::serve {
namespace {

using detail::u128;
constexpr tick s = 1'000'000'000;

// One Structured Field list item: "NAME" and its Integer parameters.
struct item {
  std::string name;
  std::vector<std::pair<std::string, std::int64_t>> params;
  [[nodiscard]] std::optional<std::int64_t> get(std::string_view key) const {
    for (const auto& [k, v] : params)
      if (k == key) return v;
    return std::nullopt;
  }
};

// Parses a list of `"name";k=INT;k=INT` items separated by ", " (the form
// sluice writes, RFC 9651 §3.1 with sf-string names and Integer values);
// nullopt on anything else.
std::optional<std::vector<item>> parse_list(std::string_view f) {
  std::vector<item> out;
  std::size_t i = 0;
  while (i < f.size()) {
    if (f[i] != '"') return std::nullopt;
    const std::size_t close = f.find('"', i + 1);
    if (close == std::string_view::npos) return std::nullopt;
    item it{std::string(f.substr(i + 1, close - i - 1)), {}};
    i = close + 1;
    while (i < f.size() && f[i] == ';') {
      const std::size_t eq = f.find('=', i);
      if (eq == std::string_view::npos) return std::nullopt;
      std::size_t end = eq + 1;
      while (end < f.size() && f[end] >= '0' && f[end] <= '9') ++end;
      if (end == eq + 1 || end - eq - 1 > 15) return std::nullopt;
      it.params.emplace_back(std::string(f.substr(i + 1, eq - i - 1)), std::stoll(std::string(f.substr(eq + 1))));
      i = end;
    }
    out.push_back(std::move(it));
    if (i == f.size()) break;
    if (f.substr(i, 2) != ", ") return std::nullopt;
    i += 2;
  }
  return out;
}

// What a limiter gives: L per W ns, capacity C (nullopt W: a quota of C).
struct limit {
  std::int64_t l;
  std::optional<tick> w;
  std::int64_t c;
};

// Whether an item says exactly `lim` by the definition: q / w = L / W, q ≥ C
// and no smaller such q (the reduced pair's next multiple down is below C).
::testing::AssertionResult says(const item& it, const limit& lim) {
  const auto q = it.get("q");
  const auto w = it.get("w");
  if (!q) return ::testing::AssertionFailure() << it.name << ": no q";
  if (!lim.w) {
    if (w) return ::testing::AssertionFailure() << it.name << ": a quota with a w";
    if (*q != lim.c) return ::testing::AssertionFailure() << it.name << ": q=" << *q << ", the quota is " << lim.c;
    return ::testing::AssertionSuccess();
  }
  if (!w || *w < 1) return ::testing::AssertionFailure() << it.name << ": no w ≥ 1";
  if (static_cast<u128>(*q) * static_cast<u128>(*lim.w) != static_cast<u128>(*w) * static_cast<u128>(lim.l) * s)
    return ::testing::AssertionFailure() << it.name << ": q/w = " << *q << "/" << *w << " s, the rate is " << lim.l
                                         << "/" << *lim.w << " ns";
  if (*q < lim.c) return ::testing::AssertionFailure() << it.name << ": q=" << *q << " is below the capacity " << lim.c;
  const std::int64_t g = std::gcd(*q, *w);
  if (*q - *q / g >= lim.c)
    return ::testing::AssertionFailure() << it.name << ": q=" << *q << ";w=" << *w << " is not the smallest pair";
  return ::testing::AssertionSuccess();
}

struct row {
  const char* expr;
  std::vector<std::pair<std::string, limit>> items;  // name suffix after the policy's name, and its limit
};

const std::vector<row>& rows() {
  static const std::vector<row> r = {
      {"fixed-window 100/1m", {{"", {100, 60 * s, 100}}}},
      {"fixed-window 2/500ms", {{"", {2, s / 2, 2}}}},
      {"sliding-log 1/300ms", {{"", {1, 300'000'000, 1}}}},
      {"sliding-counter 7/1m", {{"", {7, 60 * s, 7}}}},
      {"sliding-buckets 6/1m buckets=3", {{"", {6, 60 * s, 6}}}},
      {"token-bucket 3/1500ms", {{"", {3, 1'500'000'000, 3}}}},
      {"token-bucket 10/1s burst=20", {{"", {10, s, 20}}}},
      {"gcra 100/1m burst=20", {{"", {100, 60 * s, 20}}}},
      {"gcra 100/1m burst=1", {{"", {100, 60 * s, 1}}}},
      {"leaky-queue 2/1s queue=15", {{"", {2, s, 15}}}},
      {"leaky-queue 3/250ms queue=2", {{"", {3, s / 4, 2}}}},
      {"quota 7", {{"", {0, std::nullopt, 7}}}},
      {"always-deny", {{"", {0, std::nullopt, 0}}}},
      {"all(token-bucket 10/1s burst=20, fixed-window 1000/1h)", {{"/1", {10, s, 20}}, {"/2", {1000, 3600 * s, 1000}}}},
      {"any(quota 100, gcra 1/1s)", {{"/1", {0, std::nullopt, 100}}, {"/2", {1, s, 1}}}},
      {"all(any(quota 5, leaky-queue 2/500ms queue=3), always-allow, sliding-log 9/1h)",
       {{"/1/1", {0, std::nullopt, 5}}, {"/1/2", {2, s / 2, 3}}, {"/3", {9, 3600 * s, 9}}}},
  };
  return r;
}

TEST(WireRateLimitPolicy, EveryItemIsItsLimitersRateExactly) {
  std::size_t checked = 0;
  for (const row& r : rows()) {
    const auto p = parse_policy(r.expr);
    ASSERT_TRUE(p) << r.expr;
    const std::string field = policy_member("p", *p);
    const auto items = parse_list(field);
    ASSERT_TRUE(items) << r.expr << ": " << field;
    ASSERT_EQ(items->size(), r.items.size()) << r.expr << ": " << field;
    for (std::size_t i = 0; i < items->size(); ++i) {
      EXPECT_EQ((*items)[i].name, "p" + r.items[i].first) << r.expr;
      EXPECT_TRUE(says((*items)[i], r.items[i].second)) << r.expr << ": " << field;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 20u);
  EXPECT_EQ(policy_member("a", *parse_policy("always-allow")), "");
}

TEST(WireRateLimitPolicy, SubSecondWindowsAreScaledNotRounded) {
  // Was "p";q=2;w=1: 2 per second advertised for 4 per second.
  EXPECT_EQ(policy_member("p", *parse_policy("fixed-window 2/500ms")), "\"p\";q=4;w=1");
  // Was "p";q=3;w=2: 1.5 per second advertised for 2.
  EXPECT_EQ(policy_member("p", *parse_policy("token-bucket 3/1500ms")), "\"p\";q=4;w=2");
  EXPECT_EQ(policy_member("p", *parse_policy("sliding-log 1/300ms")), "\"p\";q=10;w=3");
}

TEST(WireRateLimitPolicy, ABucketsQuotaIsItsCapacitySoRemainingNeverPassesIt) {
  // Was q=2 (its L) for a queue that holds 15: r went up to 15.
  EXPECT_EQ(policy_member("p", *parse_policy("leaky-queue 2/1s queue=15")), "\"p\";q=16;w=8");
  EXPECT_EQ(policy_member("p", *parse_policy("gcra 100/1m burst=20")), "\"p\";q=20;w=12");
}

TEST(WireRateLimitPolicy, ACompositeListsEveryPart) {
  // Was only the first part's: "c";q=5;w=3600, the quota of 9 unsaid.
  EXPECT_EQ(policy_member("c", *parse_policy("all(fixed-window 5/1h, quota 9)")), "\"c/1\";q=5;w=3600, \"c/2\";q=9");
  EXPECT_EQ(policy_member("c", *parse_policy("any(quota 100, gcra 1/1s)")), "\"c/1\";q=100, \"c/2\";q=1;w=1");
}

TEST(WireRateLimitPolicy, ZeroLimitAndHugeFigures) {
  EXPECT_EQ(policy_member("z", *parse_policy("fixed-window 0/1500ms")), "\"z\";q=0;w=2");
  EXPECT_EQ(policy_member("z", *parse_policy("gcra 0/1m")), "\"z\";q=0;w=60");
  EXPECT_EQ(policy_member("q", *parse_policy("quota 4611686018427387904")), "\"q\";q=999999999999999");
  // 3 per (2^62 - 1) ns: the exact pair has w = (2^62 - 1) / 3 s, past an SF
  // Integer. Then w = ceil(C·W / L) s and q = floor(w·L / W): never more
  // than the rate, q still at least the capacity.
  const tick w_ns = (tick{1} << 62) - 1;
  auto p = token_bucket::make(rate{3, w_ns}, 3);
  ASSERT_TRUE(p);
  const auto items = parse_list(policy_member("f", any_policy(*p)));
  ASSERT_TRUE(items);
  ASSERT_EQ(items->size(), 1u);
  const std::int64_t q = *(*items)[0].get("q");
  const std::int64_t w = *(*items)[0].get("w");
  const u128 cw = u128{3} * static_cast<u128>(w_ns);
  const u128 ls = u128{3} * s;
  EXPECT_EQ(static_cast<u128>(w), (cw + ls - 1) / ls);
  EXPECT_EQ(static_cast<u128>(q), static_cast<u128>(w) * ls / static_cast<u128>(w_ns));
  EXPECT_GE(q, 3);
  EXPECT_LE(static_cast<u128>(q) * static_cast<u128>(w_ns), static_cast<u128>(w) * ls);
}

// Through the service: random requests on each row's policy; every answer's
// RateLimit r is the check's remaining, never above a listed q (all: the
// least, any: the most), and t is when a request of cost r + 1 is admitted:
// at now + t s it is, at now + (t - 1) s not; without t it never is.
class Through : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string text = "[server]\nclient_time = true\n[policies]\n";
    for (std::size_t i = 0; i < rows().size(); ++i) text += "p" + std::to_string(i) + " = \"" + rows()[i].expr + "\"\n";
    auto c = parse_config(text, "t.toml");
    ASSERT_TRUE(c) << c.err().field << ": " << c.err().message;
    auto st = make_store(c->store);
    ASSERT_TRUE(st);
    auto svc = service::create(std::move(c).value(), std::move(st).value());
    ASSERT_TRUE(svc);
    svc_ = std::move(svc).value();
    api_ = std::make_unique<http_api>(*svc_);
  }

  struct answer {
    unsigned status = 0;
    std::string policy_field, rl_field, retry_after;
    nlohmann::json body;
  };

  answer decide(const std::string& policy, std::int64_t cost, tick now) {
    http_request req;
    req.method = "POST";
    req.target = "/v1/decide";
    req.peer = "127.0.0.1";
    nlohmann::json body;
    body["checks"] = nlohmann::json::array({nlohmann::json{{"policy", policy}, {"key", "k"}}});
    body["cost"] = cost;
    body["now"] = now;
    const std::string text = body.dump();
    req.body = text;
    http_response res;
    api_->handle(req, res, listener_role::decision);
    answer a{res.status, {}, {}, {}, nlohmann::json::parse(res.body)};
    for (const auto& f : res.fields) {
      if (f.name == "RateLimit-Policy") a.policy_field = f.value;
      if (f.name == "RateLimit") a.rl_field = f.value;
      if (f.name == "Retry-After") a.retry_after = f.value;
    }
    return a;
  }

  std::unique_ptr<service> svc_;
  std::unique_ptr<http_api> api_;  // after svc_: goes first
};

TEST_F(Through, RemainingAndTimeUntilMoreAreTheDecisions) {
  std::mt19937_64 rng(17);
  std::size_t checked = 0;
  std::size_t probes = 0;
  for (std::size_t i = 0; i < rows().size(); ++i) {
    const std::string name = "p" + std::to_string(i);
    const bool any = std::string_view(rows()[i].expr).starts_with("any(");
    tick now = 86'400 * 1000 * s;
    for (int step = 0; step < 60; ++step) {
      now += static_cast<tick>(rng() % 4) * (s / 4) + (rng() % 5 == 0 ? 7 * s : 0);
      const auto cost = static_cast<std::int64_t>(1 + rng() % 3);
      const answer a = decide(name, cost, now);
      ASSERT_TRUE(a.status == 200 || a.status == 429) << a.body.dump();
      const auto policies = parse_list(a.policy_field);
      const auto limits = parse_list(a.rl_field);
      ASSERT_TRUE(policies && limits) << name << ": " << a.policy_field << " / " << a.rl_field;
      ASSERT_EQ(limits->size(), 1u);
      const item& rl = limits->front();
      EXPECT_EQ(rl.name, name);
      const std::int64_t remaining = a.body["checks"][0]["remaining"].get<std::int64_t>();
      ASSERT_EQ(rl.get("r"), remaining) << name;
      std::int64_t bound = any ? 0 : INT64_MAX;
      for (const item& it : *policies) bound = any ? std::max(bound, *it.get("q")) : std::min(bound, *it.get("q"));
      EXPECT_LE(remaining, bound) << name << ": r above q in " << a.policy_field;
      const auto t = rl.get("t");
      if (a.status == 429 && t && !a.retry_after.empty()) {
        EXPECT_GE(std::stoll(a.retry_after), *t) << name;
      }
      ++checked;
      if (step % 3 != 0) continue;
      // Probe the definition of t (a denial is a pure read; an admit moves on).
      if (!t) {
        const answer never_more = decide(name, remaining + 1, now);
        EXPECT_EQ(never_more.status, 429) << name;
        EXPECT_TRUE(never_more.body["retry_after"].is_null()) << name << ": " << never_more.body.dump();
        continue;
      }
      if (*t >= 1) {
        EXPECT_EQ(decide(name, remaining + 1, now + (*t - 1) * s).status, 429) << name << " t=" << *t;
      }
      now += *t * s;
      EXPECT_EQ(decide(name, remaining + 1, now).status, 200) << name << " t=" << *t;
      ++probes;
    }
  }
  EXPECT_EQ(checked, rows().size() * 60);
  EXPECT_GE(probes, 100u) << probes;
  std::printf("%zu answers, %zu probes of t\n", checked, probes);
}

TEST(WireParse, ReadsWhatSluiceWrites) {
  const auto l = parse_list("\"a\";q=1;w=2, \"b/1\";r=0");
  ASSERT_TRUE(l);
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[1].name, "b/1");
  EXPECT_EQ((*l)[1].get("r"), 0);
  EXPECT_FALSE(parse_list("a;q=1"));
  EXPECT_FALSE(parse_list("\"a\";q=x"));
}

}  // namespace
}  // namespace sluice::serve
