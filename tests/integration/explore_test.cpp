// The P096 explorer: P096's two golden sessions and the reference sessions
// (p096_sessions/, made by running the P096 Python reference, see
// p096_reference/make_sessions.py) byte for byte; then what P096 leaves
// open: end of input anywhere, very long lines, non-ASCII bytes, "\r\n", and
// prompts flushed before every read.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_support.hpp"

namespace sluice::cli_explore_test {
namespace {

namespace fs = std::filesystem;

// The P096 golden sessions, as published in ../shared/p096 and kept in the
// repository too (p096_golden/) so a checkout without shared/ still tests
// them; GoldenCopy checks the two are the same when shared/ is there.
const fs::path shared_golden_dir = fs::path(SLUICE_SHARED_DIR) / "p096";
const fs::path golden_dir = fs::path(SLUICE_SOURCE_DIR) / "tests" / "integration" / "p096_golden";
const fs::path sessions_dir = fs::path(SLUICE_SOURCE_DIR) / "tests" / "integration" / "p096_sessions";

using test::slurp;

struct explored {
  int status = -1;
  std::string out;
};

explored explore(const std::string& input, bool echo = true) {
  std::istringstream in(input);
  std::ostringstream out;
  std::ostringstream err;
  explored r;
  r.status = cli::run_explore(in, out, err, echo);
  r.out = out.str();
  return r;
}

// Named golden sessions: P096's own screens.
class GoldenSession : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenSession, MatchesP096ByteForByte) {
  const auto r = explore(slurp(golden_dir / (GetParam() + ".in")));
  EXPECT_EQ(r.status, cli::exit_ok);
  EXPECT_EQ(r.out, slurp(golden_dir / (GetParam() + ".out")));
}

TEST_P(GoldenSession, CopyIsTheSharedOne) {
  if (!fs::exists(shared_golden_dir)) GTEST_SKIP() << "no " << shared_golden_dir << " beside this checkout";
  for (const char* ext : {".in", ".out"})
    EXPECT_EQ(slurp(golden_dir / (GetParam() + ext)), slurp(shared_golden_dir / (GetParam() + ext))) << ext;
}

INSTANTIATE_TEST_SUITE_P(P096, GoldenSession, ::testing::Values("basic", "bad-input"),
                         [](const auto& p) { return p.param == "basic" ? "basic" : "bad_input"; });

// Every session the reference generator wrote.
std::vector<std::string> reference_sessions() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(sessions_dir, ec))
    if (e.path().extension() == ".in") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

class ReferenceSession : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceSession, MatchesThePythonReference) {
  const auto r = explore(slurp(sessions_dir / (GetParam() + ".in")));
  EXPECT_EQ(r.status, cli::exit_ok);
  EXPECT_EQ(r.out, slurp(sessions_dir / (GetParam() + ".out")));
}

INSTANTIATE_TEST_SUITE_P(P096, ReferenceSession, ::testing::ValuesIn(reference_sessions()), [](const auto& p) {
  std::string n = p.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
});

TEST(ReferenceSessions, AreAllThere) {
  // A missing directory would make the suite above silently empty.
  EXPECT_GE(reference_sessions().size(), 30u) << sessions_dir;
}

// End of input: status 0, no hang, the prompt's line finished with "\n" and
// nothing after it.
TEST(ExploreEndOfInput, EmptyInputShowsTheMenuAndStops) {
  const auto r = explore("");
  EXPECT_EQ(r.status, cli::exit_ok);
  EXPECT_EQ(r.out,
            "== Rate limiter ==\n"
            "One list of requests, three limiters set to the same limit - and what each really lets through.\n"
            "\n"
            "1) compare  2) request by request  3) new trace  4) limits  5) quit\n"
            "choice> \n");
}

TEST(ExploreEndOfInput, AfterEveryLineOfTheGoldenSessions) {
  // Cut after k lines: the screen is the golden one up to the next prompt,
  // then "\n".
  for (const char* name : {"basic", "bad-input"}) {
    const std::string in = slurp(golden_dir / (std::string(name) + ".in"));
    const std::string want = slurp(golden_dir / (std::string(name) + ".out"));
    for (std::size_t cut = 0; cut < in.size(); cut = in.find('\n', cut) + 1) {
      SCOPED_TRACE(::testing::Message() << name << " cut at byte " << cut);
      for (bool echo : {true, false}) {
        const auto r = explore(in.substr(0, cut), echo);
        EXPECT_EQ(r.status, cli::exit_ok);
        ASSERT_GE(r.out.size(), 3u);
        EXPECT_EQ(r.out.substr(r.out.size() - 3), "> \n");  // a prompt, then the end
        if (echo) {
          EXPECT_EQ(r.out.substr(0, r.out.size() - 1), want.substr(0, r.out.size() - 1));
        }
      }
      if (in.find('\n', cut) == std::string::npos) break;
    }
  }
}

