// Output that cannot be written is an error: every command, run as the real
// binary with its standard output on /dev/full or closed, exits 1 and says
// so on standard error, naming the output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>

#include "cli_support.hpp"

namespace sluice::cli_output_errors_test {
namespace {

namespace fs = std::filesystem;

/// A file holding `text`, removed at the end of the test.
class temp_input {
 public:
  explicit temp_input(const std::string& text) {
    path_ = fs::temp_directory_path() /
            ("sluice_output_errors_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++) + ".txt");
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~temp_input() { fs::remove(path_); }
  temp_input(const temp_input&) = delete;
  temp_input& operator=(const temp_input&) = delete;
  [[nodiscard]] std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

struct output_case {
  const char* name;
  const char* args;
  const char* input;
};

const output_case output_cases[] = {
    {"replay_csv", "replay --algorithm gcra --limit 1/1s", "0\n0\n"},
    {"replay_json", "replay --algorithm gcra --limit 1/1s --format json", "0\n0\n"},
    {"replay_table", "replay --algorithm gcra --limit 1/1s --format table", "0\n0\n"},
    {"compare_table", "compare --limit 3/10s", "0\n1\n"},
    {"compare_csv", "compare --limit 3/10s --format csv", "0\n1\n"},
    {"compare_json", "compare --limit 3/10s --format json", "0\n1\n"},
    {"worst_case_table", "worst-case --policy 'gcra 1/1s'", ""},
    {"worst_case_json", "worst-case --policy 'gcra 1/1s' --format json", ""},
    {"explorer", "", "1\n5\n"},
    {"explorer_subcommand", "explore --echo", "1\n"},
    {"explorer_end_of_input", "", ""},
    {"help", "--help", ""},
    {"version", "--version", ""},
};

void PrintTo(const output_case& c, std::ostream* os) { *os << c.name; }

class OutputLost : public ::testing::TestWithParam<output_case> {};

TEST_P(OutputLost, FullDeviceIsStatusOneWithTheReason) {
  const temp_input in(GetParam().input);
  const auto r = test::run_shell(GetParam().args, "< '" + in.path() + "' 2>&1 >/dev/full");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "sluice: standard output: No space left on device\n");
}

TEST_P(OutputLost, ClosedStandardOutputIsStatusOneWithTheReason) {
  const temp_input in(GetParam().input);
  const auto r = test::run_shell(GetParam().args, "< '" + in.path() + "' 2>&1 >&-");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "sluice: standard output: Bad file descriptor\n");
}

TEST_P(OutputLost, WritableOutputIsStatusZero) {
  const temp_input in(GetParam().input);
  const auto r = test::run_shell(GetParam().args, "< '" + in.path() + "' 2>&1 >/dev/null");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(EveryCommand, OutputLost, ::testing::ValuesIn(output_cases),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(OutputLost, LongReplayStopsAtTheFirstFailedWrite) {
  // 200,000 rows overflow every buffer: the failure comes mid-stream, and
  // the state is not saved after it.
  std::string trace;
  for (int i = 0; i < 200000; ++i) trace += "0 k\n";
  const temp_input in(trace);
  const fs::path snap = fs::temp_directory_path() / ("sluice_output_errors_" + std::to_string(::getpid()) + ".snap");
  fs::remove(snap);
  const auto r = test::run_shell("replay --algorithm gcra --limit 1/1s --save-state '" + snap.string() + "'",
                                 "< '" + in.path() + "' 2>&1 >/dev/full");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "sluice: standard output: No space left on device\n");
  EXPECT_FALSE(fs::exists(snap));
}

TEST(OutputLost, ClosedStandardOutputDoesNotLeakIntoThePlot) {
  // With descriptor 1 closed, the --plot file must not become standard output.
  const temp_input in("0\n1\n");
  const fs::path svg = fs::temp_directory_path() / ("sluice_output_errors_" + std::to_string(::getpid()) + ".svg");
  fs::remove(svg);
  const auto r =
      test::run_shell("compare --limit 3/10s --plot '" + svg.string() + "'", "< '" + in.path() + "' 2>&1 >&-");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "sluice: standard output: Bad file descriptor\n");
  if (fs::exists(svg)) {
    std::ifstream f(svg);
    const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    EXPECT_EQ(text.find("limiter"), std::string::npos) << "the table went into the plot";
    fs::remove(svg);
  }
}

TEST(InputLost, DirectoryAsStandardInputIsReportedAlikeByReplayAndTheExplorer) {
  const auto replay = test::run_shell("replay --algorithm gcra --limit 1/1s", "< / 2>&1 >/dev/null");
  EXPECT_EQ(replay.status, 2);
  EXPECT_EQ(replay.out, "sluice: cannot read standard input: Is a directory\n");
  const auto explorer = test::run_shell("", "< / 2>&1 >/dev/null");
  EXPECT_EQ(explorer.status, 2);
  EXPECT_EQ(explorer.out, "sluice: cannot read standard input: Is a directory\n");
  // The explorer's screen still ends with a newline.
  const auto screen = test::run_shell("", "< / 2>/dev/null");
  EXPECT_TRUE(screen.out.ends_with("choice> \n")) << screen.out;
}

}  // namespace
}  // namespace sluice::cli_output_errors_test
