// The P096 explorer: one list of request times through a fixed window, a
// sliding log and a token bucket set to the same "L per W seconds", and the
// most each really lets into any W seconds.
//
// Byte for byte the P096 program (main.eml and limits.eml): every prompt,
// message, table and validation is its own. The limiters, the busiest window
// and the token bucket's worst case are the core library's (ticks are
// seconds); only the input handling and the traces live here.
//
// Input is read as CPython reads a piped standard input on POSIX: a line
// ends at '\n' only, and the '\n' is dropped (input()); anything else stays
// in the line, so "1\r" (a line from a CRLF file) is not "1" and is refused
// like any other bad answer. Bytes are compared as they are: every check
// P096 makes (spaces, ASCII digits, the trace names) gives the same answer
// on UTF-8 bytes as on code points, so non-ASCII input is refused exactly as
// P096 refuses it, and a length cap that rejects it here rejects it there.
// A last line without '\n' still counts as a line.
//
// End of input: P096 itself stops with Python's EOFError. Here the end of
// input, at any prompt, ends the program with status 0: the prompt's line
// is finished with '\n' and nothing else is printed (no "Bye.", which
// belongs to choosing "quit"). Output that cannot be written (a full disk,
// a closed standard output) ends it with status 1 and a message; input that
// cannot be read (a directory as standard input) with status 2, as replay.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <istream>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "input.hpp"
#include "output.hpp"
#include "sluice/core/analysis.hpp"
#include "sluice/core/fixed_window.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/sliding_log.hpp"
#include "sluice/core/token_bucket.hpp"

