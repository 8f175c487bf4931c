// Running the sluice command in tests: in-process through cli::run (fast,
// exact streams) and as a real process (exit status, real stdin).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"

namespace sluice::test {

/// The whole of a file, byte for byte (a failed expectation when unreadable).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot read " << p;
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// A fresh directory under the system's temporary folder (mkdtemp), removed
/// with all it holds when the object goes.
class temp_dir {
 public:
  temp_dir() {
    std::string t = (std::filesystem::temp_directory_path() / "sluice-test-XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) throw std::runtime_error("mkdtemp: cannot make " + t);
    path_ = t;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct run_result {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs `sluice ARGS...` in-process with `input` as standard input.
inline run_result run_cli(std::vector<std::string> args, const std::string& input = "") {
  args.insert(args.begin(), "sluice");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::istringstream in(input);
  std::ostringstream out;
  std::ostringstream err;
  run_result r;
  r.status = cli::run(static_cast<int>(argv.size()), argv.data(), in, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

/// Runs `sluice ARGS REDIRECTS` through the shell and returns its exit
/// status and what it wrote to the pipe popen gives it. With REDIRECTS such
/// as "< in.txt 2>&1 >/dev/full" (stderr to the pipe, then stdout to the
/// full device), `out` holds the command's standard error.
inline run_result run_shell(const std::string& args, const std::string& redirects) {
  run_result r;
  const std::string cmd = std::string(SLUICE_BINARY) + " " + args + " " + redirects;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[65536];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

/// Runs the real binary through the shell: `sluice ARGS < input_file`;
/// returns its exit status and standard output.
inline run_result run_binary(const std::string& args, const std::string& input_file) {
  return run_shell(args, "< '" + input_file + "' 2>/dev/null");
}

/// A replay trace ("time key cost" lines) of `n` lines over `keys` keys
/// named `<key_prefix><i>`: steps of 0 to 0.3 s, sometimes back by up to
/// 0.2 s, costs 1 to 3. Deterministic in `seed`.
inline std::string random_trace(std::uint64_t seed, int n, int keys = 4, const std::string& key_prefix = "k") {
  std::mt19937_64 g(seed);
  std::string out = "# time key cost\n";
  std::int64_t ms = 1000;
  for (int i = 0; i < n; ++i) {
    const auto r = g() % 10;
    ms += r < 3 ? 0 : r < 9 ? static_cast<std::int64_t>(g() % 300) : -static_cast<std::int64_t>(g() % 200);
    out += std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1) + " " + key_prefix +
           std::to_string(g() % static_cast<std::uint64_t>(keys)) + " " + std::to_string(1 + g() % 3) + "\n";
  }
  return out;
}

/// `random_trace` with operations (docs/traces.md): about one line in ten
/// a report, one in five a decision with a request id drawn from a few (so
/// ids repeat, on the same request or on another: replays and conflicts).
inline std::string random_ops_trace(std::uint64_t seed, int n, int keys = 4) {
  std::mt19937_64 g(seed);
  std::string out = "# time key cost op\n";
  std::int64_t ms = 1000;
  for (int i = 0; i < n; ++i) {
    const auto r = g() % 10;
    ms += r < 3 ? 0 : r < 9 ? static_cast<std::int64_t>(g() % 300) : -static_cast<std::int64_t>(g() % 200);
    out += std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1) + " k" +
           std::to_string(g() % static_cast<std::uint64_t>(keys)) + " " + std::to_string(1 + g() % 3);
    const auto op = g() % 10;
    if (op == 0) out += " report";
    if (op == 1 || op == 2) out += " id=i" + std::to_string(g() % 8);
    out += "\n";
  }
  return out;
}

}  // namespace sluice::test
