// Parsing and printing of the quantities people type: rates, durations and
// decimal seconds. Exact: every value is whole nanoseconds or it is refused.
#include "sluice/core/rate.hpp"

#include <array>
#include <cctype>
#include <string>

#include "detail/checks.hpp"
#include "sluice/core/detail/arith.hpp"

namespace sluice {
namespace {

using detail::i128;

struct unit_name {
  std::string_view name;
  tick ns;
};

constexpr tick second_ns = 1'000'000'000;
constexpr unit_name units[] = {
    {"ns", 1},
    {"nanosecond", 1},
    {"nanoseconds", 1},
    {"us", 1'000},
    {"microsecond", 1'000},
    {"microseconds", 1'000},
    {"ms", 1'000'000},
    {"millisecond", 1'000'000},
    {"milliseconds", 1'000'000},
    {"s", second_ns},
    {"sec", second_ns},
    {"secs", second_ns},
    {"second", second_ns},
    {"seconds", second_ns},
    {"m", 60 * second_ns},
    {"min", 60 * second_ns},
    {"mins", 60 * second_ns},
    {"minute", 60 * second_ns},
    {"minutes", 60 * second_ns},
    {"h", 3600 * second_ns},
    {"hr", 3600 * second_ns},
    {"hrs", 3600 * second_ns},
    {"hour", 3600 * second_ns},
    {"hours", 3600 * second_ns},
    {"d", 86400 * second_ns},
    {"day", 86400 * second_ns},
    {"days", 86400 * second_ns},
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string quoted(std::string_view s) {
  // Built by appending: "'" + std::string(s) trips GCC 12's -Wrestrict false positive at -O3.
  std::string out;
  out.reserve(s.size() + 2);
  out += '\'';
  out += escape_bytes(s);
  out += '\'';
  return out;
}

/// Where in `whole` the view `part` starts, 1-based, for error messages.
std::size_t column(std::string_view whole, std::string_view part) {
  return static_cast<std::size_t>(part.data() - whole.data()) + 1;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

namespace {
/// parse_duration, with columns in errors counted from the start of `whole`.
result<tick> parse_duration_in(std::string_view text, std::string_view field_name, std::string_view line) {
  const std::string field(field_name);
  const std::string_view s = trim(text);
  if (s.empty()) return error{field, "is empty; write a duration such as 60s, 1m or 500ms"};
  // Number part: digits with an optional fraction.
  std::size_t i = 0;
  i128 whole = 0;
  i128 frac = 0;
  i128 frac_scale = 1;
  bool any_digit = false;
  // Bounds that keep whole·unit and frac·unit (unit < 2^47 ns) far inside
  // 128 bits: anything larger is out of range anyway.
  constexpr i128 too_big = static_cast<i128>(detail::i64_max);
  while (i < s.size() && is_digit(s[i])) {
    whole = whole * 10 + (s[i] - '0');
    if (whole > too_big) return error{field, quoted(s) + " is too long"};
    any_digit = true;
    ++i;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    std::size_t digits = 0;
    while (i < s.size() && is_digit(s[i])) {
      if (++digits > 20) return error{field, quoted(s) + " has too many decimal places"};
      frac = frac * 10 + (s[i] - '0');
      frac_scale *= 10;
      any_digit = true;
      ++i;
    }
  }
  if (i < s.size() && (s[i] == '-' || s[i] == '+') && i == 0)
    return error{field, quoted(s) + ": a duration cannot have a sign" + (s[i] == '-' ? "; it must be positive" : "")};
  std::string_view rest = trim(s.substr(i));
  if (rest.empty()) {
    if (!any_digit) return error{field, quoted(s) + " is not a duration"};
    return error{field, quoted(s) + " needs a unit: ns, us, ms, s, m (or min), h or d"};
  }
  tick unit = 0;
  for (const auto& u : units)
    if (u.name == rest) unit = u.ns;
  if (unit == 0) {
    if (!any_digit && i == 0 && !rest.empty() && !std::isalpha(static_cast<unsigned char>(rest.front())))
      return error{field, quoted(s) + " is not a duration"};
    return error{field, "unknown unit " + quoted(rest) + " at column " + std::to_string(column(line, rest)) +
                            " (use ns, us, ms, s, m or min, h, d)"};
  }
  if (!any_digit) whole = 1;  // "min" means one minute
  // value = (whole + frac / frac_scale) · unit, exactly.
  const i128 scaled = frac * unit;
  if (scaled % frac_scale != 0) return error{field, quoted(s) + " is not a whole number of nanoseconds"};
  const i128 ns = whole * unit + scaled / frac_scale;
  if (ns > detail::i64_max) return error{field, quoted(s) + " is too long (at most about 292 years)"};
  return static_cast<tick>(ns);
}
}  // namespace

result<tick> parse_duration(std::string_view text, std::string_view field_name) {
  return parse_duration_in(text, field_name, text);
}

result<rate> parse_rate(std::string_view text) {
  const std::string_view s = trim(text);
  const std::string help = " (write it as L/W, e.g. 10/60s, 100/min, 5/s or '10 per minute')";
  if (s.empty()) return error{"rate", "is empty" + help};
  std::size_t i = 0;
  bool negative = false;
  if (s[i] == '-') {
    negative = true;
    ++i;
  }
  const std::size_t digits_from = i;
  i128 limit = 0;
  while (i < s.size() && is_digit(s[i])) {
    limit = limit * 10 + (s[i] - '0');
    if (limit > static_cast<i128>(1) << 100) return error{"limit", "is too large in " + quoted(s)};
    ++i;
  }
  if (i == digits_from)
    return error{"rate",
                 quoted(s) + ": expected a whole number at column " + std::to_string(column(text, s.substr(i))) + help};
  if (negative) return error{"limit", "must not be negative (got " + quoted(s.substr(0, i)) + ")"};
  if (i < s.size() && s[i] == '.')
    return error{"limit", "must be a whole number of requests (got " + quoted(s.substr(0, i)) + "...)"};
  std::string_view rest = s.substr(i);
  const std::string_view after_limit = rest;
  rest = trim(rest);
  if (!rest.empty() && rest.front() == '/') {
    rest.remove_prefix(1);
  } else if (rest == "per") {
    return error{"window", "is missing after 'per' in " + quoted(s) + help};
  } else if (rest.size() >= 4 && rest.substr(0, 3) == "per" && is_space(rest[3])) {
    rest.remove_prefix(3);
  } else {
    const std::string_view at = rest.empty() ? after_limit : rest;
    return error{"rate", quoted(s) + ": expected '/' or 'per' at column " + std::to_string(column(text, at)) + help};
  }
  if (trim(rest).empty()) return error{"window", "is missing in " + quoted(s) + help};
  auto w = parse_duration_in(rest, "window", text);
  if (!w) return w.err();
  if (limit > max_quantity) return error{"limit", "must be at most 2^62 (got " + std::string(s.substr(0, i)) + ")"};
  if (*w <= 0) return error{"window", "must be positive (got " + quoted(trim(rest)) + ")"};
  if (*w > max_quantity)
    return error{"window", "must be at most 2^62 ns, about 146 years (got " + quoted(trim(rest)) + ")"};
  return rate{static_cast<std::int64_t>(limit), *w};
}

std::string format_seconds(tick ns) {
  std::string out;
  // Work in unsigned magnitude so INT64_MIN formats too.
  const bool negative = ns < 0;
  const std::uint64_t mag = negative ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  std::uint64_t whole = mag / 1'000'000'000U;
  std::uint64_t frac = mag % 1'000'000'000U;
  if (negative) out.push_back('-');
  out += std::to_string(whole);
  if (frac != 0) {
    char digits[10] = {};
    for (int k = 8; k >= 0; --k) {
      digits[k] = static_cast<char>('0' + frac % 10);
      frac /= 10;
    }
    int len = 9;
    while (len > 0 && digits[len - 1] == '0') --len;
    out.push_back('.');
    out.append(digits, static_cast<std::size_t>(len));
  }
  return out;
}

bool parse_seconds(std::string_view s, tick& out) noexcept {
  std::size_t i = 0;
  bool negative = false;
  if (i < s.size() && s[i] == '-') {
    negative = true;
    ++i;
  }
  const std::size_t from = i;
  i128 v = 0;
  while (i < s.size() && is_digit(s[i])) {
    v = v * 10 + (s[i] - '0');
    if (v > static_cast<i128>(detail::i64_max)) return false;
    ++i;
  }
  if (i == from) return false;
  v *= 1'000'000'000;
  if (i < s.size() && s[i] == '.') {
    ++i;
    i128 scale = 100'000'000;
    const std::size_t frac_from = i;
    while (i < s.size() && is_digit(s[i])) {
      if (scale == 0) return false;  // more than 9 fractional digits
      v += (s[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == frac_from) return false;
  }
  if (i != s.size()) return false;
  if (negative) v = -v;
  if (v > detail::i64_max || v < detail::i64_min) return false;
  out = static_cast<tick>(v);
  return true;
}

result<rate> make_rate(std::int64_t limit, tick window) {
  rate r{limit, window};
  if (auto e = detail::check_rate(r)) return *e;
  return r;
}

}  // namespace sluice