namespace sluice::cli {
namespace {

/// Thrown by `session::input` at the end of input; caught by run_explore.
struct end_of_input {};

/// Thrown by `session::input` when the input cannot be read (a directory as
/// standard input) or the output cannot be written; `error` is errno then.
struct input_lost {
  int error;
};
struct output_lost {
  int error;
};

/// The limits: L requests per W seconds, a token bucket of S.
struct limits_cfg {
  std::int64_t limit = 10;
  std::int64_t window = 60;
  std::int64_t bucket = 10;
};

/// P096's plain(): strips spaces (only ' ') from both ends.
std::string plain(std::string_view s) {
  std::size_t i = 0;
  std::size_t j = s.size();
  while (i < j && s[i] == ' ') ++i;
  while (j > i && s[j - 1] == ' ') --j;
  return std::string(s.substr(i, j - i));
}

/// P096's number(): the value of 1 to `most` ASCII digits, else −1.
std::int64_t number(std::string_view s, std::size_t most) {
  if (s.empty() || s.size() > most) return -1;
  std::int64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::string pad(std::string s, std::size_t n) {
  if (s.size() < n) s.append(n - s.size(), ' ');
  return s;
}

std::string lpad(std::string s, std::size_t n) {
  if (s.size() < n) s.insert(0, n - s.size(), ' ');
  return s;
}

std::string seconds(std::int64_t n) { return n == 1 ? "1 second" : std::to_string(n) + " seconds"; }

std::string str(std::int64_t n) { return std::to_string(n); }

/// Which requests one limiter let through (bools in contiguous memory, for
/// sluice::busiest).
struct verdicts {
  explicit verdicts(std::size_t size) : n(size), through(std::make_unique<bool[]>(size)) {}
  [[nodiscard]] std::span<const bool> span() const { return {through.get(), n}; }
  std::size_t n;
  std::unique_ptr<bool[]> through;
};

/// Runs `times` (seconds, in order) through a fresh limiter of `policy`.
template <typename Policy>
verdicts run_through(const Policy& policy, const std::vector<tick>& times) {
  verdicts v(times.size());
  typename Policy::state st{};
  for (std::size_t i = 0; i < times.size(); ++i) v.through[i] = decide(policy, st, times[i], 1).allowed;
  return v;
}

/// P096's results(): fixed window, sliding log, token bucket, in that order.
std::vector<verdicts> results(const std::vector<tick>& times, const limits_cfg& cfg) {
  const rate r{cfg.limit, cfg.window};  // 1–100 per 1–3600: always valid
  std::vector<verdicts> out;
  out.push_back(run_through(fixed_window::make(r).value(), times));
  out.push_back(run_through(sliding_log::make(r).value(), times));
  out.push_back(run_through(token_bucket::make(r, cfg.bucket).value(), times));
  return out;
}

/// P096's burst(): the limit's worth in the last second of a window and
/// again in the first second of the next.
std::vector<tick> burst(const limits_cfg& cfg) {
  std::vector<tick> out(static_cast<std::size_t>(cfg.limit), cfg.window - 1);
  out.insert(out.end(), static_cast<std::size_t>(cfg.limit), cfg.window);
  return out;
}

/// P096's lcg_times(): n times, each 0 to 2·gap seconds after the one
/// before (a linear congruential generator, top 16 of 32 bits).
std::vector<tick> lcg_times(int n, std::int64_t gap, std::int64_t seed) {
  std::vector<tick> out;
  std::uint64_t x = static_cast<std::uint64_t>(seed);
  tick t = 0;
  for (int i = 1; i <= n; ++i) {
    x = (1664525 * x + 1013904223) % 4294967296;
    t += static_cast<tick>((x / 65536) % static_cast<std::uint64_t>(2 * gap + 1));
    out.push_back(t);
  }
  return out;
}

class session {
 public:
  session(std::istream& in, std::ostream& out, bool echo) : in_(in), out_(out), echo_(echo) {}

  /// The P096 main loop. Throws end_of_input.
  void run() {
    print("== Rate limiter ==");
    print("One list of requests, three limiters set to the same limit - and what each really lets through.");
    bool running = true;
    while (running) {
      print("");
      print("1) compare  2) request by request  3) new trace  4) limits  5) quit");
      const std::string choice = plain(input("choice> "));
      if (choice == "1") {
        summary();
      } else if (choice == "2") {
        steps();
      } else if (choice == "3") {
        new_trace();
      } else if (choice == "4") {
        settings();
      } else if (choice == "5") {
        running = false;
      } else {
        print("Pick a number from 1 to 5.");
      }
    }
    print("Bye.");
  }

 private:
  /// Python's input(): writes the prompt (no newline), flushes, reads a line
  /// without its '\n'. With echo, shows the line as a terminal would.
  std::string input(std::string_view prompt) {
    out_ << prompt;
    out_.flush();
    if (!out_) throw output_lost{errno};
    std::string line;
    errno = 0;
    if (!std::getline(in_, line)) {
      if (in_.bad()) throw input_lost{errno};
      throw end_of_input{};
    }
    errno = 0;  // what a failed write of the next screen sets is its reason
    if (echo_) out_ << line << '\n';
    return line;
  }

  void print(std::string_view s) { out_ << s << '\n'; }

  /// P096's ask(): a whole number from low to high, or −1 on an empty answer.
  std::int64_t ask(std::string_view prompt, std::int64_t low, std::int64_t high) {
    while (true) {
      const std::string a = plain(input(std::string(prompt) + " (" + str(low) + " to " + str(high) + ")> "));
      if (a.empty()) return -1;
      const std::int64_t n = number(a, 6);
      if (n >= low && n <= high) return n;
      print("Type a whole number from " + str(low) + " to " + str(high) + ".");
    }
  }

  void summary() {
    const auto rs = results(times_, cfg_);
    const char* const names[] = {"fixed window", "sliding log", "token bucket"};
    const auto total = static_cast<std::int64_t>(times_.size());
    print(str(total) + " requests from second " + str(times_.front()) + " to " + str(times_.back()) +
          "; the limit is " + str(cfg_.limit) + " per " + seconds(cfg_.window) + " (bucket of " + str(cfg_.bucket) +
          "):");
    print("  limiter        through  refused  most in any " + str(cfg_.window) + " s");
    for (std::size_t k = 0; k < 3; ++k) {
      std::int64_t n = 0;
      for (bool b : rs[k].span()) n += b ? 1 : 0;
      const busiest_window m = busiest(times_, rs[k].span(), cfg_.window);
      std::string note;
      if (m.most > cfg_.limit) note = "  over the limit, from second " + str(m.start);
      print("  " + pad(names[k], 15) + lpad(str(n), 7) + lpad(str(total - n), 9) + lpad(str(m.most), 13) + note);
    }
    print(
        "A fixed window starts counting again at each boundary, so a burst just before it and another just after "
        "both get through.");
    const auto bucket = token_bucket::make({cfg_.limit, cfg_.window}, cfg_.bucket).value();
    print(
        "A token bucket bounds the burst and the rate over time, not each window: full, then spending each token as "
        "it refills, it lets " +
        str(worst_case(bucket, cfg_.window, 1)) + " through in " + seconds(cfg_.window) + " - the most it ever can.");
    print("The sliding log holds every " + seconds(cfg_.window) + " to " + str(cfg_.limit) + ".");
  }

  void steps() {
    const auto rs = results(times_, cfg_);
    print("  request  second   fixed  sliding  bucket");
    const std::size_t shown = 40;
    for (std::size_t i = 0; i < times_.size() && i < shown; ++i) {
      std::string row;
      for (std::size_t k = 0; k < 3; ++k) row += lpad(rs[k].through[i] ? " yes" : "  no", 8);
      print("  " + lpad(str(static_cast<std::int64_t>(i) + 1), 7) + lpad(str(times_[i]), 8) + row);
    }
    if (times_.size() > shown) print("  ... and " + str(static_cast<std::int64_t>(times_.size() - shown)) + " more");
  }

  void new_trace() {
    print(
        "Traces: burst (the limit's worth just before a boundary and just after), steady, random, or your own "
        "times.");
    const std::string s = plain(input("trace (burst, steady, random or own)> "));
    if (s == "burst") {
      times_ = burst(cfg_);
      print(str(static_cast<std::int64_t>(times_.size())) + " requests: " + str(cfg_.limit) + " at second " +
            str(cfg_.window - 1) + " and " + str(cfg_.limit) + " at second " + str(cfg_.window) + ".");
    } else if (s == "steady") {
      times_.clear();
      for (tick i = 0; i < 75; ++i) times_.push_back(4 * i);
      print("75 requests, one every 4 seconds.");
    } else if (s == "random") {
      const std::int64_t seed = ask("seed", 0, 999999);
      if (seed == -1) {
        print("Cancelled.");
        return;
      }
      times_ = lcg_times(60, 3, seed);
      print("60 requests, each 0 to 6 seconds after the one before.");
    } else if (s == "own") {
      own_times();
    } else if (s.empty()) {
      print("Cancelled.");
    } else {
      print("Type burst, steady, random or own.");
    }
  }

  /// P096's typed trace: words split at spaces, each 1 to 5 digits, in
  /// order, 2 to 60 of them. Keeps at most 61 (enough to know it is too
  /// many), so a very long line costs no memory beyond itself.
  void own_times() {
    const std::string t = plain(input("request times in seconds, in order (2 to 60)> "));
    std::vector<tick> out;
    std::size_t count = 0;
    tick previous = 0;
    bool ok = true;
    std::size_t w = 0;  // start of the current word
    for (std::size_t i = 0; i <= t.size(); ++i) {
      if (i < t.size() && t[i] != ' ') continue;
      if (i > w) {
        const std::int64_t v = number(std::string_view(t).substr(w, i - w), 5);
        if (v < 0 || (count > 0 && v < previous)) ok = false;
        previous = v;
        ++count;
        if (out.size() <= 60) out.push_back(v);
      }
      w = i + 1;
    }
    if (ok && count >= 2 && count <= 60) {
      times_ = std::move(out);
      print(str(static_cast<std::int64_t>(count)) + " requests.");
      return;
    }
    print("Type 2 to 60 whole numbers of seconds, each no earlier than the one before.");
  }

  void settings() {
    const std::int64_t l = ask("requests allowed per window", 1, 100);
    if (l == -1) {
      print("Cancelled.");
      return;
    }
    const std::int64_t w = ask("window in seconds", 1, 3600);
    if (w == -1) {
      print("Cancelled.");
      return;
    }
    const std::int64_t b = ask("token bucket size, the largest burst", 1, l);
    if (b == -1) {
      print("Cancelled.");
      return;
    }
    print(str(l) + " per " + seconds(w) + ", bucket of " + str(b) + ".");
    cfg_ = {l, w, b};
  }

  std::istream& in_;
  std::ostream& out_;
  bool echo_;
  limits_cfg cfg_;
  std::vector<tick> times_ = burst(limits_cfg{});
};

}  // namespace

int run_explore(std::istream& in, std::ostream& out, std::ostream& err, bool echo) {
  session s(in, out, echo);
  const auto reason = [](int e) { return std::string(e != 0 ? std::strerror(e) : "write error"); };
  std::string_view last;
  try {
    s.run();
  } catch (const end_of_input&) {
    last = "\n";  // finish the prompt's line; see the top of this file
  } catch (const output_lost& lost) {
    return output_error(err, stdout_name, reason(lost.error));
  } catch (const input_lost& lost) {
    // As replay reports a trace it cannot read, with the prompt's line finished.
    out << '\n';
    out.flush();
    return usage_error(err, error{"", "cannot read standard input: " +
                                          std::string(lost.error != 0 ? std::strerror(lost.error) : "read error")});
  }
  if (auto why = write_and_flush(out, last)) return output_error(err, stdout_name, *why);
  return exit_ok;
}

}  // namespace sluice::cli
