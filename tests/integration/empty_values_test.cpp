// An empty or missing value is a usage error (exit 2) naming the flag, for
// every option of every subcommand that takes one: never silently the
// default (`--load-state "$UNSET"` must not start every client fresh).
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "cli_support.hpp"

namespace sluice::cli_empty_values_test {
namespace {

using test::run_cli;

struct value_case {
  const char* name;               // the test's name
  std::vector<std::string> args;  // a valid command line around the flag
  std::string flag;               // the option given an empty value
};

// Each row: a command that runs with exit 0 without the flag, then the flag
// with '' added.
const value_case cases[] = {
    {"replay_algorithm", {"replay", "--limit", "1/1s"}, "--algorithm"},
    {"replay_policy", {"replay"}, "--policy"},
    {"replay_limit", {"replay", "--algorithm", "quota", "--quota", "1"}, "--limit"},
    {"replay_burst", {"replay", "--algorithm", "gcra", "--limit", "1/1s"}, "--burst"},
    {"replay_buckets", {"replay", "--algorithm", "sliding-buckets", "--limit", "1/1s", "--buckets", "1"}, "--buckets"},
    {"replay_queue", {"replay", "--algorithm", "leaky-queue", "--limit", "1/1s"}, "--queue"},
    {"replay_quota", {"replay", "--algorithm", "quota", "--quota", "1"}, "--quota"},
    {"replay_format", {"replay", "--algorithm", "gcra", "--limit", "1/1s"}, "--format"},
    {"replay_load_state", {"replay", "--algorithm", "gcra", "--limit", "1/1s"}, "--load-state"},
    {"replay_save_state", {"replay", "--algorithm", "gcra", "--limit", "1/1s"}, "--save-state"},
    {"compare_limit", {"compare", "--limit", "1/1s"}, "--limit"},
    {"compare_burst", {"compare", "--limit", "1/1s"}, "--burst"},
    {"compare_buckets",
     {"compare", "--limit", "1/1s", "--algorithms", "sliding-buckets", "--buckets", "1"},
     "--buckets"},
    {"compare_queue", {"compare", "--limit", "1/1s", "--algorithms", "leaky-queue"}, "--queue"},
    {"compare_quota", {"compare", "--limit", "1/1s", "--algorithms", "fixed-window,quota", "--quota", "1"}, "--quota"},
    {"compare_algorithms", {"compare", "--limit", "1/1s"}, "--algorithms"},
    {"compare_policy", {"compare", "--policy", "gcra 1/1s"}, "--policy"},
    {"compare_window", {"compare", "--limit", "1/1s"}, "--window"},
    {"compare_format", {"compare", "--limit", "1/1s"}, "--format"},
    {"compare_plot", {"compare", "--limit", "1/1s"}, "--plot"},
    {"compare_granularity", {"compare", "--limit", "1/1s"}, "--granularity"},
    {"compare_top", {"compare", "--limit", "1/1s"}, "--top"},
    {"worst_case_policy", {"worst-case"}, "--policy"},
    {"worst_case_window", {"worst-case", "--policy", "gcra 1/1s"}, "--window"},
    {"worst_case_granularity", {"worst-case", "--policy", "gcra 1/1s"}, "--granularity"},
    {"worst_case_format", {"worst-case", "--policy", "gcra 1/1s"}, "--format"},
};

void PrintTo(const value_case& c, std::ostream* os) { *os << c.name; }

class EmptyValue : public ::testing::TestWithParam<value_case> {};

TEST_P(EmptyValue, IsAUsageErrorNamingTheFlag) {
  const auto& c = GetParam();
  std::vector<std::string> args = c.args;
  args.push_back(c.flag);
  args.emplace_back("");
  const auto r = run_cli(args, "0\n");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(r.err.starts_with("sluice: " + c.flag + ": ")) << r.err;
  EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;
}

TEST_P(EmptyValue, EqualsFormIsTheSame) {
  const auto& c = GetParam();
  std::vector<std::string> args = c.args;
  args.push_back(c.flag + "=");
  const auto r = run_cli(args, "0\n");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(r.err.starts_with("sluice: " + c.flag + ": ")) << r.err;
}

TEST_P(EmptyValue, MissingValueIsAUsageErrorNamingTheFlag) {
  const auto& c = GetParam();
  std::vector<std::string> args = c.args;
  args.push_back(c.flag);
  const auto r = run_cli(args, "0\n");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.err.find(c.flag), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(EveryOption, EmptyValue, ::testing::ValuesIn(cases),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(EmptyValue, EveryBaseCommandRuns) {
  // The rows above fail for the empty value, not for the rest of the line.
  for (const auto& c : cases) {
    if (c.flag == "--policy" && (c.args.size() == 1)) continue;  // --policy is what these need
    if (c.flag == "--algorithm") continue;
    const auto r = run_cli(c.args, "0\n");
    EXPECT_EQ(r.status, 0) << c.name << ": " << r.err;
  }
}

TEST(EmptyValue, EmptyTraceNameIsAUsageError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"replay", "--algorithm", "gcra", "--limit", "1/1s", ""},
        std::vector<std::string>{"compare", "--limit", "1/1s", ""}}) {
    const auto r = run_cli(args, "0\n");
    EXPECT_EQ(r.status, 2) << args[0];
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(r.err.starts_with("sluice: trace: ")) << r.err;
  }
}

}  // namespace
}  // namespace sluice::cli_empty_values_test
