// A value or an error that names what was wrong, for everything built from
// user input (policies, rates). C++20 has no std::expected; this is the
// small subset sluice needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace sluice {

/// What kind of error an `error` is, for code that branches on it: the
/// words (`field`, `message`) are for people and may change; a caller never
/// compares them. Most errors need no kind of their own (`unspecified`).
enum class error_code : std::uint8_t {
  unspecified,  ///< nothing a caller tells apart (the default)
  /// A store URL as a whole is refused (empty, of no store's scheme, or of a
  /// store the program was built without); the message shows the URL.
  bad_store_url,
  /// A snapshot file was saved for another policy than the one it is read for.
  other_policy,
  /// The store failed, or does not do what was asked: not the request's fault.
  store_failed,
  /// A bound the store keeps is reached (e.g. its most overrides).
  store_full,
};

/// What was wrong with a configuration or an input string.
struct error {
  /// The field at fault, as a user names it: "limit", "window", "burst",
  /// "buckets", "queue", "quota", "rate".
  std::string field;
  /// What is wrong with it, in words, e.g. "must be positive".
  std::string message;
  /// The kind, for code to branch on (the words are for people).
  error_code code = error_code::unspecified;
  /// Where in the parsed text the fault is, 1-based, as the message says
  /// ("at column N"), for a caller that points into a larger file; 0 when
  /// the error names no column.
  std::size_t column = 0;
  /// "field: message", ready to print.
  [[nodiscard]] std::string what() const { return field.empty() ? message : field + ": " + message; }
};

/// `s` as a message shows it: control and non-ASCII bytes as `\xNN`, every
/// other byte as itself, so a message names a bad byte instead of printing it.
std::string escape_bytes(std::string_view s);

/// Either a T or an `error`. Check `ok()` (or `operator bool`) before `value()`.
template <typename T>
class [[nodiscard]] result {
 public:
  result(T v) : v_(std::move(v)) {}      // NOLINT(google-explicit-constructor)
  result(error e) : v_(std::move(e)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  /// The value; requires ok().
  [[nodiscard]] const T& value() const& { return std::get<0>(v_); }
  [[nodiscard]] T& value() & { return std::get<0>(v_); }
  [[nodiscard]] T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }

  /// The error; requires !ok().
  [[nodiscard]] const error& err() const& { return std::get<1>(v_); }

 private:
  std::variant<T, error> v_;
};

}  // namespace sluice
