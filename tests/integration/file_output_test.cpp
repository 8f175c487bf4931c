// Files the command writes (--save-state, --plot) are written safely: only
// a regular file (or a new one) is replaced, through symbolic links to their
// target, keeping its mode, atomically; every refusal names the flag, the
// path and why.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "cli_support.hpp"

namespace sluice::cli_file_output_test {
namespace {

namespace fs = std::filesystem;
using test::run_cli;
using test::slurp;
using test::temp_dir;

unsigned mode_of(const std::string& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return static_cast<unsigned>(st.st_mode & 07777);
}

/// A command writing a file, and what the file must hold after.
struct writer_case {
  const char* name;
  std::string flag;
  std::vector<std::string> args;  // the flag and its path are appended
  std::string marker;             // a part of what a correct file holds
  unsigned new_mode;              // a new file's mode under umask 022
};

void PrintTo(const writer_case& c, std::ostream* os) { *os << c.name; }

const writer_case writers[] = {
    {"save_state", "--save-state", {"replay", "--algorithm", "gcra", "--limit", "1/1s"}, "SLUICESN", 0600},
    {"plot", "--plot", {"compare", "--limit", "1/1s"}, "<svg", 0644},
};

class FileOutput : public ::testing::TestWithParam<writer_case> {
 protected:
  void SetUp() override { old_umask_ = ::umask(022); }
  void TearDown() override { ::umask(old_umask_); }

  [[nodiscard]] test::run_result write_to(const std::string& path) const {
    std::vector<std::string> args = GetParam().args;
    args.push_back(GetParam().flag);
    args.push_back(path);
    return run_cli(args, "0 k\n");
  }

 private:
  mode_t old_umask_ = 0;
};

TEST_P(FileOutput, NewFileGetsTheDocumentedMode) {
  temp_dir dir;
  const auto r = write_to(dir.file("new"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(slurp(dir.file("new")).find(GetParam().marker), std::string::npos);
  EXPECT_EQ(mode_of(dir.file("new")), GetParam().new_mode);
}

TEST_P(FileOutput, ExistingFileKeepsItsMode) {
  temp_dir dir;
  for (const unsigned mode : {0644U, 0640U, 0600U, 0664U}) {
    const std::string f = dir.file("kept");
    std::ofstream(f) << "old";
    fs::permissions(f, static_cast<fs::perms>(mode), fs::perm_options::replace);
    const auto r = write_to(f);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(slurp(f).find(GetParam().marker), std::string::npos);
    EXPECT_EQ(mode_of(f), mode) << std::oct << mode;
  }
}

TEST_P(FileOutput, DeviceIsRefusedAndLeftAlone) {
  const auto r = write_to("/dev/null");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "sluice: " + GetParam().flag +
                       ": cannot write '/dev/null': it is a character device, not a regular file; sluice replaces "
                       "only regular files\n");
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_P(FileOutput, FifoIsRefused) {
  temp_dir dir;
  const std::string f = dir.file("fifo");
  ASSERT_EQ(::mkfifo(f.c_str(), 0644), 0);
  const auto r = write_to(f);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "sluice: " + GetParam().flag + ": cannot write '" + f +
                       "': it is a FIFO, not a regular file; sluice replaces only regular files\n");
  EXPECT_TRUE(fs::is_fifo(f));
}

TEST_P(FileOutput, DirectoryIsRefused) {
  temp_dir dir;
  const auto r = write_to(dir.path().string());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "sluice: " + GetParam().flag + ": cannot write '" + dir.path().string() +
                       "': it is a directory, not a regular file; sluice replaces only regular files\n");
  const auto slash = write_to(dir.path().string() + "/");
  EXPECT_EQ(slash.status, 2);
  EXPECT_NE(slash.err.find("not a file name (it ends with '/')"), std::string::npos) << slash.err;
}

TEST_P(FileOutput, SymlinkIsWrittenThroughToItsTarget) {
  temp_dir dir;
  fs::create_directories(dir.path() / "real");
  const std::string target = dir.file("real/target");
  std::ofstream(target) << "old";
  fs::permissions(target, static_cast<fs::perms>(0640), fs::perm_options::replace);
  // A relative link, and a link to that link.
  fs::create_symlink("real/target", dir.path() / "link");
  fs::create_symlink("link", dir.path() / "link2");
  for (const char* name : {"link", "link2"}) {
    std::ofstream(target, std::ios::trunc) << "old";
    const auto r = write_to(dir.file(name));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(fs::is_symlink(dir.path() / name)) << name;
    EXPECT_EQ(fs::read_symlink(dir.path() / name), name == std::string("link") ? "real/target" : "link");
    EXPECT_NE(slurp(target).find(GetParam().marker), std::string::npos) << name;
    EXPECT_EQ(mode_of(target), 0640U);
  }
  // No temporary file is left in either folder.
  for (const auto& folder : {dir.path(), dir.path() / "real"})
    for (const auto& e : fs::directory_iterator(folder))
      EXPECT_EQ(e.path().filename().string().find(".sluice-tmp-"), std::string::npos) << e.path();
}

TEST_P(FileOutput, DanglingSymlinkCreatesItsTarget) {
  temp_dir dir;
  fs::create_symlink("made", dir.path() / "dangling");
  const auto r = write_to(dir.file("dangling"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir.path() / "dangling"));
  EXPECT_NE(slurp(dir.file("made")).find(GetParam().marker), std::string::npos);
}

TEST_P(FileOutput, SymlinkToADeviceIsRefused) {
  temp_dir dir;
  fs::create_symlink("/dev/null", dir.path() / "null");
  const auto r = write_to(dir.file("null"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "sluice: " + GetParam().flag + ": cannot write '" + dir.file("null") +
                       "' (through links to '/dev/null'): it is a character device, not a regular file; sluice "
                       "replaces only regular files\n");
  EXPECT_TRUE(fs::is_symlink(dir.path() / "null"));
}

TEST_P(FileOutput, SymlinkLoopSaysWhy) {
  temp_dir dir;
  fs::create_symlink("b", dir.path() / "a");
  fs::create_symlink("a", dir.path() / "b");
  const auto r = write_to(dir.file("a"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "sluice: " + GetParam().flag + ": cannot write '" + dir.file("a") +
                       "': Too many levels of symbolic links\n");
}

TEST_P(FileOutput, MissingFolderSaysWhy) {
  temp_dir dir;
  const std::string f = dir.file("no-such-folder/x");
  const auto r = write_to(f);
  EXPECT_EQ(r.status, 2);  // refused before the run
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "sluice: " + GetParam().flag + ": cannot write '" + f + "': No such file or directory\n");
}

INSTANTIATE_TEST_SUITE_P(SaveStateAndPlot, FileOutput, ::testing::ValuesIn(writers),
                         [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace sluice::cli_file_output_test
