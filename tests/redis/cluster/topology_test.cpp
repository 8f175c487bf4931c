// The Redis store while a real cluster's topology changes: ASK, MOVED and
// TRYAGAIN made to happen one by one (CLUSTER SETSLOT, MIGRATE); slots
// moved by `redis-cli --cluster reshard` while decisions flow, every one
// compared field for field with the memory store on the same deterministic
// trace; and a primary that joins later (without the library) and takes
// slots.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <thread>

#include "redis/cluster/cluster_support.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::redis_test::cluster_topology_test {
namespace {

using namespace std::chrono_literals;

/// The same policies in a cluster store and in a memory store, and a
/// deterministic trace of requests over tagged keys decided by both.
class twin_stores {
 public:
  explicit twin_stores(store_options o = {}) {
    o.tick_ns = 0;  // virtual ticks
    o.command_timeout = 3s;
    o.breaker_failures = 0;
    remote_ = open_cluster_store(o);
    for (const char* text :
         {"gcra 5/1s burst=3", "fixed-window 4/1s", "sliding-log 3/1s", "sliding-counter 5/2s",
          "token-bucket 3/2s burst=4", "leaky-queue 4/1s queue=3", "sliding-buckets 6/2s buckets=4", "quota 60",
          "all(token-bucket 2/1s burst=2, quota 500)", "any(fixed-window 2/1s, sliding-log 3/2s)"}) {
      const std::string name = "p" + std::to_string(remote_ids_.size());
      remote_ids_.push_back(remote_->define(name, policy(text)).value());
      local_ids_.push_back(local_.define(name, policy(text)).value());
    }
  }

  [[nodiscard]] redis_store& remote() { return *remote_; }

  /// Decides one batch of `size` requests on distinct tags drawn from
  /// `tags` (one request per tag, so no two requests of a batch share a
  /// key), in both stores; one call each when `one_by_one`. Returns how many
  /// answers differ (printing the first few) and counts non-store answers.
  std::size_t batch(const std::vector<std::string>& tags, std::size_t size, bool one_by_one) {
    now_ += 10'000'000;  // 10 ms of virtual time
    std::vector<std::size_t> picked;
    while (picked.size() < std::min(size, tags.size())) {
      const std::size_t t = rng_() % tags.size();
      if (std::find(picked.begin(), picked.end(), t) == picked.end()) picked.push_back(t);
    }
    keys_.assign(picked.size() * 2, {});
    ids_.assign(picked.size(), {});
    std::vector<check> rc(picked.size() * 2), lc(picked.size() * 2);
    std::vector<store_request> rr, lr;
    for (std::size_t i = 0; i < picked.size(); ++i) {
      const std::string& tag = tags[picked[i]];
      keys_[2 * i] = "{" + tag + "}:u" + std::to_string(rng_() % 3);
      keys_[2 * i + 1] = "{" + tag + "}";
      const std::size_t p1 = rng_() % remote_ids_.size();
      const std::size_t p2 = rng_() % remote_ids_.size();
      const bool two = rng_() % 3 == 0;
      rc[2 * i] = {remote_ids_[p1], keys_[2 * i]};
      lc[2 * i] = {local_ids_[p1], keys_[2 * i]};
      rc[2 * i + 1] = {remote_ids_[p2], keys_[2 * i + 1]};
      lc[2 * i + 1] = {local_ids_[p2], keys_[2 * i + 1]};
      if (rng_() % 8 == 0) ids_[i] = "req" + std::to_string(++requests_);  // a fresh id: its key is new
      const std::int64_t cost = 1 + static_cast<std::int64_t>(rng_() % 2);
      rr.push_back({.checks = std::span(&rc[2 * i], two ? 2 : 1), .now = now_, .cost = cost, .id = ids_[i]});
      lr.push_back({.checks = std::span(&lc[2 * i], two ? 2 : 1), .now = now_, .cost = cost, .id = ids_[i]});
    }
    std::vector<store_decision> got(rr.size()), want(lr.size());
    if (one_by_one) {
      for (std::size_t i = 0; i < rr.size(); ++i) got[i] = remote_->decide_at(rr[i]);
    } else {
      remote_->decide_many_at(rr, got);
    }
    local_.decide_many_at(lr, want);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < rr.size(); ++i) {
      ++decisions_;
      admitted_ += want[i].d.allowed ? 1 : 0;
      if (got[i].from != source::store) ++not_from_store_;
      if (got[i].from == want[i].from && got[i].d == want[i].d) continue;
      ++differ;
      if (shown_++ < 5)
        ADD_FAILURE() << "request on " << keys_[2 * i] << " at " << now_ << ": cluster " << show(got[i].d) << " from "
                      << name_of(got[i].from) << ", memory " << show(want[i].d) << " from " << name_of(want[i].from);
    }
    return differ;
  }

  std::size_t decisions_ = 0, admitted_ = 0, not_from_store_ = 0;

