// `sluice replay --save-state / --load-state`: a second trace replayed from
// the first one's snapshot decides exactly as the two traces in one run; a
// bad snapshot is a usage error (exit 2) that names the flag and the file;
// and a real `sluice replay --save-state` killed with SIGKILL at random
// moments leaves the old snapshot or the new one, never a torn file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_support.hpp"
#include "sluice/keyed/snapshot.hpp"

namespace sluice::cli_keyed_replay_test {
namespace {

namespace fs = std::filesystem;
using test::run_cli;

using test::temp_dir;

/// The rows of a CSV replay without the header and the request numbers.
std::vector<std::string> rows(const std::string& csv) {
  std::vector<std::string> out;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) out.push_back(line.substr(line.find(',') + 1));
  return out;
}

/// A trace of `n` lines over a few keys, times in seconds from `start`.
std::string trace_text(int n, double start, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::string t;
  double now = start;
  for (int i = 0; i < n; ++i) {
    now += static_cast<double>(g() % 400) / 1000.0;
    char line[64];
    std::snprintf(line, sizeof line, "%.3f k%d %d\n", now, static_cast<int>(g() % 4), 1 + static_cast<int>(g() % 3));
    t += line;
  }
  return t;
}

TEST(ReplayState, ASecondTraceContinuesTheFirst) {
  temp_dir dir;
  const std::vector<std::vector<std::string>> limiters = {
      {"--algorithm", "gcra", "--limit", "5/s", "--burst", "4"},
      {"--algorithm", "token-bucket", "--limit", "5/s", "--burst", "4"},
      {"--algorithm", "fixed-window", "--limit", "6/2s"},
      {"--algorithm", "sliding-log", "--limit", "6/2s"},
      {"--algorithm", "sliding-counter", "--limit", "6/2s"},
      {"--algorithm", "sliding-buckets", "--limit", "6/2s", "--buckets", "4"},
      {"--algorithm", "leaky-queue", "--limit", "5/s", "--queue", "4"},
      {"--algorithm", "quota", "--quota", "30"},
  };
  const std::string a = trace_text(120, 0, 1);
  const std::string b = trace_text(120, 30, 2);
  for (const auto& lim : limiters) {
    const std::string snap = dir.file("state.snap");
    auto with = [&](std::vector<std::string> extra) {
      std::vector<std::string> args{"replay"};
      args.insert(args.end(), lim.begin(), lim.end());
      args.insert(args.end(), extra.begin(), extra.end());
      return args;
    };
    const auto whole = run_cli(with({}), a + b);
    const auto first = run_cli(with({"--save-state", snap}), a);
    const auto second = run_cli(with({"--load-state", snap}), b);
    ASSERT_EQ(whole.status, 0) << whole.err;
    ASSERT_EQ(first.status, 0) << first.err;
    ASSERT_EQ(second.status, 0) << lim[1] << ": " << second.err;
    const auto all = rows(whole.out);
    const auto tail = rows(second.out);
    ASSERT_EQ(all.size(), 240U);
    ASSERT_EQ(tail.size(), 120U);
    for (std::size_t i = 0; i < tail.size(); ++i) EXPECT_EQ(tail[i], all[120 + i]) << lim[1] << " row " << i;
    EXPECT_EQ(rows(first.out), std::vector<std::string>(all.begin(), all.begin() + 120)) << lim[1];
  }
}

TEST(ReplayState, BadSnapshotsAreUsageErrors) {
  temp_dir dir;
  const std::string junk = dir.file("x.snap");
  std::ofstream(junk) << "not a snapshot at all\n";
  auto r = run_cli({"replay", "--algorithm", "gcra", "--limit", "5/s", "--load-state", junk}, "0 a\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "sluice: --load-state: '" + junk + "' is not a sluice snapshot\n");
  EXPECT_EQ(r.out, "");

  const std::string good = dir.file("good.snap");
  ASSERT_EQ(run_cli({"replay", "--algorithm", "gcra", "--limit", "5/s", "--save-state", good}, "0 a\n").status, 0);
  r = run_cli({"replay", "--algorithm", "gcra", "--limit", "6/s", "--load-state", good}, "0 a\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(
      r.err.find("sluice: --load-state: '" + good +
                 "' was saved for another limiter: "
                 "gcra(limit=5, window=1000000000, burst=5) (this one: gcra(limit=6, window=1000000000, burst=6))"),
      std::string::npos)
      << r.err;

  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string cut = dir.file("cut.snap");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 3);
  r = run_cli({"replay", "--algorithm", "gcra", "--limit", "5/s", "--load-state", cut}, "0 a\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "sluice: --load-state: '" + cut + "' is truncated (no end marker)\n");

  r = run_cli({"replay", "--algorithm", "gcra", "--limit", "5/s", "--load-state", dir.file("none.snap")}, "0 a\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("sluice: --load-state: cannot read '"), std::string::npos) << r.err;

  r = run_cli({"replay", "--algorithm", "gcra", "--limit", "5/s", "--save-state", dir.file("no/such/dir.snap")},
              "0 a\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("sluice: --save-state: cannot write '"), std::string::npos) << r.err;
}

/// Runs the real binary with stdout to /dev/null; returns its pid.
pid_t spawn(const std::vector<std::string>& args) {
  // Made before fork: the child makes only async-signal-safe calls (no
  // allocation, no stdio) until exec.
  std::string bin = SLUICE_BINARY;
  std::vector<std::string> copy = args;
  std::vector<char*> argv{bin.data()};
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, 1);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

TEST(ReplayState, KilledMidSaveLeavesTheOldOrTheNewFile) {
  temp_dir dir;
  const std::string big = dir.file("big.trace");
  const std::string small = dir.file("small.trace");
  {
    std::ofstream f(big);
    for (int i = 0; i < 60000; ++i) f << i / 1000 << '.' << i % 1000 << " user:" << i << "\n";
    std::ofstream(small) << "0 a\n0 b\n";
  }
  const std::string snap = dir.file("state.snap");
  const std::vector<std::string> base{"replay", "--algorithm", "gcra", "--limit", "100/s", "--burst", "10"};
  auto args_for = [&](const std::string& trace_file) {
    std::vector<std::string> a = base;
    a.insert(a.end(), {"--save-state", snap, trace_file});
    return a;
  };
  const any_policy policy = gcra::make({100, 1'000'000'000}, 10).value();
  // How long a whole run takes, to aim the kills at its end (the save).
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  ::waitpid(spawn(args_for(big)), &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const double full = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto whole = read_snapshot(snap, policy);
  ASSERT_TRUE(whole) << whole.err().what();
  const std::uint64_t new_keys = whole->info().keys;
  ASSERT_EQ(new_keys, 60000U);

  std::mt19937_64 g(2024);
  int saw_old = 0;
  int saw_new = 0;
  // At least 3 rounds however slow a loaded machine makes a run (each round
  // is a small run and at most 1.3 big ones).
  const auto deadline = std::chrono::steady_clock::now() +
                        std::max<std::chrono::steady_clock::duration>(
                            std::chrono::seconds(5), std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                         std::chrono::duration<double>(4 * 1.5 * full)));
  for (int round = 0; round < 40 && std::chrono::steady_clock::now() < deadline; ++round) {
    ::waitpid(spawn(args_for(small)), &status, 0);  // the old file: 2 keys
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    const pid_t pid = spawn(args_for(big));
    const double at = full * (0.3 + static_cast<double>(g() % 1000) / 1000.0);  // 30% … 130% of a run
    std::this_thread::sleep_for(std::chrono::duration<double>(at));
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    const auto r = read_snapshot(snap, policy);
    ASSERT_TRUE(r) << "round " << round << ", killed after " << at << " s: " << r.err().what();
    const std::uint64_t keys = r->info().keys;
    ASSERT_TRUE(keys == 2 || keys == new_keys) << keys;
    (keys == 2 ? saw_old : saw_new) += 1;
    for (const auto& e : fs::directory_iterator(dir.path()))  // a killed writer may leave its temporary file
      if (e.path().filename().string().find(".sluice-tmp-") != std::string::npos) fs::remove(e.path());
  }
  EXPECT_GT(saw_old, 0);
  EXPECT_GE(saw_new + saw_old, 3);
}

}  // namespace
}  // namespace sluice::cli_keyed_replay_test
