// The repository's documents stand alone and stay true. The contract is
// docs/semantics.md, in the repository, and no document points outside it
// for it. The README's explorer transcript is the explorer's real screen.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"

namespace sluice::cli_docs_test {
namespace {

namespace fs = std::filesystem;
using test::slurp;

const fs::path contract = fs::path(SLUICE_SOURCE_DIR) / "docs" / "semantics.md";
const fs::path readme = fs::path(SLUICE_SOURCE_DIR) / "README.md";

TEST(Contract, IsInTheRepository) { EXPECT_EQ(slurp(contract).rfind("# The limiters' contract\n", 0), 0u) << contract; }

// The contract left ../shared/docs/ for docs/semantics.md; a link to the
// old place is a link to nothing.
TEST(Contract, NoDocumentPointsToTheOldSharedCopy) {
  std::size_t read = 0;
  for (const fs::path& p : {readme, fs::path(SLUICE_SOURCE_DIR) / "docs"}) {
    std::vector<fs::path> files;
    if (fs::is_directory(p)) {
      for (const auto& e : fs::directory_iterator(p))
        if (e.path().extension() == ".md") files.push_back(e.path());
    } else {
      files.push_back(p);
    }
    for (const auto& f : files) {
      EXPECT_EQ(slurp(f).find("shared/docs/semantics"), std::string::npos) << f;
      ++read;
    }
  }
  EXPECT_GE(read, 5u);
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
}  // namespace sluice::cli_docs_test
