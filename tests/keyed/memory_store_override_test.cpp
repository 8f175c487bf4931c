// Overrides in the memory store (semantics.md, "Overrides"): a key's own
// limit, its state carried into it and back with `reconfigure` at the
// instant of the change, exactly; checked against that definition written
// out over one core state per key, by hand on a worked case, and under
// threads racing the changes.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "sluice/core/policy_expr.hpp"
#include "sluice/core/reconfigure.hpp"
#include "sluice/keyed/memory.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice::keyed_memory_store_override_test {
namespace {

constexpr tick ms = 1'000'000;

any_policy expr(std::string_view text) { return parse_policy(text).value(); }

decision decided(memory_store& st, policy_id p, std::string_view key, tick now, std::int64_t cost = 1) {
  const check c{p, key, cost};
  return st.decide_at(store_request{std::span<const check>(&c, 1), now, cost, {}}).d;
}

memory_store_options opts() {
  memory_store_options o;
  o.keyed.hash_seed = 7;
  return o;
}

TEST(MemoryStoreOverride, AThrottledKeyStaysThrottledAsReconfigureSays) {
  memory_store st(opts());
  const policy_id p = st.define_at("api", expr("gcra 10/1s"), 0).value();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(decided(st, p, "alice", 0).allowed);
  EXPECT_EQ(decided(st, p, "alice", 0).retry_after, 100 * ms);  // one token every 100 ms
  // A bigger rate, the same burst: the deficit of 10 tokens is kept and
  // paid off at 20/s, so the first token comes after 50 ms, not at once.
  ASSERT_EQ(st.set_override_at(p, "alice", expr("gcra 20/1s burst=10"), 0).value(), override_change::created);
  const decision d = decided(st, p, "alice", 0);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, 50 * ms);
  EXPECT_FALSE(decided(st, p, "alice", 49 * ms).allowed);
  EXPECT_TRUE(decided(st, p, "alice", 50 * ms).allowed);
  // Another key keeps the configured policy.
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(decided(st, p, "bob", 0).allowed);
  EXPECT_EQ(decided(st, p, "bob", 0).retry_after, 100 * ms);
}

TEST(MemoryStoreOverride, SetGetListDeleteAndErrorsChangeNothing) {
  memory_store st(opts());
  const policy_id p = st.define_at("api", expr("gcra 10/1s"), 0).value();
  EXPECT_FALSE(st.override_of(p, "a").value().has_value());
  EXPECT_EQ(st.set_override_at(p, "b", expr("gcra 5/1s"), 0).value(), override_change::created);
  EXPECT_EQ(st.set_override_at(p, "a", expr("gcra 50/1s"), 0).value(), override_change::created);
  EXPECT_EQ(st.set_override_at(p, "a", expr("gcra 50/1s"), 0).value(), override_change::unchanged);
  EXPECT_EQ(st.set_override_at(p, "c", expr("gcra 7/1s"), 0).value(), override_change::created);
  EXPECT_EQ(st.set_override_at(p, "c", expr("gcra 8/1s"), 0).value(), override_change::replaced);
  EXPECT_EQ(format_policy(*st.override_of(p, "a").value()), "gcra 50/1s");
  EXPECT_EQ(st.override_count(), 3U);
  // Another algorithm cannot continue the configured states: refused.
  const auto bad = st.set_override_at(p, "d", expr("fixed-window 5/1s"), 0);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.err().field, "policy");
  EXPECT_FALSE(st.override_of(p, "d").value().has_value());
  EXPECT_FALSE(st.set_override_at(99, "d", expr("gcra 5/1s"), 0));
  // Pages in byte order, with a cursor.
  const override_page first = st.list_overrides(p, "", 2).value();
  ASSERT_EQ(first.overrides.size(), 2U);
  EXPECT_EQ(first.overrides[0].key, "a");
  EXPECT_EQ(first.overrides[1].key, "b");
  ASSERT_TRUE(first.next.has_value());
  const override_page second = st.list_overrides(p, *first.next, 2).value();
  ASSERT_EQ(second.overrides.size(), 1U);
  EXPECT_EQ(second.overrides[0].key, "c");
  EXPECT_EQ(format_policy(second.overrides[0].policy), "gcra 8/1s");
  EXPECT_FALSE(second.next.has_value());
  EXPECT_TRUE(st.delete_override_at(p, "a", 0).value());
  EXPECT_FALSE(st.delete_override_at(p, "a", 0).value());
  EXPECT_EQ(st.override_count(), 2U);
}

