// Writing decisions as CSV, JSON Lines or an aligned table, buffered so that
// millions of rows stream quickly.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "sluice/core/decision.hpp"
#include "trace.hpp"

namespace sluice::cli {

enum class format { csv, json, table };

/// Parses "csv", "json" or "table".
std::optional<format> format_named(std::string_view name);

/// Seconds (from nanoseconds) as the shortest exact decimal, or "never".
std::string seconds_or_never(tick ns);

/// CSV field: quoted (RFC 4180) only when it has a comma, quote or line break.
void append_csv_field(fmt::memory_buffer& out, std::string_view field);
/// JSON string literal, with quotes and escapes; requires valid UTF-8 (JSON
/// text is UTF-8), see append_json_key for bytes that may not be.
void append_json_string(fmt::memory_buffer& out, std::string_view s);
/// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates,
/// nothing above U+10FFFF).
bool is_utf8(std::string_view s) noexcept;
/// A key as JSON members, losslessly: `"key":"..."` when the key is valid
/// UTF-8, else `"key":null,"key_hex":"fffe"` (its bytes in lower-case hex).
void append_json_key(fmt::memory_buffer& out, std::string_view key);

/// What the command's standard output is called in messages.
inline constexpr std::string_view stdout_name = "standard output";

/// Writes `bytes` to `out` and flushes it. Returns the reason the stream
/// failed (now or at an earlier write), with the system's words when it has
/// them ("No space left on device"), or nothing when every byte went out.
std::optional<std::string> write_and_flush(std::ostream& out, std::string_view bytes);

/// Prints "sluice: NAME: WHY" and returns exit_output (1).
int output_error(std::ostream& err, std::string_view name, std::string_view why);

/// Streams one row per decision.
class decision_writer {
 public:
  decision_writer(std::ostream& out, format f, bool with_release);
  ~decision_writer();
  decision_writer(const decision_writer&) = delete;
  decision_writer& operator=(const decision_writer&) = delete;

  void header();
  /// Adds a row; returns false once the output has failed (stop writing).
  /// `outcome`, when not empty, is what the line's operation did
  /// (docs/traces.md: "reported", "refunded", "replayed-yes", ...): it
  /// stands in CSV's and the table's `allowed` column, and JSON adds it as
  /// `"op"` and `"outcome"` members beside `allowed`.
  bool row(std::uint64_t index, const request& r, const decision& d, std::string_view outcome = {});
  /// Writes what is buffered to the stream and flushes it; returns false if
  /// the output has failed, now or before.
  bool flush();
  /// Why the output failed; empty while it has not.
  [[nodiscard]] const std::string& failure() const noexcept { return failure_; }

 private:
  std::ostream& out_;
  format format_;
  bool with_release_;
  fmt::memory_buffer buf_;
  std::string failure_;
};

}  // namespace sluice::cli
