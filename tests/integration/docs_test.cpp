// The repository's documents stand alone and stay true. The contract,
// ../shared/docs/semantics.md, is kept in the repository too
// (docs/semantics.md) so a checkout without shared/ beside it still has it;
// like the P096 goldens (explore_test.cpp), the copy is checked to be the
// shared one, byte for byte, whenever shared/ is there. The README's
// explorer transcript is the explorer's real screen.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "cli_support.hpp"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using test::slurp;

const fs::path shared_contract = fs::path(SLUICE_SHARED_DIR) / "docs" / "semantics.md";
const fs::path contract = fs::path(SLUICE_SOURCE_DIR) / "docs" / "semantics.md";
const fs::path readme = fs::path(SLUICE_SOURCE_DIR) / "README.md";

TEST(Contract, IsInTheRepository) { EXPECT_EQ(slurp(contract).rfind("# The limiters' contract\n", 0), 0u) << contract; }

TEST(Contract, CopyIsTheSharedOne) {
  if (!fs::exists(shared_contract)) GTEST_SKIP() << "no " << shared_contract << " beside this checkout";
  EXPECT_TRUE(slurp(contract) == slurp(shared_contract))
      << contract << " differs from " << shared_contract << "; copy the shared one over it";
}

// The indented block that follows the README's "    $ sluice" line, without
// its indent: a whole session, ending where the explorer ends.
std::string readme_explorer_transcript() {
  std::istringstream in(slurp(readme));
  std::string line;
  while (std::getline(in, line) && line != "    $ sluice") {
  }
  std::string block;
  std::string blanks;  // blank lines count only when the block goes on
  while (std::getline(in, line) && (line.empty() || line.rfind("    ", 0) == 0)) {
    if (line.empty()) {
      blanks += '\n';
      continue;
    }
    block += blanks + line.substr(4) + '\n';
    blanks.clear();
  }
  return block;
}

TEST(Readme, ExplorerTranscriptIsTheRealSession) {
  const std::string shown = readme_explorer_transcript();
  ASSERT_FALSE(shown.empty()) << "no \"    $ sluice\" block in " << readme;
  // What was typed: the rest of each prompt's line.
  std::istringstream lines(shown);
  std::string line;
  std::string typed;
  const std::string prompt = "choice> ";
  while (std::getline(lines, line))
    if (line.rfind(prompt, 0) == 0) typed += line.substr(prompt.size()) + '\n';
  const auto r = test::run_cli({"--echo"}, typed);
  EXPECT_EQ(r.status, cli::exit_ok);
  EXPECT_EQ(r.out, shown);
}

}  // namespace
}  // namespace sluice
