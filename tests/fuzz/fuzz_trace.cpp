// Fuzz target: `sluice replay` and `sluice compare` on arbitrary traces
// never crash or hang, and every failure is a usage error (status 2) with
// a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "cli.hpp"

namespace {
int run(std::initializer_list<const char*> args, const std::string& input, std::string& err_text) {
  std::istringstream in(input);
  std::ostringstream out;
  std::ostringstream err;
  const int st = sluice::cli::run(static_cast<int>(args.size()), std::data(args), in, out, err);
  err_text = err.str();
  return st;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::string err;
  for (const char* algo : {"sliding-log", "leaky-queue", "sliding-buckets"}) {
    const int st = run({"sluice", "replay", "--algorithm", algo, "--limit", "3/1s", "--buckets", "5"}, input, err);
    if (algo != std::string("sliding-buckets") && st == 2 && err.find("--buckets") != std::string::npos) continue;
    if (st != 0 && (st != 2 || err.rfind("sluice: ", 0) != 0)) std::abort();
  }
  const int st = run({"sluice", "compare", "--limit", "2/1s", "--format", "csv"}, input, err);
  if (st != 0 && (st != 2 || err.rfind("sluice: ", 0) != 0)) std::abort();
  return 0;
}
