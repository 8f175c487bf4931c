// The memory store's request ids (store/memory.hpp; docs/serve.md, "Request
// ids"): with ids_on_clock their life is read on the store's clock alone, so
// a request far ahead ends no other id's window; their bytes are bounded by
// max_id_bytes, where a new id is answered by on_full with nothing charged
// and no remembered id is forgotten within its window; and save_ids /
// load_ids carry them, receipts and refund marks included, to another store.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "keyed/memory_store_support.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::keyed_memory_store_ids_test {
namespace {

using memory_store_support::one;
using memory_store_support::policy;

constexpr tick second = 1'000'000'000;

/// A store's options whose ids live by `clock` alone (as sluice serve's).
memory_store_options on_clock(const manual_clock& clock) {
  memory_store_options o;
  o.clock = &clock;
  o.ids_on_clock = true;
  return o;
}

TEST(MemoryStoreIds, ARequestFarAheadEndsNoOtherIdsWindowOnTheClock) {
  // The report: with server.client_time, 64 requests 30 years ahead, and a
  // victim's retry within its window was charged again.
  manual_clock clock(1000 * second);
  memory_store s(on_clock(clock));
  const policy_id q = s.define("q", policy("quota 1000")).value();
  const tick now = clock.now();
  ASSERT_EQ(one(s, q, "victim", now, 1, "victim-order").from, source::store);
  const tick ahead = now + 30 * 365 * 86400 * second;
  for (int i = 0; i < 200; ++i)  // every one of the 16 stripes, all but surely
    ASSERT_TRUE(one(s, q, "attacker", ahead, 1, "attacker-" + std::to_string(i)).d.allowed);
  clock.advance(second);
  EXPECT_EQ(one(s, q, "victim", now + second, 1, "victim-order").from, source::replayed);
  EXPECT_EQ(one(s, q, "victim", now + second).d.remaining, 1000 - 2);  // charged once, and now
  // Its window ends on the clock, whatever the requests' instants say.
  clock.advance(60 * second);
  EXPECT_EQ(one(s, q, "victim", now + second, 1, "victim-order").from, source::store);
}

TEST(MemoryStoreIds, ANewIdAtTheByteBoundIsAnsweredByOnFullAndChargesNothing) {
  manual_clock clock(0);
  memory_store_options o = on_clock(clock);
  o.idempotency_window = 10 * second;
  o.max_id_bytes = 65'536;
  o.on_full = failure_mode::fail_closed;
  memory_store s(o);
  const policy_id q = s.define("q", policy("quota 100000")).value();
  const std::string key(200, 'k');
  int held = 0;
  while (held < 10'000 && one(s, q, key, 0, 1, "id-" + std::to_string(held)).from == source::store) ++held;
  ASSERT_LT(held, 10'000);
  EXPECT_GT(held, 10);
  std::printf("ids of one 200-byte-key check in 65,536 bytes: %d\n", held);
  const std::string refused = "id-" + std::to_string(held);
  EXPECT_EQ(s.stats().fallbacks, 1U);
  // Every id remembered before still replays; the refused one is refused
  // again; nothing of either was charged.
  for (const int i : {0, held / 2, held - 1})
    EXPECT_EQ(one(s, q, key, 1, 1, "id-" + std::to_string(i)).from, source::replayed) << i;
  EXPECT_EQ(one(s, q, key, 1, 1, refused).from, source::fail_closed);
  EXPECT_EQ(one(s, q, key, 1).d.remaining, 100000 - held - 1);
  // Once the window has ended on the clock, room is made: decided once.
  clock.advance(10 * second);
  const store_decision d = one(s, q, key, 2, 1, refused);
  EXPECT_EQ(d.from, source::store);
  EXPECT_EQ(d.d.remaining, 100000 - held - 2);
}

TEST(MemoryStoreIds, SavedIdsComeBackWithTheirReceiptsAndRefundMarks) {
  const std::string file =
      (std::filesystem::temp_directory_path() / ("sluice-ids-" + std::to_string(::getpid()))).string();
  manual_clock clock(100 * second);
  const memory_store_options o = on_clock(clock);
  memory_store a(o);
  const policy_id q = a.define("q", policy("quota 10")).value();
  const policy_id w = a.define("w", policy("all(fixed-window 5/1h, gcra 5/1h)")).value();
  const check both[] = {{q, "alice"}, {w, "alice"}};
  const store_decision first = a.decide_at({.checks = both, .now = clock.now(), .cost = 1, .id = "order-1"});
  ASSERT_EQ(first.from, source::store);
  ASSERT_EQ(one(a, q, "alice", clock.now(), 1, "order-2").from, source::store);
  ASSERT_EQ(a.refund_at("order-2", clock.now()).status, refund_status::refunded);
  ASSERT_EQ(one(a, q, "bob", clock.now(), 1, "order-3").from, source::store);
  auto saved = a.save_ids(file);
  ASSERT_TRUE(saved) << saved.err().what();
  EXPECT_EQ(*saved, 3U);
  // Another store (a restart): the policies defined in another order, so
  // their numbers differ; "q" states carried as a snapshot would.
  clock.advance(30 * second);
  memory_store b(o);
  const policy_id w2 = b.define("w", policy("all(fixed-window 5/1h, gcra 5/1h)")).value();
  const policy_id q2 = b.define("q", policy("quota 10")).value();
  ASSERT_NE(q2, q);
  auto loaded = b.load_ids(file);
  ASSERT_TRUE(loaded) << loaded.err().what();
  EXPECT_EQ(*loaded, 3U);
  const check both2[] = {{q2, "alice"}, {w2, "alice"}};
  const store_decision again = b.decide_at({.checks = both2, .now = clock.now(), .cost = 1, .id = "order-1"});
  EXPECT_EQ(again.from, source::replayed);
  EXPECT_EQ(again.d, first.d);
  const check other{q2, "carol"};
  EXPECT_EQ(b.decide_at({.checks = {&other, 1}, .now = clock.now(), .cost = 1, .id = "order-1"}).from,
            source::id_conflict);
  EXPECT_EQ(b.refund_at("order-2", clock.now()).status, refund_status::already_refunded);
  // order-1's receipts name the policies by name: its refund gives back.
  ASSERT_TRUE(one(b, q2, "alice", clock.now()).d.allowed);  // a state to give back to
  std::int64_t given[max_checks] = {};
  EXPECT_EQ(b.refund_at("order-1", clock.now(), {}, given).status, refund_status::refunded);
  EXPECT_EQ(given[0], 1);
  // Past its window (on the clock) an id is not loaded.
  clock.advance(31 * second);
  memory_store c(o);
  (void)c.define("q", policy("quota 10"));
  (void)c.define("w", policy("all(fixed-window 5/1h, gcra 5/1h)"));
  EXPECT_EQ(c.load_ids(file).value(), 0U);
  // A file that fails its checks loads nothing and names the fault.
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bytes[50] = static_cast<char>(bytes[50] ^ 1);
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  memory_store d(o);
  (void)d.define("q", policy("quota 10"));
  const auto bad = d.load_ids(file);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.err().message.find("checksum mismatch"), std::string::npos) << bad.err().message;
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace sluice::keyed_memory_store_ids_test