TEST(MemoryStoreOverride, TheBoundRefusesANewOneAndNothingChanges) {
  memory_store_options o = opts();
  o.max_overrides = 2;
  memory_store st(o);
  const policy_id p = st.define_at("api", expr("quota 10"), 0).value();
  ASSERT_TRUE(st.set_override_at(p, "a", expr("quota 20"), 0));
  ASSERT_TRUE(st.set_override_at(p, "b", expr("quota 20"), 0));
  ASSERT_TRUE(decided(st, p, "c", 0, 10).allowed);
  const auto r = st.set_override_at(p, "c", expr("quota 20"), 0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().field, "overrides");
  EXPECT_FALSE(decided(st, p, "c", 0).allowed);  // still the configured quota, spent
  // Replacing one is not a new one; deleting one makes room.
  EXPECT_TRUE(st.set_override_at(p, "a", expr("quota 30"), 0));
  EXPECT_TRUE(st.delete_override_at(p, "b", 0).value());
  EXPECT_TRUE(st.set_override_at(p, "c", expr("quota 20"), 0));
  EXPECT_TRUE(decided(st, p, "c", 0, 10).allowed);  // 10 used of 20
  EXPECT_FALSE(decided(st, p, "c", 0).allowed);
}

/// The definition written out: one core state and one policy per key.
struct reference {
  any_policy configured;
  std::map<std::string, any_policy> overrides;
  std::map<std::string, any_state> states;

  const any_policy& policy_of(const std::string& k) const {
    auto it = overrides.find(k);
    return it == overrides.end() ? configured : it->second;
  }
  /// A key holds a state from its first admit on, and a state that comes
  /// out of a carry-over fresh is dropped, as in the store.
  decision decide_at(const std::string& k, tick now, std::int64_t cost) {
    const any_policy& p = policy_of(k);
    auto it = states.find(k);
    any_state s = it == states.end() ? fresh_state(p) : it->second;
    const decision d = decide(p, s, now, cost);
    keep(k, std::move(s));
    return d;
  }
  void keep(const std::string& k, any_state s) {
    if (s == fresh_state(policy_of(k))) {
      if (states.count(k) == 0) return;
    }
    states.insert_or_assign(k, std::move(s));
  }
  void move(const std::string& k, const any_policy& to, tick now) {
    auto it = states.find(k);
    if (it == states.end()) return;
    any_state s = reconfigure(policy_of(k), it->second, to, now).value();
    if (s == fresh_state(to)) {
      states.erase(it);
    } else {
      it->second = std::move(s);
    }
  }
  void set(const std::string& k, const any_policy& to, tick now) {
    if (encode_policy(policy_of(k)) == encode_policy(to) && overrides.count(k) != 0) return;
    move(k, to, now);
    overrides.insert_or_assign(k, to);
  }
  void erase(const std::string& k, tick now) {
    if (overrides.count(k) == 0) return;
    move(k, configured, now);
    overrides.erase(k);
  }
  void define(const any_policy& to, tick now) {
    for (auto it = states.begin(); it != states.end();) {
      if (overrides.count(it->first) != 0) {
        ++it;
        continue;
      }
      any_state s = reconfigure(configured, it->second, to, now).value();
      if (s == fresh_state(to)) {
        it = states.erase(it);
      } else {
        it->second = std::move(s);
        ++it;
      }
    }
    configured = to;
  }
};