TEST(ExploreEndOfInput, MidLineAtEveryByte) {
  // A last line without "\n" is still a line; then the input ends.
  const std::string in = slurp(golden_dir / "basic.in");
  for (std::size_t cut = 0; cut <= in.size(); ++cut) {
    const auto r = explore(in.substr(0, cut));
    EXPECT_EQ(r.status, cli::exit_ok) << cut;
    ASSERT_FALSE(r.out.empty());
    EXPECT_EQ(r.out.back(), '\n') << cut;
  }
}

TEST(ExploreEndOfInput, InEachDialog) {
  const std::string menu = "\n1) compare  2) request by request  3) new trace  4) limits  5) quit\nchoice> ";
  EXPECT_TRUE(explore("4\n10\n").out.ends_with("window in seconds (1 to 3600)> \n"));
  EXPECT_TRUE(explore("4\n10\n60\n").out.ends_with("token bucket size, the largest burst (1 to 10)> \n"));
  EXPECT_TRUE(explore("3\nrandom\n").out.ends_with("seed (0 to 999999)> \n"));
  EXPECT_TRUE(explore("3\nown\n").out.ends_with("request times in seconds, in order (2 to 60)> \n"));
  EXPECT_TRUE(explore("3\n").out.ends_with("trace (burst, steady, random or own)> \n"));
  EXPECT_TRUE(explore("2\n").out.ends_with(menu + "\n"));
}

TEST(ExploreEndOfInput, QuitWithoutFinalNewline) {
  const auto r = explore("5");
  EXPECT_EQ(r.status, cli::exit_ok);
  EXPECT_TRUE(r.out.ends_with("choice> 5\nBye.\n")) << r.out;
}

// Without echo the typed lines do not appear: a terminal shows them itself.
TEST(ExploreNoEcho, ShowsOnlyWhatTheProgramWrites) {
  const auto r = explore("4\n3\n10\n2\n5\n", false);
  EXPECT_EQ(r.status, cli::exit_ok);
  const std::string menu = "\n1) compare  2) request by request  3) new trace  4) limits  5) quit\nchoice> ";
  EXPECT_EQ(r.out,
            "== Rate limiter ==\n"
            "One list of requests, three limiters set to the same limit - and what each really lets through.\n" +
                menu +
                "requests allowed per window (1 to 100)> window in seconds (1 to 3600)> "
                "token bucket size, the largest burst (1 to 3)> 3 per 10 seconds, bucket of 2.\n" +
                menu + "Bye.\n");
}

std::string after_menu(const std::string& out, std::size_t nth) {
  // The text between the nth "choice> " prompt's echo and the next menu.
  std::size_t at = 0;
  for (std::size_t i = 0; i <= nth; ++i) at = out.find("choice> ", at) + 8;
  at = out.find('\n', at) + 1;
  return out.substr(at, out.find("\n1) compare", at) - at);
}

// Very long lines: read whole, refused or accepted exactly as P096 would.
TEST(ExploreLongLines, MegabyteLines) {
  const std::string mb(1 << 20, '1');
  std::string spaces(1 << 20, ' ');
  std::string fives;
  for (int i = 0; i < 200000; ++i) fives += "5 ";
  const std::string in = mb + "\n" +                                    // menu: not "1"
                         "3\nown\n" + fives + "\n" +                    // 200000 times: too many
                         "3\nown\n" + spaces + "1 2" + spaces + "\n" +  // two times in a sea of spaces
                         "4\n" + mb + "\n\n" +                          // a million digits, then cancel
                         "5\n";
  const auto r = explore(in);
  EXPECT_EQ(r.status, cli::exit_ok);
  EXPECT_EQ(after_menu(r.out, 0), "Pick a number from 1 to 5.\n");
  EXPECT_TRUE(
      after_menu(r.out, 1).ends_with("Type 2 to 60 whole numbers of seconds, each no earlier than the one before.\n"));
  EXPECT_TRUE(after_menu(r.out, 2).ends_with("> " + spaces + "1 2" + spaces + "\n2 requests.\n"));
  EXPECT_TRUE(
      after_menu(r.out, 3).ends_with("Type a whole number from 1 to 100.\n"
                                     "requests allowed per window (1 to 100)> \nCancelled.\n"));
  EXPECT_TRUE(r.out.ends_with("choice> 5\nBye.\n"));
  // The echo gives every byte back.
  EXPECT_NE(r.out.find("choice> " + mb + "\n"), std::string::npos);
}

