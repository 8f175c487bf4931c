// Writing decisions as CSV, JSON Lines or an aligned table, buffered so that
// millions of rows stream quickly.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "sluice/decision.hpp"
#include "trace.hpp"

namespace sluice::cli {

enum class format { csv, json, table };

/// Parses "csv", "json" or "table".
std::optional<format> format_named(std::string_view name);

/// Seconds (from nanoseconds) as the shortest exact decimal, or "never".
std::string seconds_or_never(tick ns);

/// CSV field: quoted (RFC 4180) only when it has a comma, quote or line break.
void append_csv_field(fmt::memory_buffer& out, std::string_view field);
/// JSON string literal, with quotes and escapes.
void append_json_string(fmt::memory_buffer& out, std::string_view s);

/// Streams one row per decision.
class decision_writer {
 public:
  decision_writer(std::ostream& out, format f, bool with_release);
  ~decision_writer();
  decision_writer(const decision_writer&) = delete;
  decision_writer& operator=(const decision_writer&) = delete;

  void header();
  void row(std::uint64_t index, const request& r, const decision& d);
  /// Writes what is buffered to the stream.
  void flush();

 private:
  std::ostream& out_;
  format format_;
  bool with_release_;
  fmt::memory_buffer buf_;
};

}  // namespace sluice::cli
