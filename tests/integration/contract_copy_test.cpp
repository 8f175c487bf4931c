// The contract, ../shared/docs/semantics.md, is kept in the repository too
// (docs/semantics.md) so a checkout without shared/ beside it still has it;
// like the P096 goldens (explore_test.cpp), the copy is checked to be the
// shared one, byte for byte, whenever shared/ is there.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace sluice {
namespace {

namespace fs = std::filesystem;

const fs::path shared_contract = fs::path(SLUICE_SHARED_DIR) / "docs" / "semantics.md";
const fs::path contract = fs::path(SLUICE_SOURCE_DIR) / "docs" / "semantics.md";

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot read " << p;
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(Contract, IsInTheRepository) { EXPECT_EQ(slurp(contract).rfind("# The limiters' contract\n", 0), 0u) << contract; }

TEST(Contract, CopyIsTheSharedOne) {
  if (!fs::exists(shared_contract)) GTEST_SKIP() << "no " << shared_contract << " beside this checkout";
  EXPECT_TRUE(slurp(contract) == slurp(shared_contract))
      << contract << " differs from " << shared_contract << "; copy the shared one over it";
}

}  // namespace
}  // namespace sluice