TEST(MemoryStoreOverride, DecidesAsTheDefinitionOnRandomTraces) {
  const std::vector<std::string> shapes[] = {
      {"gcra 10/1s", "gcra 30/1s burst=5", "gcra 3/1s burst=20", "gcra 10/500ms"},
      {"token-bucket 10/1s", "token-bucket 40/1s burst=4", "token-bucket 2/1s burst=30"},
      {"fixed-window 10/1s", "fixed-window 30/1s", "fixed-window 3/2s"},
      {"sliding-log 5/1s", "sliding-log 20/1s", "sliding-log 2/300ms"},
      {"all(gcra 10/1s, quota 50)", "all(gcra 30/1s burst=3, quota 80)", "all(gcra 1/1s, quota 10)"},
  };
  std::uint64_t seed = 12345;
  const auto next = [&](std::uint64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (seed >> 33) % n;
  };
  const std::vector<std::string> keys = {"a", "b", "c"};
  for (const auto& shape : shapes) {
    memory_store st(opts());
    reference ref{expr(shape[0]), {}, {}};
    const policy_id p = st.define_at("p", ref.configured, 0).value();
    tick now = 0;
    for (int step = 0; step < 3000; ++step) {
      now += static_cast<tick>(next(60)) * ms;
      const std::string& k = keys[next(keys.size())];
      const std::uint64_t op = next(100);
      SCOPED_TRACE(shape[0] + " step " + std::to_string(step) + " key " + k);
      if (op < 4) {
        const any_policy to = expr(shape[next(shape.size())]);
        ASSERT_TRUE(st.set_override_at(p, k, to, now));
        ref.set(k, to, now);
      } else if (op < 7) {
        ASSERT_TRUE(st.delete_override_at(p, k, now));
        ref.erase(k, now);
      } else if (op < 8) {
        const any_policy to = expr(shape[next(shape.size())]);
        ASSERT_TRUE(st.define_at("p", to, now));
        ref.define(to, now);
      } else {
        const auto cost = static_cast<std::int64_t>(1 + next(3));
        const decision want = ref.decide_at(k, now, cost);
        const decision got = decided(st, p, k, now, cost);
        ASSERT_EQ(got.allowed, want.allowed);
        ASSERT_EQ(got.remaining, want.remaining);
        ASSERT_EQ(got.retry_after, want.retry_after);
        ASSERT_EQ(got.reset_after, want.reset_after);
      }
    }
  }
}

TEST(MemoryStoreOverride, ABatchAndAMultiCheckRequestUseTheOverride) {
  memory_store st(opts());
  const policy_id p = st.define_at("api", expr("quota 1"), 0).value();
  const policy_id q = st.define_at("org", expr("quota 100"), 0).value();
  ASSERT_TRUE(st.set_override_at(p, "big", expr("quota 3"), 0));
  // A batch mixing the overridden key with keys without one, in order.
  std::vector<check> cs;
  for (int i = 0; i < 10; ++i) cs.push_back(check{p, i % 2 == 0 ? "big" : "small", 1});
  std::vector<store_request> rs;
  for (const auto& c : cs) rs.push_back(store_request{std::span<const check>(&c, 1), 0, 1, {}});
  std::vector<store_decision> out(rs.size());
  st.decide_many_at(rs, out);
  std::string got;
  for (const auto& d : out) got += d.d.allowed ? 'y' : 'n';
  EXPECT_EQ(got, "yyynynnnnn");  // big: its override's 3; small: the configured 1
  ASSERT_TRUE(st.set_override_at(p, "two", expr("quota 2"), 0));
  const check both[] = {{p, "two", 1}, {q, "two", 1}};
  EXPECT_TRUE(st.decide_at(store_request{both, 0, 1, {}}).d.allowed);
  EXPECT_TRUE(st.decide_at(store_request{both, 0, 1, {}}).d.allowed);
  EXPECT_FALSE(st.decide_at(store_request{both, 0, 1, {}}).d.allowed);  // the override's 2 spent: org charged twice
  EXPECT_EQ(decided(st, q, "two", 0, 98).allowed, true);
}

