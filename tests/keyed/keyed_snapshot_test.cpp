// Snapshots: decisions after a save and a restore equal the decisions
// without the restart (every algorithm and composites, at the same moment
// and shifted by whole windows); a truncated, corrupt or foreign file is
// refused with a clear error and the running store is left as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>

#include "keyed/keyed_support.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice::keyed_snapshot_test {
namespace {

using namespace sluice::keyed_test;
namespace fs = std::filesystem;

/// A fresh folder for one test's files, removed afterwards.
class temp_dir {
 public:
  temp_dir() {
    std::string t = (fs::temp_directory_path() / "sluice-snap-XXXXXX").string();
    path_ = ::mkdtemp(t.data());
  }
  ~temp_dir() { fs::remove_all(path_); }
  [[nodiscard]] std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void spit(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

/// The least common multiple of the windows of `p`'s window-aligned parts
/// (fixed window, sliding counter, sliding buckets; 0 past 2^62), so a shift
/// by it keeps every window's alignment. Other algorithms shift by anything.
detail::i128 window_lcm(const any_policy& p) {
  detail::i128 l = 1;
  std::visit(
      [&](const auto& pol) {
        using P = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          for (const auto& part : pol.parts()) {
            const detail::i128 w = window_lcm(part);
            l = l / std::gcd(static_cast<std::int64_t>(l), static_cast<std::int64_t>(w)) * w;
            if (l > (detail::i128{1} << 62)) l = 0;
            if (l == 0) return;
          }
        } else if constexpr (std::is_same_v<P, fixed_window> || std::is_same_v<P, sliding_counter> ||
                             std::is_same_v<P, sliding_buckets>) {
          l = pol.limit().window;
        }
      },
      p);
  return l;
}

/// Replays a trace; at a random step saves, restores into a second store
/// placed `shift` ticks later and checks both give the same decisions (the
/// second one's requests shifted too) to the end.
testing::AssertionResult round_trips(std::uint64_t seed, bool shifted, const temp_dir& dir, std::size_t& restored) {
  rng_t g(seed * 0xD1B54A32D192ED03ULL + 11);
  const drawn_policy dp = random_policy(g);
  detail::i128 shift = 0;
  if (shifted) {
    const detail::i128 l = window_lcm(dp.policy);
    if (l == 0 || l > (detail::i128{1} << 40)) return testing::AssertionSuccess();  // no shift keeps alignment
    shift = l * static_cast<detail::i128>(1 + g() % 5);
  }
  auto trace = keyed_trace(dp.c, g, 160, 1 + g() % 12, /*back=*/true);
  if (shifted) {
    for (auto& q : trace) q.now /= 4;  // shifted times must stay far from int64's edges
  }
  const keyed_options o{.shards = 4, .auto_purge = false, .hash_seed = seed};
  keyed_limiter a(dp.policy, o);
  keyed_limiter b(dp.policy, o);
  const std::size_t cut = g() % trace.size();
  const std::string file = dir.file("s" + std::to_string(seed) + ".snap");
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const trace_request& q = trace[i];
    if (i == cut) {
      const tick at = static_cast<tick>(q.now + shift);
      std::uint64_t keys = 0;
      if (seed % 10 == 0) {  // through a real file (fsync and all); in memory otherwise
        auto saved = save_snapshot(a, file, q.now, 1'700'000'000'000'000'000);
        if (!saved) return testing::AssertionFailure() << saved.err().what();
        auto loaded = load_snapshot(b, file, at);
        if (!loaded)
          return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << "): " << loaded.err().what();
        keys = loaded->keys;
      } else {
        auto parsed = parse_snapshot(snapshot_bytes(a, q.now, 7), dp.policy, "memory");
        if (!parsed)
          return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << "): " << parsed.err().what();
        auto states = parsed->states_at(at);
        if (!states) return testing::AssertionFailure() << "seed " << seed << ": " << states.err().what();
        b.restore(*states);
        keys = parsed->info().keys;
      }
      if (keys != a.size()) return testing::AssertionFailure() << "seed " << seed << ": key count";
      ++restored;
    }
    const decision da = a.try_acquire_at(q.key, q.now, q.cost);
    if (i < cut) continue;
    const decision db = b.try_acquire_at(q.key, static_cast<tick>(q.now + shift), q.cost);
    if (!(da == db))
      return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << ") shift "
                                         << static_cast<std::int64_t>(shift) << " step " << i << " (cut " << cut
                                         << ") key " << q.key << " now=" << q.now << " cost=" << q.cost
                                         << ": without restart " << show(da) << ", after restore " << show(db);
  }
  return testing::AssertionSuccess();
}

TEST(KeyedSnapshot, RestoreAtTheSameMomentChangesNoDecision) {
  temp_dir dir;
  std::size_t restored = 0;
  for (std::uint64_t seed = 1; seed <= 500; ++seed) ASSERT_TRUE(round_trips(seed, false, dir, restored));
  EXPECT_EQ(restored, 500U);
}

TEST(KeyedSnapshot, RestoreLaterBehavesAsIfThatMuchTimeHadPassed) {
  temp_dir dir;
  std::size_t restored = 0;
  for (std::uint64_t seed = 1; seed <= 500; ++seed) ASSERT_TRUE(round_trips(seed, true, dir, restored));
  EXPECT_GT(restored, 150U);
}

TEST(KeyedSnapshot, WallClockRestoreCountsTheTimeAway) {
  snapshot_info info;
  info.wall_ns = 1'000'000'000'000;
  EXPECT_EQ(restore_instant(info, 500, 1'000'000'000'100), 400);  // 100 ns away
  EXPECT_EQ(restore_instant(info, 500, 999'999'999'000), 500);    // the wall clock went back: no time passed
  // A bucket saved empty at wall time T is full again once W/L has passed.
  temp_dir dir;
  const any_policy p = gcra::make({1, 1000}, 1).value();
  keyed_limiter a(p, {.hash_seed = 1});
  ASSERT_TRUE(a.try_acquire_at("k", 5000).allowed);
  ASSERT_TRUE(save_snapshot(a, dir.file("w.snap"), 5000, info.wall_ns));
  keyed_limiter b(p, {.hash_seed = 2});
  ASSERT_TRUE(load_snapshot(b, dir.file("w.snap"), restore_instant(info, 70, info.wall_ns + 400)));
  EXPECT_EQ(b.try_acquire_at("k", 70).retry_after, 600);  // 400 of the 1000 ticks have passed
}

/// A restart on the store's own clock: saved with `save_snapshot(store,
/// path)` at the clock's now, the clock moved on by a drawn downtime (any
/// number of ticks, not only whole windows), loaded with `load_snapshot(store,
/// path)` into a new store on that clock. Every later decision must be the
/// one the store that never stopped gives for the same requests.
testing::AssertionResult restarts_exactly(std::uint64_t seed, const temp_dir& dir) {
  rng_t g(seed * 0x9E3779B97F4A7C15ULL + 5);
  const drawn_policy dp = random_policy(g);
  auto trace = keyed_trace(dp.c, g, 160, 1 + g() % 12, /*back=*/false);
  const std::size_t cut = 1 + g() % (trace.size() - 1);
  const tick at_cut = std::max(trace[cut - 1].now, trace[cut].now - 1);
  // Downtime: none, a few ticks, or up to several of the trace's windows.
  // In unsigned arithmetic, and kept so that no shifted instant passes the
  // largest tick (the traces reach the edges of the tick range).
  const std::uint64_t spread = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(trace.back().now) - static_cast<std::uint64_t>(trace.front().now));
  const std::uint64_t room = static_cast<std::uint64_t>(std::numeric_limits<tick>::max()) -
                             static_cast<std::uint64_t>(std::max<tick>(0, trace.back().now));
  const std::uint64_t span = room >= 7 && spread <= (room - 7) / 3 ? 3 * spread + 7 : room;
  const tick down = seed % 3 == 0 || span == 0 ? 0 : static_cast<tick>(g() % span);
  for (std::size_t i = cut; i < trace.size(); ++i) trace[i].now += down;
  manual_clock clock(trace.front().now);
  const keyed_options o{.shards = 4, .auto_purge = false, .hash_seed = seed};
  keyed_limiter running(dp.policy, o, clock);
  for (std::size_t i = 0; i < cut; ++i) (void)running.try_acquire_at(trace[i].key, trace[i].now, trace[i].cost);
  // To at_cut, in steps a tick can hold (the trace may span more than INT64_MAX).
  while (clock.now() < at_cut) {
    const std::uint64_t gap = static_cast<std::uint64_t>(at_cut) - static_cast<std::uint64_t>(clock.now());
    clock.advance(static_cast<tick>(std::min<std::uint64_t>(gap, std::numeric_limits<tick>::max())));
  }
  const std::string file = dir.file("r" + std::to_string(seed) + ".snap");
  auto saved = save_snapshot(running, file);
  if (!saved) return testing::AssertionFailure() << saved.err().what();
  clock.advance(down);  // the process is down
  keyed_limiter restarted(dp.policy, o, clock);
  auto loaded = load_snapshot(restarted, file);
  if (!loaded)
    return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << "): " << loaded.err().what();
  for (std::size_t i = cut; i < trace.size(); ++i) {
    const trace_request& q = trace[i];
    const decision a = running.try_acquire_at(q.key, q.now, q.cost);
    const decision b = restarted.try_acquire_at(q.key, q.now, q.cost);
    if (!(a == b))
      return testing::AssertionFailure() << "seed " << seed << " (" << dp.describe << ") down " << down << " step " << i
                                         << " key " << q.key << " now=" << q.now << ": never stopped " << show(a)
                                         << ", restarted " << show(b);
  }
  return testing::AssertionSuccess();
}

TEST(KeyedSnapshot, ARestartAfterAnyDowntimeChangesNoDecision) {
  temp_dir dir;
  for (std::uint64_t seed = 1; seed <= 400; ++seed) ASSERT_TRUE(restarts_exactly(seed, dir));
}

// The defect: a daily fixed window saved near the end of its day came back
// counted in the next day (its reset a whole window late), since the
// snapshot was re-based onto a clock of another origin.
TEST(KeyedSnapshot, AFixedWindowKeepsItsResetAcrossARestart) {
  temp_dir dir;
  constexpr tick day = 86'400'000'000'000;
  const any_policy p = fixed_window::make({3, day}).value();
  keyed_limiter running(p, {.hash_seed = 1});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(running.try_acquire("quota").allowed);
  const std::string f = dir.file("day.snap");
  ASSERT_TRUE(save_snapshot(running, f));
  keyed_limiter restarted(p, {.hash_seed = 2});
  ASSERT_TRUE(load_snapshot(restarted, f));
  const tick now = unix_clock::now();
  const decision a = running.try_acquire_at("quota", now);
  const decision b = restarted.try_acquire_at("quota", now);
  EXPECT_FALSE(b.allowed);
  EXPECT_EQ(b.retry_after, a.retry_after);
  EXPECT_EQ(b.reset_after, a.reset_after);
  // The default clock is the Unix clock: the day ends at 00:00 UTC.
  EXPECT_EQ((static_cast<detail::i128>(now) + b.reset_after) % day, 0);
  // At the first instant of the next day, both admit again.
  const tick next = now + b.reset_after;
  EXPECT_TRUE(running.try_acquire_at("quota", next).allowed);
  EXPECT_TRUE(restarted.try_acquire_at("quota", next).allowed);
}

/// `bytes` (a version-3 snapshot without overrides) made a file of an
/// earlier `version` (1 or 2): its version field, no override count (the
/// 4 bytes after the policy), its recorded length and CRC.
std::string as_version(std::string bytes, char version) {
  bytes[8] = version;
  const auto u32_at = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i)
      v |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
    return v;
  };
  const std::size_t count_at = 36 + u32_at(32);
  EXPECT_EQ(u32_at(count_at), 0U);
  bytes.erase(count_at, 4);
  const std::uint64_t length = bytes.size();
  for (std::size_t i = 0; i < 8; ++i) bytes[bytes.size() - 12 + i] = static_cast<char>((length >> (8 * i)) & 0xFFU);
  const std::uint32_t crc = crc32c(bytes.data(), bytes.size() - 4);
  for (int i = 0; i < 4; ++i)
    bytes[bytes.size() - 4 + static_cast<std::size_t>(i)] = static_cast<char>((crc >> (8 * i)) & 0xFFU);
  return bytes;
}