 private:
  std::unique_ptr<redis_store> remote_;
  memory_store local_;
  std::vector<policy_id> remote_ids_, local_ids_;
  std::mt19937_64 rng_{2024};
  tick now_ = 1'000'000'000;
  std::vector<std::string> keys_, ids_;
  std::size_t requests_ = 0;
  int shown_ = 0;
};

std::vector<std::string> numbered_tags(std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back("r" + std::to_string(i));
  return out;
}

/// CLUSTER SETSLOT `slot` NODE `id` on every running primary, the target
/// first (as redis-cli does).
void assign_slot(testing::redis_cluster& c, int slot, std::size_t target) {
  const std::string id = c.id_of(target);
  std::vector<std::size_t> order{target};
  for (const std::size_t p : c.primaries())
    if (p != target) order.push_back(p);
  for (const std::size_t p : order) {
    const auto r = c.cli(p, {"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", id});
    ASSERT_EQ(r.out, "OK\n") << c.address(p);
  }
}

TEST(ClusterTopology, AskMovedAndTryagainAreFollowed) {
  auto& c = shared_cluster();
  store_options o;
  o.command_timeout = 10s;  // the migration ends in another thread: redis-cli runs, slow on a loaded machine
  o.breaker_failures = 0;
  auto st = open_cluster_store(o);
  ASSERT_TRUE(st);
  const auto q = st->define("q", policy("quota 100")).value();
  const std::string tag = "{ask-test}";
  const int slot = *redis::braced_key_slot(tag);  // keys "{ask-test}:..." hash by "{ask-test"
  const std::size_t a = c.owner_of(static_cast<std::uint16_t>(slot));
  std::size_t b = a;
  for (const std::size_t p : c.primaries())
    if (p != a) b = p;
  ASSERT_NE(a, b);
  const std::string ka = tag + ":a", kb = tag + ":b", kn = tag + ":new";
  auto left = [&](const std::string& key) {  // units left of quota 100 at `key`
    const auto d = st->peek_at(one_check({q, key}, 1));
    EXPECT_EQ(d.from, source::store) << key;
    return d.d.remaining + 1;
  };
  ASSERT_TRUE(st->decide_at(one_check({q, ka}, 1)).d.allowed);  // both on a
  ASSERT_TRUE(st->decide_at(one_check({q, kb}, 1)).d.allowed);
  // Another store reads the map now, while the slot is a's.
  auto stale = open_cluster_store(o);
  ASSERT_TRUE(stale);
  const auto sq = stale->define("q", policy("quota 100")).value();
  ASSERT_EQ(stale->decide_at(one_check({sq, "{elsewhere}"}, 1)).from, source::store);

  // The slot migrates from a to b. Every call names a key's override key
  // beside its state keys (docs/redis.md, "Overrides"), so while the slot
  // is split every call on it touches a key one side lacks: a answers ASK
  // for a key it lacks, b (after ASKING) and a both answer TRYAGAIN while
  // the call's keys are not all there, and the call waits, within the
  // command timeout, until the migration ends (in another thread, 200 ms
  // after the store was first told TRYAGAIN: a fixed delay from the start
  // could end the migration before a slow machine made the call): a key
  // whose keys a still holds, a fresh key, and a request over both.
  ASSERT_EQ(c.cli(b, {"CLUSTER", "SETSLOT", std::to_string(slot), "IMPORTING", c.id_of(a)}).out, "OK\n");
  ASSERT_EQ(c.cli(a, {"CLUSTER", "SETSLOT", std::to_string(slot), "MIGRATING", c.id_of(b)}).out, "OK\n");
  const std::string b_port = std::to_string(c.node(b).port());
  const auto finish_later = [&] {
    return std::thread([&] {
      for (const auto until = std::chrono::steady_clock::now() + 2s;
           st->redis_stats().cluster_retries == 0 && std::chrono::steady_clock::now() < until;)
        std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(200ms);
      const auto rest = c.cli(a, {"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), "100"});
      std::vector<std::string> args{"MIGRATE", "127.0.0.1", b_port, "", "0", "5000", "KEYS"};
      for (std::size_t pos = 0; pos < rest.out.size();) {
        const auto nl = rest.out.find('\n', pos);
        if (nl > pos) args.push_back(rest.out.substr(pos, nl - pos));
        pos = nl == std::string::npos ? rest.out.size() : nl + 1;
      }
      if (args.size() > 7) {
        EXPECT_EQ(c.cli(a, args).out, "OK\n");
      }
      assign_slot(c, slot, b);
    });
  };
  // A key a lacks: ASK, then TRYAGAIN at b until the slot is b's.
  std::thread finish = finish_later();
  const auto t0 = std::chrono::steady_clock::now();
  const auto fresh = st->decide_at(one_check({q, kn}, 1, 5));
  const auto waited = std::chrono::steady_clock::now() - t0;
  finish.join();
  EXPECT_EQ(fresh.from, source::store);
  EXPECT_EQ(fresh.d.remaining, 95);
  EXPECT_GE(st->redis_stats().asked, 1U);
  EXPECT_GE(waited, 200ms);  // it waited for the migration, within the command timeout
  EXPECT_GT(st->redis_stats().cluster_retries, 0U);
  // The slot is b's and its keys moved: the request over both keys is
  // decided there (MOVED from a, for a store whose map still says a).
  const check both[] = {{q, ka}, {q, kb}};
  const auto d = st->decide_at({.checks = both, .now = 4, .cost = 1, .id = {}});
  EXPECT_EQ(d.from, source::store);
  EXPECT_TRUE(d.d.allowed);
  EXPECT_EQ(left(ka), 98);
  EXPECT_EQ(left(kb), 98);
  EXPECT_EQ(left(kn), 95);

  // The slot is b's now: the store with the old map is sent there by MOVED.
  const auto moved = stale->decide_at(one_check({sq, ka}, 5));
  EXPECT_EQ(moved.from, source::store);
  EXPECT_EQ(moved.d.remaining, 99);  // its own prefix: a fresh key
  EXPECT_EQ(stale->redis_stats().moved, 1U);
  c.wait_ready(30s);
  std::printf("redirections: moved %llu, asked %llu, retries %llu, slot-map reads %llu; TRYAGAIN wait %lld ms\n",
              static_cast<unsigned long long>(st->redis_stats().moved),
              static_cast<unsigned long long>(st->redis_stats().asked),
              static_cast<unsigned long long>(st->redis_stats().cluster_retries),
              static_cast<unsigned long long>(st->redis_stats().topology_refreshes),
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()));
}

TEST(ClusterTopology, SlotsMovedDuringLoadDecideExactly) {
  auto& c = shared_cluster();
  twin_stores twins;
  // 200 tags, 64 a batch every 10 virtual ms: each key is asked about every
  // 30 ms or so, so its limits deny as well as admit.
  const auto tags = numbered_tags(200);
  // Warm up: every tag's keys exist before the slots move.
  for (int i = 0; i < 20; ++i) ASSERT_EQ(twins.batch(tags, 64, false), 0U);
  const auto primaries = c.primaries();
  ASSERT_GE(primaries.size(), 3U);
  std::atomic<bool> done{false};
  std::string reshard_error;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread mover([&] {
    try {
      c.reshard(primaries[0], primaries[1], 1500);
      c.reshard(primaries[1], primaries[2], 1500);
    } catch (const std::exception& e) {
      reshard_error = e.what();
    }
    done = true;
  });
  std::size_t differ = 0, batches = 0;
  // Decisions flow until both reshards are over (bounded in count and time).
  while ((!done || batches < 100) && batches < 200'000 && std::chrono::steady_clock::now() - t0 < 240s) {
    differ += twins.batch(tags, 64, batches % 10 == 9);
    ++batches;
  }
  mover.join();
  ASSERT_EQ(reshard_error, "");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto s = twins.remote().redis_stats();
  std::printf(
      "reshard under load: %zu batches, %zu decisions (%zu admitted) in %.1f s; %zu differ from the memory store, "
      "%zu not from the store; moved %llu, asked %llu, retries %llu, slot-map reads %llu\n",
      batches, twins.decisions_, twins.admitted_, secs, differ, twins.not_from_store_,
      static_cast<unsigned long long>(s.moved), static_cast<unsigned long long>(s.asked),
      static_cast<unsigned long long>(s.cluster_retries), static_cast<unsigned long long>(s.topology_refreshes));
  EXPECT_EQ(differ, 0U);
  EXPECT_EQ(twins.not_from_store_, 0U);
  EXPECT_EQ(s.base.store_failures, 0U);
  EXPECT_GT(s.moved + s.asked, 0U);  // the slots really moved under the load
  c.wait_ready(30s);
}

TEST(ClusterTopology, APrimaryThatJoinsLaterGetsTheLibrary) {
  auto& c = shared_cluster();
  twin_stores twins;
  const auto tags = numbered_tags(300);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(twins.batch(tags, 64, false), 0U);  // the store knows the map
  const std::size_t added = c.add_node();
  EXPECT_EQ(c.cli(added, {"FUNCTION", "LIST"}).out.find(std::string(redis_store::library_name())),
            std::string::npos);  // MEET copies none
  c.reshard(c.primaries()[0], added, 500);
  c.wait_ready(30s);
  const auto on_new = tags_on(c, added, 40);
  ASSERT_EQ(on_new.size(), 40U);
  std::size_t differ = 0;
  for (int i = 0; i < 20; ++i) differ += twins.batch(on_new, 20, i % 4 == 3);
  EXPECT_EQ(differ, 0U);
  EXPECT_EQ(twins.not_from_store_, 0U);
  EXPECT_GT(twins.remote().redis_stats().moved, 0U);
  const auto list = c.cli(added, {"FUNCTION", "LIST", "LIBRARYNAME", std::string(redis_store::library_name())});
  EXPECT_NE(list.out.find(std::string(redis_store::library_name())), std::string::npos) << list.out;
  std::printf("joined primary %s: %zu decisions on its slots, the library loaded there by the store\n",
              c.address(added).c_str(), twins.decisions_);
}

}  // namespace
}  // namespace sluice::redis_test::cluster_topology_test
