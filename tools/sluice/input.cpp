#include "input.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>

#include "cli.hpp"
#include "trace.hpp"

namespace sluice::cli {

std::string escape_message(std::string_view s) { return escape_bytes(s); }

int usage_error(std::ostream& err, const error& e) {
  err << "sluice: " << escape_message(e.what()) << '\n';
  err.flush();
  return exit_usage;
}

std::optional<error> opened_input::open(const std::string& path, std::istream& stdin_stream) {
  if (path.empty() || path == "-") {
    stream_ = &stdin_stream;
    return std::nullopt;
  }
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec) return error{"", "cannot open trace " + quote_input(path) + ": " + ec.message()};
  if (std::filesystem::is_directory(status))
    return error{"", "cannot open trace " + quote_input(path) + ": it is a directory"};
  name_ = "trace " + quote_input(path);
  file_ = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*file_) return error{"", "cannot open trace " + quote_input(path) + ": " + std::strerror(errno)};
  if (std::filesystem::is_regular_file(status)) size_ = std::filesystem::file_size(path, ec);
  stream_ = file_.get();
  return std::nullopt;
}

}  // namespace sluice::cli