std::string as_version_1(std::string bytes) { return as_version(std::move(bytes), 1); }

TEST(KeyedSnapshot, AVersion2FileStillLoads) {
  temp_dir dir;
  const any_policy g = gcra::make({2, 1000}, 2).value();
  keyed_limiter a(g, {.hash_seed = 1});
  ASSERT_TRUE(a.try_acquire_at("k", 5000).allowed);
  ASSERT_TRUE(a.try_acquire_at("k", 5000).allowed);
  const std::string f = dir.file("v2.snap");
  spit(f, as_version(snapshot_bytes(a, 5000, 5000), 2));
  keyed_limiter b(g, {.hash_seed = 2});
  auto snap = read_snapshot(f, g);
  ASSERT_TRUE(snap) << snap.err().what();
  EXPECT_EQ(snap->info().version, 2U);
  EXPECT_TRUE(snap->overrides_at(5000).value().empty());
  ASSERT_TRUE(load_snapshot(b, f, 5000));
  EXPECT_EQ(b.try_acquire_at("k", 5000).retry_after, a.try_acquire_at("k", 5000).retry_after);
}

TEST(KeyedSnapshot, Version3KeepsOverridesWithTheirStates) {
  temp_dir dir;
  const any_policy g = gcra::make({2, 1000}, 2).value();
  const any_policy big = gcra::make({10, 1000}, 4).value();
  keyed_limiter a(g, {.hash_seed = 1});
  ASSERT_TRUE(a.try_acquire_at("plain", 100).allowed);
  keyed_limiter mine(big, {.hash_seed = 1, .compact = false});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(mine.try_acquire_at("tenant", 100).allowed);
  const std::vector<override_state> os = {{"tenant", big, *mine.state_of("tenant")}, {"idle", big, fresh_state(big)}};
  const std::string f = dir.file("v3.snap");
  ASSERT_TRUE(save_snapshot(a, os, f, 200, 200));
  auto snap = read_snapshot(f, g);
  ASSERT_TRUE(snap) << snap.err().what();
  EXPECT_EQ(snap->info().version, 3U);
  EXPECT_EQ(snap->info().keys, 1U);
  const auto back = snap->overrides_at(200).value();
  ASSERT_EQ(back.size(), 2U);
  EXPECT_EQ(back[0].key, "tenant");
  EXPECT_EQ(encode_policy(back[0].policy), encode_policy(big));
  EXPECT_TRUE(back[0].state == *mine.state_of("tenant"));
  EXPECT_TRUE(back[1].state == fresh_state(big));
  // Moved by 1000 ticks, as the states are.
  const auto later = snap->overrides_at(1200).value();
  keyed_limiter moved(big, {.hash_seed = 3, .compact = false});
  ASSERT_TRUE(moved.put("tenant", later[0].state));
  EXPECT_EQ(moved.try_acquire_at("tenant", 1200, 2).allowed, mine.try_acquire_at("tenant", 200, 2).allowed);
  // An overridden key that also has a state of the policy is corrupt.
  const std::vector<override_state> clash = {{"plain", big, fresh_state(big)}};
  ASSERT_TRUE(save_snapshot(a, clash, f, 200, 200));
  const auto bad = read_snapshot(f, g);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.err().message.find("overridden key"), std::string::npos) << bad.err().message;
}

