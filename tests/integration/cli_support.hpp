// Running the sluice command in tests: in-process through cli::run (fast,
// exact streams) and as a real process (exit status, real stdin).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
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

}  // namespace sluice::test
