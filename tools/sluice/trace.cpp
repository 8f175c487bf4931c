#include "trace.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>
#include <utility>

#include "sluice/core/rate.hpp"

namespace sluice::cli {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

/// The next blank-separated field of `s` from `pos`, or empty at the end.
std::string_view next_field(std::string_view s, std::size_t& pos) {
  while (pos < s.size() && is_blank(s[pos])) ++pos;
  if (pos >= s.size()) return {};
  const std::size_t from = pos;
  while (pos < s.size() && !is_blank(s[pos])) ++pos;
  return s.substr(from, pos - from);
}

/// Why `text` is not a time in seconds, for the error message.
std::string time_problem(std::string_view text) {
  const std::size_t dot = text.find('.');
  if (dot != std::string_view::npos) {
    std::size_t digits = 0;
    while (dot + 1 + digits < text.size() && text[dot + 1 + digits] >= '0' && text[dot + 1 + digits] <= '9') ++digits;
    if (digits > 9 && dot + 1 + digits == text.size())
      return quote_input(text) + " has more than 9 decimal places (times are exact to the nanosecond)";
  }
  // Out of range only when it is written as a time: [-]DIGITS[.DIGITS].
  const auto digits_from = [&](std::size_t i) {
    std::size_t j = i;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    return j;
  };
  const std::size_t sign = !text.empty() && text[0] == '-' ? 1 : 0;
  std::size_t end = digits_from(sign);
  bool well_formed = end > sign;
  if (well_formed && end < text.size() && text[end] == '.') {
    const std::size_t frac_end = digits_from(end + 1);
    well_formed = frac_end > end + 1;
    end = frac_end;
  }
  if (well_formed && end == text.size())
    return quote_input(text) + " is out of range (times must fit in int64 nanoseconds, about 292 years)";
  return quote_input(text) + " is not a time in seconds";
}

/// Reads OP (`report`, `id=NAME`, `refund=NAME`, `release=NAME`) into `r`.
bool parse_op(std::string_view text, request& r) {
  if (text == "report") {
    r.op = trace_op::report;
    return true;
  }
  static constexpr std::pair<std::string_view, trace_op> named[] = {
      {"id=", trace_op::decide}, {"refund=", trace_op::refund}, {"release=", trace_op::release}};
  for (const auto& [prefix, op] : named) {
    if (!text.starts_with(prefix)) continue;
    const std::string_view name = text.substr(prefix.size());
    if (name.empty() || name.size() > max_trace_name) return false;
    r.op = op;
    r.name = name;
    return true;
  }
  return false;
}

/// Why `text` is not an operation, for the error message.
std::string op_problem(std::string_view text) {
  const std::size_t eq = text.find('=');
  if (eq != std::string_view::npos && eq + 1 == text.size())
    return quote_input(text) + " names no request id (NAME is 1 to " + std::to_string(max_trace_name) + " bytes)";
  if (eq != std::string_view::npos && text.size() - eq - 1 > max_trace_name)
    return "the request id of " + quote_input(text) + " is longer than " + std::to_string(max_trace_name) + " bytes";
  return "unexpected " + quote_input(text) +
         " after the cost; a line is TIME [KEY [COST [OP]]], OP one of report, id=NAME, refund=NAME, release=NAME" +
         (text.front() == '#' ? " (a comment is a whole line starting with '#')" : "");
}

}  // namespace

std::string_view name_of(trace_op op) noexcept {
  switch (op) {
    case trace_op::decide:
      return "decide";
    case trace_op::report:
      return "report";
    case trace_op::refund:
      return "refund";
    case trace_op::release:
      return "release";
  }
  return "decide";
}

std::string quote_input(std::string_view s) {
  std::string out = "'";
  const std::size_t shown = s.size() > 60 ? 57 : s.size();
  for (std::size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (shown < s.size()) out += "...";
  out += "'";
  return out;
}

bool trace_reader::fill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
  errno = 0;
  in_.read(buf_.data() + end_, static_cast<std::streamsize>(buf_.size() - end_));
  const int why = errno;
  const auto got = static_cast<std::size_t>(in_.gcount());
  end_ += got;
  if (got == 0) {
    eof_ = true;
    if (in_.bad()) error_ = "cannot read " + name_ + ": " + (why != 0 ? std::strerror(why) : "read error");
    return false;
  }
  return true;
}

bool trace_reader::next(request& r) {
  for (;;) {
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    std::string_view line;
    if (nl != nullptr) {
      line = std::string_view(start, static_cast<std::size_t>(static_cast<const char*>(nl) - start));
      begin_ += line.size() + 1;
      consumed_ += line.size() + 1;
    } else {
      if (end_ - begin_ > max_line) {
        error_ = "trace line " + std::to_string(line_ + 1) + ": longer than 1 MiB";
        return false;
      }
      if (fill()) continue;
      if (!error_.empty()) return false;
      if (begin_ == end_) return false;                              // clean end
      line = std::string_view(buf_.data() + begin_, end_ - begin_);  // last line without '\n'
      consumed_ += line.size();
      begin_ = end_;
    }
    ++line_;
    if (line.size() > max_line) {
      error_ = "trace line " + std::to_string(line_) + ": longer than 1 MiB";
      return false;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t pos = 0;
    std::string_view first = next_field(line, pos);
    if (first.empty() || first.front() == '#') continue;  // blank, or a comment: '#' first on the line
    return parse(line, r);
  }
}

bool trace_reader::parse(std::string_view line, request& r) {
  const std::string where = "trace line " + std::to_string(line_) + ": ";
  std::size_t pos = 0;
  const std::string_view time_text = next_field(line, pos);
  const std::string_view key = next_field(line, pos);
  const std::string_view cost_text = next_field(line, pos);
  const std::string_view extra = next_field(line, pos);
  if (!parse_seconds(time_text, r.time)) {
    error_ = where + time_problem(time_text);
    return false;
  }
  r.key = key;
  r.cost = 1;
  if (!cost_text.empty()) {
    std::int64_t c = 0;
    const auto [ptr, ec] = std::from_chars(cost_text.data(), cost_text.data() + cost_text.size(), c);
    if (ec != std::errc() || ptr != cost_text.data() + cost_text.size() || c < 1 || cost_text[0] == '+') {
      error_ = where + quote_input(cost_text) + " is not a cost (a whole number from 1 to 9223372036854775807)";
      return false;
    }
    r.cost = c;
  }
  r.op = trace_op::decide;
  r.name = {};
  if (!extra.empty() && ops_) {
    if (!parse_op(extra, r)) {
      error_ = where + op_problem(extra);
      return false;
    }
    const std::string_view after = next_field(line, pos);
    if (!after.empty()) {
      error_ = where + "unexpected " + quote_input(after) + " after the operation; a line is TIME [KEY [COST [OP]]]" +
               (after.front() == '#' ? " (a comment is a whole line starting with '#')" : "");
      return false;
    }
  } else if (!extra.empty()) {
    error_ = where + "unexpected " + quote_input(extra) + " after the cost; a line is TIME [KEY [COST]]" +
             (extra.front() == '#' ? " (a comment is a whole line starting with '#')" : "");
    return false;
  }
  r.line = line_;
  return true;
}

}  // namespace sluice::cli