TEST(MemoryStoreOverride, ManyOverridesEachFoundAndNoOtherKeyTouched) {
  // The lookup's filter (overrides.hpp) may pass a key without an
  // override, never miss one that has one, after sets and deletes alike.
  memory_store st(opts());
  const policy_id p = st.define_at("api", expr("quota 1"), 0).value();
  const auto key = [](int i) { return "k" + std::to_string(i); };
  for (int i = 0; i < 600; i += 2) ASSERT_TRUE(st.set_override_at(p, key(i), expr("quota 2"), 0));
  for (int i = 0; i < 600; i += 3)
    if (i % 2 == 0) {
      ASSERT_TRUE(st.delete_override_at(p, key(i), 0).value());
    }
  for (int i = 0; i < 600; ++i) {
    const bool has = i % 2 == 0 && i % 3 != 0;
    EXPECT_EQ(st.override_of(p, key(i)).value().has_value(), has) << i;
    int admitted = 0;
    while (admitted < 5 && decided(st, p, key(i), 0).allowed) ++admitted;
    EXPECT_EQ(admitted, has ? 2 : 1) << i;
  }
  // A batch sees the same.
  std::vector<check> cs;
  for (int i = 600; i < 700; ++i) cs.push_back(check{p, "", 1});
  std::vector<std::string> ks;
  for (int i = 600; i < 700; ++i) ks.push_back(key(i));
  for (std::size_t i = 0; i < cs.size(); ++i) cs[i].key = ks[i];
  for (int i = 600; i < 700; i += 5) ASSERT_TRUE(st.set_override_at(p, key(i), expr("quota 2"), 0));
  for (int round = 0; round < 2; ++round) {
    std::vector<store_request> rs;
    for (const auto& c : cs) rs.push_back(store_request{std::span<const check>(&c, 1), 0, 1, {}});
    std::vector<store_decision> out(rs.size());
    st.decide_many_at(rs, out);
    for (std::size_t i = 0; i < out.size(); ++i)
      EXPECT_EQ(out[i].d.allowed, round == 0 || i % 5 == 0) << "round " << round << " key " << ks[i];
  }
}

TEST(MemoryStoreOverride, RacingDecisionsLoseNoAdmitAndSeeNoFreshState) {
  // A quota never refills: whatever the order of the changes and the
  // decisions, the key admits exactly its last override's N in all.
  memory_store st(opts());
  const policy_id p = st.define_at("api", expr("quota 100"), 0).value();
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> admitted{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 200000 && !stop.load(); ++i)
        if (decided(st, p, "k", 0).allowed) admitted.fetch_add(1);
    });
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(st.set_override_at(p, "k", expr(i % 2 == 0 ? "quota 300" : "quota 150"), 0));
    if (i % 7 == 0) {
      ASSERT_TRUE(st.delete_override_at(p, "k", 0));
    }
  }
  ASSERT_TRUE(st.set_override_at(p, "k", expr("quota 400"), 0));
  stop = true;
  for (auto& t : ts) t.join();
  while (decided(st, p, "k", 0).allowed) admitted.fetch_add(1);
  EXPECT_EQ(admitted.load(), 400);
}

TEST(MemoryStoreOverride, SnapshotStatesRoundTrip) {
  memory_store a(opts());
  const policy_id p = a.define_at("api", expr("gcra 10/1s"), 0).value();
  ASSERT_TRUE(a.set_override_at(p, "x", expr("gcra 20/1s burst=4"), 0));
  ASSERT_TRUE(a.set_override_at(p, "y", expr("gcra 1/1s"), 0));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(decided(a, p, "x", 0).allowed);
  const auto saved = a.override_states(p);
  ASSERT_EQ(saved.size(), 2U);
  EXPECT_EQ(saved[0].key, "x");
  memory_store b(opts());
  const policy_id pb = b.define_at("api", expr("gcra 10/1s"), 0).value();
  ASSERT_EQ(b.restore_overrides(pb, saved).value(), 2U);
  EXPECT_EQ(b.override_count(), 2U);
  for (tick t : {0 * ms, 10 * ms, 50 * ms, 60 * ms})
    for (const char* k : {"x", "y", "z"}) {
      const decision da = decided(a, p, k, t);
      const decision db = decided(b, pb, k, t);
      EXPECT_EQ(da.allowed, db.allowed) << k << " at " << t;
      EXPECT_EQ(da.retry_after, db.retry_after) << k << " at " << t;
    }
  // One that cannot stand for the policy is refused, nothing changed.
  std::vector<override_state> wrong = {{"w", expr("quota 3"), fresh_state(expr("quota 3"))}};
  const auto r = b.restore_overrides(pb, wrong);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().field, "policy");
  EXPECT_EQ(b.override_count(), 2U);
}

}  // namespace
}  // namespace sluice::keyed_memory_store_override_test