// Non-ASCII: refused like any other bad answer, echoed byte for byte.
TEST(ExploreNonAscii, RefusedAndEchoedAsTyped) {
  const auto r = explore(
      "\xef\xbc\x91\n3\n\xe3\x83\x90\xe3\x83\xbc\xe3\x82\xb9\xe3\x83\x88\n"
      "4\n\xd9\xa3\n\xff\xfe\n\n5\n");
  EXPECT_EQ(r.status, cli::exit_ok);
  EXPECT_EQ(after_menu(r.out, 0), "Pick a number from 1 to 5.\n");  // fullwidth "1"
  EXPECT_NE(r.out.find("choice> \xef\xbc\x91\n"), std::string::npos);
  EXPECT_TRUE(after_menu(r.out, 1).ends_with("\xe3\x83\x88\nType burst, steady, random or own.\n"));
  EXPECT_EQ(after_menu(r.out, 2),
            "requests allowed per window (1 to 100)> \xd9\xa3\n"  // Arabic-Indic "3": not a digit to P096
            "Type a whole number from 1 to 100.\n"
            "requests allowed per window (1 to 100)> \xff\xfe\n"
            "Type a whole number from 1 to 100.\n"
            "requests allowed per window (1 to 100)> \n"
            "Cancelled.\n");
}

// "\r\n": as CPython reads a pipe on POSIX, the line ends at "\n" and keeps
// its "\r", so "1\r" is not "1" (and the echo gives the "\r" back).
TEST(ExploreLineEndings, CarriageReturnStaysInTheLine) {
  const auto r = explore("1\r\n5\r\n3\r\n5\n");
  EXPECT_EQ(r.status, cli::exit_ok);
  EXPECT_EQ(after_menu(r.out, 0), "Pick a number from 1 to 5.\n");
  EXPECT_NE(r.out.find("choice> 1\r\n"), std::string::npos);
  EXPECT_EQ(after_menu(r.out, 1), "Pick a number from 1 to 5.\n");
  EXPECT_TRUE(r.out.ends_with("choice> 5\nBye.\n"));
}

// Prompts reach the user before the program waits for a line.
class recording_out : public std::stringbuf {
 public:
  std::string flushed;

 protected:
  int sync() override {
    flushed = str();
    return 0;
  }
};

class lines_in : public std::streambuf {
 public:
  lines_in(std::vector<std::string> lines, const recording_out& out) : lines_(std::move(lines)), out_(out) {}
  std::vector<std::string> seen_at_read;  // what had been flushed when each line was asked for

 protected:
  int_type underflow() override {
    if (gptr() != nullptr && gptr() < egptr()) return traits_type::to_int_type(*gptr());
    seen_at_read.push_back(out_.flushed);
    if (next_ == lines_.size()) return traits_type::eof();
    current_ = lines_[next_++] + "\n";
    setg(current_.data(), current_.data(), current_.data() + current_.size());
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::vector<std::string> lines_;
  const recording_out& out_;
  std::size_t next_ = 0;
  std::string current_;
};

TEST(ExplorePrompts, FlushedBeforeEveryRead) {
  recording_out ob;
  lines_in ib({"3", "random", "x", "7", "4", "2", "9", "1", "5"}, ob);
  std::istream in(&ib);
  std::ostream out(&ob);
  std::ostringstream err;
  EXPECT_EQ(cli::run_explore(in, out, err, false), cli::exit_ok);
  ASSERT_EQ(ib.seen_at_read.size(), 9u);
  const char* const prompts[] = {"choice> ",
                                 "trace (burst, steady, random or own)> ",
                                 "seed (0 to 999999)> ",
                                 "seed (0 to 999999)> ",
                                 "choice> ",
                                 "requests allowed per window (1 to 100)> ",
                                 "window in seconds (1 to 3600)> ",
                                 "token bucket size, the largest burst (1 to 2)> ",
                                 "choice> "};
  for (std::size_t i = 0; i < 9; ++i) EXPECT_TRUE(ib.seen_at_read[i].ends_with(prompts[i])) << i;
}

// The real command, as a user runs it.
TEST(ExploreBinary, EchoSessionThroughTheShell) {
  const auto path = (golden_dir / "basic.in").string();
  const auto r = test::run_binary("--echo", path);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, slurp(golden_dir / "basic.out"));
  const auto sub = test::run_binary("explore --echo", (golden_dir / "bad-input.in").string());
  EXPECT_EQ(sub.status, 0);
  EXPECT_EQ(sub.out, slurp(golden_dir / "bad-input.out"));
  // Without --echo the typed lines are not shown, and the end is the same.
  const auto quiet = test::run_binary("", path);
  EXPECT_EQ(quiet.status, 0);
  EXPECT_EQ(quiet.out.find("choice> 1\n"), std::string::npos);
  EXPECT_TRUE(quiet.out.ends_with("choice> Bye.\n"));
}

TEST(ExploreBinary, EndOfInputIsStatusZero) {
  const auto path = (sessions_dir / "eof-in-limits.in").string();
  const auto r = test::run_binary("--echo", path);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, slurp(sessions_dir / "eof-in-limits.out"));
}

}  // namespace
}  // namespace sluice::cli_explore_test
