// write_file_atomically: a failed write leaves the target as it was and no
// temporary file behind, with the system's reason in the message.
#include "sluice/keyed/atomic_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace sluice::keyed_atomic_file_test {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sluice_atomic_file_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(AtomicFile, FailedWriteLeavesTheOldFileAndNoTemporary) {
  const fs::path f = dir_ / "target";
  std::ofstream(f) << "old";
  const auto r = write_file_atomically(f.string(), [](const byte_sink& sink) {
    if (!sink("half of it")) return false;
    errno = ENOSPC;  // as a full disk reports it
    return false;
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().message, "cannot write '" + f.string() + "': No space left on device");
  EXPECT_EQ(slurp(f), "old");
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "target");
  }
  EXPECT_EQ(files, 1U);
}

TEST_F(AtomicFile, SinkFailureOnADeviceFileReportsItsErrno) {
  // The sink's own failure (write(2) on a full device) is what the message
  // says: shown with /dev/full through a produce that writes there itself.
  const fs::path f = dir_ / "target";
  const auto r = write_file_atomically(f.string(), [](const byte_sink&) {
    std::FILE* full = std::fopen("/dev/full", "w");
    if (full == nullptr) return false;
    const bool ok = std::fputs("x", full) >= 0 && std::fflush(full) == 0;
    std::fclose(full);
    return ok;
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().message, "cannot write '" + f.string() + "': No space left on device");
  EXPECT_FALSE(fs::exists(f));
}

TEST_F(AtomicFile, ReturnsTheTargetOfALink) {
  const fs::path f = dir_ / "target";
  fs::create_symlink("target", dir_ / "link");
  const auto r = write_file_atomically((dir_ / "link").string(), [](const byte_sink& sink) { return sink("new"); });
  ASSERT_TRUE(r) << r.err().message;
  EXPECT_EQ(*r, (dir_ / "target").string());
  EXPECT_EQ(slurp(f), "new");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link"));
}

}  // namespace
}  // namespace sluice::keyed_atomic_file_test
