// Reading a trace: one request a line, `TIME [KEY [COST [OP]]]`, streamed
// in blocks so memory does not grow with the trace (docs/traces.md: OP is
// `report`, `id=NAME`, `refund=NAME` or `release=NAME`, where the reader
// takes operations at all).
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/core/time.hpp"

namespace sluice::cli {

/// What a trace line asks (docs/traces.md).
enum class trace_op : std::uint8_t {
  decide,   ///< a decision (with a request id when `name` is set: `id=NAME`)
  report,   ///< `report`: the cost is charged, never denied
  refund,   ///< `refund=NAME`: the decision with request id NAME is refunded
  release,  ///< `release=NAME`: the lease of the decision with id NAME is released
};

/// The operation's name: "decide", "report", "refund", "release".
std::string_view name_of(trace_op op) noexcept;

/// The longest NAME of an operation (a request id), in bytes.
inline constexpr std::size_t max_trace_name = 256;

/// One request of a trace. `key` and `name` point into the reader's buffer
/// and are valid until the next call to `next`.
struct request {
  tick time = 0;           ///< nanoseconds (the trace is in decimal seconds)
  std::string_view key;    ///< empty when the line has none
  std::int64_t cost = 1;   ///< ≥ 1
  std::uint64_t line = 0;  ///< 1-based line number in the trace
  trace_op op = trace_op::decide;
  std::string_view name;  ///< the request id an operation names; empty for none
};

/// Streams requests out of a trace. Fields are separated by blanks (spaces
/// or tabs); blank lines and comment lines (whose first non-blank character
/// is '#') are skipped, and nothing else is a comment, so a key may start
/// with '#'; a trailing '\r' is ignored.
class trace_reader {
 public:
  /// Lines longer than this are refused (a trace with no newlines must not
  /// eat the memory).
  static constexpr std::size_t max_line = 1 << 20;

  /// Reads `in`; `name` stands for it in a read error ("cannot read NAME:
  /// Is a directory"), e.g. "standard input" or "trace 'x.txt'".
  explicit trace_reader(std::istream& in, std::string name = "standard input") : in_(in), name_(std::move(name)) {
    buf_.resize(block);
  }

  /// Takes operations (a fourth field: report, id=, refund=, release=);
  /// without this call a fourth field is an error (`sluice compare`).
  void take_operations() noexcept { ops_ = true; }

  /// Reads the next request. Returns false at the end of the trace, or on a
  /// bad line, in which case `error()` says why ("trace line 17: 'abc' is not
  /// a time in seconds").
  bool next(request& r);

  /// Empty unless the last `next` failed on a bad line or a read error.
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  /// Bytes consumed so far (for progress).
  [[nodiscard]] std::uint64_t bytes_read() const noexcept { return consumed_; }

 private:
  static constexpr std::size_t block = 1 << 20;
  bool fill();
  bool parse(std::string_view line, request& r);

  std::istream& in_;
  std::string name_;
  std::vector<char> buf_;
  std::size_t begin_ = 0;  // start of unread data in buf_
  std::size_t end_ = 0;    // end of valid data in buf_
  bool eof_ = false;
  bool ops_ = false;
  std::uint64_t line_ = 0;
  std::uint64_t consumed_ = 0;
  std::string error_;
};

/// Quotes a piece of user input for an error message, shortened if long and
/// with control and non-ASCII bytes made visible (`\xff`).
std::string quote_input(std::string_view s);

}  // namespace sluice::cli
