#include "output.hpp"

#include <cerrno>
#include <cstring>
#include <iterator>

#include "cli.hpp"
#include "input.hpp"
#include "sluice/core/rate.hpp"

namespace sluice::cli {

std::optional<format> format_named(std::string_view name) {
  if (name == "csv") return format::csv;
  if (name == "json") return format::json;
  if (name == "table") return format::table;
  return std::nullopt;
}

std::string seconds_or_never(tick ns) { return ns == never ? "never" : format_seconds(ns); }

void append_csv_field(fmt::memory_buffer& out, std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) {
    out.append(field);
    return;
  }
  out.push_back('"');
  for (char c : field) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

void append_json_string(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c < 0x20 || c == 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out.push_back(ch);
    }
  }
  out.push_back('"');
}

bool is_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = 0;
    unsigned lo = 0x80;  // the range of the second byte, narrowed to refuse overlong forms,
    unsigned hi = 0xbf;  // surrogates and code points above U+10FFFF
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;
    const auto second = static_cast<unsigned char>(s[i + 1]);
    if (second < lo || second > hi) return false;
    for (std::size_t k = 2; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < 0x80 || b > 0xbf) return false;
    }
    i += n + 1;
  }
  return true;
}

void append_json_key(fmt::memory_buffer& out, std::string_view key) {
  if (is_utf8(key)) {
    out.append(std::string_view("\"key\":"));
    append_json_string(out, key);
    return;
  }
  static constexpr char hex[] = "0123456789abcdef";
  out.append(std::string_view("\"key\":null,\"key_hex\":\""));
  for (char ch : key) {
    const auto c = static_cast<unsigned char>(ch);
    out.push_back(hex[c >> 4]);
    out.push_back(hex[c & 15]);
  }
  out.push_back('"');
}

decision_writer::decision_writer(std::ostream& out, format f, bool with_release)
    : out_(out), format_(f), with_release_(with_release) {}

std::optional<std::string> write_and_flush(std::ostream& out, std::string_view bytes) {
  if (!out) return std::string("write error");
  errno = 0;
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (out) return std::nullopt;
  return std::string(errno != 0 ? std::strerror(errno) : "write error");
}

int output_error(std::ostream& err, std::string_view name, std::string_view why) {
  err << "sluice: " << escape_message(name) << ": " << escape_message(why) << '\n';
  err.flush();
  return exit_output;
}

decision_writer::~decision_writer() {
  if (failure_.empty()) flush();
}

bool decision_writer::flush() {
  if (!failure_.empty()) return false;
  if (auto why = write_and_flush(out_, std::string_view(buf_.data(), buf_.size()))) failure_ = std::move(*why);
  buf_.clear();
  return failure_.empty();
}

namespace {
constexpr const char* table_head = "{:>7}  {:>14}  {:<12}  {:>5}  {:<7}  {:>9}  {:>11}  {:>11}";
}

void decision_writer::header() {
  auto it = std::back_inserter(buf_);
  switch (format_) {
    case format::csv:
      fmt::format_to(it, "request,time,key,cost,allowed,remaining,retry_after,reset_after{}\n",
                     with_release_ ? ",release_after" : "");
      break;
    case format::json:
      break;
    case format::table:
      fmt::format_to(it, fmt::runtime(table_head), "request", "time", "key", "cost", "allowed", "remaining",
                     "retry_after", "reset_after");
      if (with_release_) fmt::format_to(it, "  {:>13}", "release_after");
      buf_.push_back('\n');
      break;
  }
}

bool decision_writer::row(std::uint64_t index, const request& r, const decision& d, std::string_view outcome) {
  auto it = std::back_inserter(buf_);
  const std::string time = format_seconds(r.time);
  const std::string retry = seconds_or_never(d.retry_after);
  const std::string reset = seconds_or_never(d.reset_after);
  // A denied request is not queued: it has no release time, whatever the
  // decision holds (empty in CSV and the table, null in JSON).
  const std::string release = d.allowed ? seconds_or_never(d.release_after) : std::string();
  const std::string_view allowed = !outcome.empty() ? outcome : d.allowed ? std::string_view("yes") : "no";
  switch (format_) {
    case format::csv:
      fmt::format_to(it, "{},{},", index, time);
      append_csv_field(buf_, r.key);
      fmt::format_to(it, ",{},{},{},{},{}", r.cost, allowed, d.remaining, retry, reset);
      if (with_release_) fmt::format_to(it, ",{}", release);
      buf_.push_back('\n');
      break;
    case format::json: {
      const auto num = [](const std::string& v) { return v == "never" ? std::string("\"never\"") : v; };
      fmt::format_to(it, "{{\"request\":{},\"time\":{},", index, time);
      append_json_key(buf_, r.key);
      fmt::format_to(it, ",\"cost\":{},", r.cost);
      if (!outcome.empty()) fmt::format_to(it, "\"op\":\"{}\",\"outcome\":\"{}\",", name_of(r.op), outcome);
      fmt::format_to(it, "\"allowed\":{},\"remaining\":{},\"retry_after\":{},\"reset_after\":{}",
                     d.allowed ? "true" : "false", d.remaining, num(retry), num(reset));
      if (with_release_) fmt::format_to(it, ",\"release_after\":{}", d.allowed ? num(release) : "null");
      buf_.append(std::string_view("}\n"));
      break;
    }
    case format::table:
      fmt::format_to(it, fmt::runtime(table_head), index, time, r.key, r.cost, allowed, d.remaining, retry, reset);
      if (with_release_) fmt::format_to(it, "  {:>13}", release);
      buf_.push_back('\n');
      break;
  }
  if (buf_.size() > (1 << 16)) return flush();
  return true;
}

}  // namespace sluice::cli
