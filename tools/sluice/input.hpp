// Small helpers shared by the subcommands: opening the trace argument and
// reporting usage errors the same way everywhere.
#pragma once

#include <fstream>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/core/result.hpp"

namespace sluice::cli {

/// A message as the command prints it: every control or non-ASCII byte as
/// `\xNN`, so a message never writes raw bytes of the input to a terminal.
std::string escape_message(std::string_view s);

/// Prints "sluice: FIELD: MESSAGE" (escaped) to `err` and returns exit_usage (2).
int usage_error(std::ostream& err, const error& e);

/// The trace argument: "-" (or empty) is standard input, anything else a file.
class opened_input {
 public:
  /// Opens `path`; on failure returns an error naming the path and the reason.
  std::optional<error> open(const std::string& path, std::istream& stdin_stream);
  [[nodiscard]] std::istream& stream() const { return *stream_; }
  /// What the trace is called in messages: "standard input" or "trace 'x.txt'".
  [[nodiscard]] const std::string& name() const { return name_; }
  /// Whether the trace is a regular file (its size is known), and the size.
  [[nodiscard]] bool is_file() const { return file_ != nullptr; }
  [[nodiscard]] std::uint64_t size() const { return size_; }

 private:
  std::unique_ptr<std::ifstream> file_;
  std::istream* stream_ = nullptr;
  std::string name_ = "standard input";
  std::uint64_t size_ = 0;
};

}  // namespace sluice::cli