TEST(KeyedSnapshot, AVersion1FileIsReadWhereThatIsExact) {
  temp_dir dir;
  manual_clock clock(1'000'000);
  // A GCRA state shifts exactly: its version-1 moment is placed at its wall time.
  const any_policy g = gcra::make({1, 1000}, 1).value();
  keyed_limiter a(g, {.hash_seed = 1}, clock);
  ASSERT_TRUE(a.try_acquire_at("k", 5000).allowed);
  const std::string f = dir.file("v1.snap");
  spit(f, as_version_1(snapshot_bytes(a, 5000, 999'400)));  // saved at wall time 999'400: 600 ticks ago
  keyed_limiter b(g, {.hash_seed = 2}, clock);
  auto r = load_snapshot(b, f);
  ASSERT_TRUE(r) << r.err().what();
  EXPECT_EQ(r->version, 1U);
  EXPECT_EQ(b.try_acquire_at("k", clock.now()).retry_after, 400);  // 600 of the 1000 ticks have passed
  // At its own moment (sluice replay) every version-1 state is exact.
  const any_policy w = fixed_window::make({2, 1000}).value();
  keyed_limiter c(w, {.hash_seed = 3}, clock);
  ASSERT_TRUE(c.try_acquire_at("k", 1500).allowed);
  spit(f, as_version_1(snapshot_bytes(c, 1600, 999'000)));
  keyed_limiter d(w, {.hash_seed = 4}, clock);
  ASSERT_TRUE(load_snapshot(d, f, 1600));
  EXPECT_EQ(d.try_acquire_at("k", 1600).remaining, 0);
  // Moved to the Unix clock, a fixed window cannot keep its alignment: refused, store untouched.
  keyed_limiter e(w, {.hash_seed = 5}, clock);
  const auto refused_v1 = load_snapshot(e, f);
  ASSERT_FALSE(refused_v1);
  EXPECT_NE(refused_v1.err().message.find("format version 1"), std::string::npos) << refused_v1.err().message;
  EXPECT_NE(refused_v1.err().message.find("delete the file"), std::string::npos) << refused_v1.err().message;
  EXPECT_EQ(e.size(), 0U);
}

/// A store with a few states, and its snapshot's bytes.
struct sample {
  any_policy policy = token_bucket::make({3, 1000}, 5).value();
  keyed_limiter store{policy, {.hash_seed = 1}};
  std::string bytes;
  explicit sample(const temp_dir& dir) {
    for (int i = 0; i < 20; ++i) (void)store.try_acquire_at("key" + std::to_string(i % 7), 100 + i, 1 + i % 3);
    const std::string f = dir.file("sample.snap");
    EXPECT_TRUE(save_snapshot(store, f, 200, 42));
    bytes = slurp(f);
  }
};

/// Loading `bytes` must fail with a message containing `expect`, and leave
/// a store's states as they were.
void refused(const temp_dir& dir, const sample& s, const std::string& bytes, const std::string& expect) {
  const std::string f = dir.file("bad.snap");
  spit(f, bytes);
  keyed_limiter target(s.policy, {.hash_seed = 9});
  ASSERT_TRUE(target.try_acquire_at("running", 0, 4).allowed);
  const auto before = target.state_of("running");
  const auto r = load_snapshot(target, f, 0);
  ASSERT_FALSE(r) << "accepted: " << expect;
  EXPECT_NE(r.err().message.find(expect), std::string::npos) << r.err().message;
  EXPECT_EQ(r.err().field, "snapshot");
  EXPECT_EQ(target.size(), 1U);
  EXPECT_TRUE(target.state_of("running") == before);
}

TEST(KeyedSnapshot, RefusesForeignFiles) {
  temp_dir dir;
  sample s(dir);
  refused(dir, s, "", "is not a sluice snapshot");
  refused(dir, s, "hello, world\n", "is not a sluice snapshot");
  refused(dir, s, std::string(4096, '\0'), "is not a sluice snapshot");
  refused(dir, s, "SLUICESN", "is truncated");
  std::string v4 = s.bytes;
  v4[8] = 4;
  refused(dir, s, v4, "is a snapshot of format version 4; this sluice reads versions 1 to 3");
  const auto r = load_snapshot(s.store, dir.file("missing.snap"), 0);
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("cannot read"), std::string::npos);
}

TEST(KeyedSnapshot, RefusesEveryTruncation) {
  temp_dir dir;
  sample s(dir);
  for (std::size_t n = 0; n < s.bytes.size(); ++n)
    EXPECT_FALSE(parse_snapshot(s.bytes.substr(0, n), s.policy, "cut")) << n << " of " << s.bytes.size() << " bytes";
  refused(dir, s, s.bytes.substr(0, s.bytes.size() - 1), "is truncated");
  refused(dir, s, s.bytes.substr(0, s.bytes.size() / 2), "is truncated");
  refused(dir, s, s.bytes + "x", "is truncated");  // the end marker is no longer at the end
}

TEST(KeyedSnapshot, RefusesEveryFlippedBit) {
  temp_dir dir;
  sample s(dir);
  for (std::size_t i = 0; i < s.bytes.size(); ++i) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::string b = s.bytes;
      b[i] = static_cast<char>(b[i] ^ (1 << bit));
      EXPECT_FALSE(parse_snapshot(b, s.policy, "flipped")) << "byte " << i << " bit " << bit;
    }
  }
  std::string b = s.bytes;
  b[b.size() / 2] = static_cast<char>(b[b.size() / 2] ^ 0x10);
  refused(dir, s, b, "is corrupt (checksum mismatch)");
}

TEST(KeyedSnapshot, RefusesAnotherLimitersSnapshot) {
  temp_dir dir;
  sample s(dir);
  const std::string f = dir.file("sample.snap");
  keyed_limiter other(token_bucket::make({3, 1000}, 6).value(), {});
  const auto r = load_snapshot(other, f, 0);
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("was saved for another limiter: token-bucket(limit=3, window=1000, burst=5) "
                                 "(this one: token-bucket(limit=3, window=1000, burst=6))"),
            std::string::npos)
      << r.err().message;
}

TEST(KeyedSnapshot, CorruptStatesBehindAValidChecksumAreRefused) {
  // A file whose checksum is right but whose state is out of range (as a
  // foreign writer could make): refused by the range checks.
  temp_dir dir;
  const any_policy p = gcra::make({1, 10}, 2).value();
  keyed_limiter k(p, {});
  ASSERT_TRUE(k.try_acquire_at("a", 0).allowed);
  const std::string f = dir.file("g.snap");
  ASSERT_TRUE(save_snapshot(k, f, 0, 0));
  std::string b = slurp(f);
  // The debt is the last 16 bytes of the record before the trailer (28 bytes).
  const std::size_t debt = b.size() - 28 - 16;
  // 2^62 + ... > the most a report leaves (semantics.md, "Reports": max(S·W,
  // 2^52·L − 1) = 2^52 − 1 here); a debt of 100 > S·W is a report's.
  b[debt + 7] = static_cast<char>(0x40);
  const std::uint32_t crc = crc32c(b.data(), b.size() - 4);
  for (int i = 0; i < 4; ++i)
    b[b.size() - 4 + static_cast<std::size_t>(i)] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  spit(f, b);
  const auto r = read_snapshot(f, p);
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("gcra debt out of range"), std::string::npos) << r.err().message;
}

TEST(KeyedSnapshot, AtomicWriteLeavesNoTemporaryFile) {
  temp_dir dir;
  sample s(dir);
  ASSERT_TRUE(save_snapshot(s.store, dir.file("again.snap"), 300, 43));
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir.file("")))) {
    ++files;
    EXPECT_EQ(e.path().filename().string().find(".sluice-tmp-"), std::string::npos) << e.path();
  }
  EXPECT_EQ(files, 2U);
  const auto r = save_snapshot(s.store, dir.file("no-such-folder/x.snap"), 0, 0);
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("cannot write"), std::string::npos);
}

TEST(KeyedSnapshot, Crc32cKnownAnswer) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283U);
  EXPECT_EQ(crc32c("", 0), 0U);
  EXPECT_EQ(crc32c("6789", 4, crc32c("12345", 5)), 0xE3069283U);
}

TEST(KeyedSnapshot, PolicyEncodingRoundTripsAndDescribes) {
  rng_t g(77);
  for (int i = 0; i < 300; ++i) {
    const drawn_policy dp = random_policy(g);
    const std::string bytes = encode_policy(dp.policy);
    const auto back = decode_policy(bytes);
    ASSERT_TRUE(back) << back.err().what();
    EXPECT_EQ(encode_policy(*back), bytes);
    EXPECT_EQ(describe_policy(*back), describe_policy(dp.policy));
  }
  EXPECT_EQ(describe_policy(all_of::make({gcra::make({10, 1000}, 3).value(), quota::make(5).value()}).value()),
            "all(gcra(limit=10, window=1000, burst=3), quota(units=5))");
}

}  // namespace
}  // namespace sluice::keyed_snapshot_test
