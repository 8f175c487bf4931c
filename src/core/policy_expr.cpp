// Policy expressions: a recursive-descent parser over the grammar in
// docs/policy-expressions.md, and the canonical printer.
#include "sluice/core/policy_expr.hpp"

#include "sluice/core/algorithm.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace sluice {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_word(char c) { return is_letter(c) || is_digit(c) || c == '-' || c == '_'; }
/// Characters that end a token wherever they stand.
bool is_delimiter(char c) { return is_space(c) || c == ',' || c == '(' || c == ')' || c == '='; }

/// Quotes a piece of the expression for a message: at most 32 bytes, control
/// and non-ASCII bytes as \xNN.
/// The options of every alternative of any_policy, in its order.
template <std::size_t... I>
constexpr std::array<std::string_view, sizeof...(I)> options_table(std::index_sequence<I...>) noexcept {
  return {std::variant_alternative_t<I, any_policy>::options...};
}
constexpr auto algorithm_options = options_table(std::make_index_sequence<algorithm_count>{});

/// The options algorithm `a` takes, as its `options` writes them
/// ("burst=N"; several are separated by spaces); "" for a composite.
std::string_view options_of(algorithm a) noexcept {
  const auto i = static_cast<std::size_t>(a);
  return i < algorithm_options.size() ? algorithm_options[i] : std::string_view{};
}

/// Whether `list` (as `options` writes it) names the option `name`.
bool lists_option(std::string_view list, std::string_view name) noexcept {
  while (!list.empty()) {
    const std::size_t end = std::min(list.find(' '), list.size());
    const std::string_view item = list.substr(0, end);
    if (item.substr(0, item.find('=')) == name) return true;
    list.remove_prefix(end == list.size() ? end : end + 1);
  }
  return false;
}

bool takes_option(algorithm a, std::string_view name) noexcept { return lists_option(options_of(a), name); }

/// Whether some algorithm takes an option called `name`.
bool is_option_name(std::string_view name) noexcept {
  return std::any_of(algorithm_options.begin(), algorithm_options.end(),
                     [&](std::string_view list) { return lists_option(list, name); });
}

std::string quoted(std::string_view s) {
  constexpr std::size_t most = 32;
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < most; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\') {
      constexpr std::array<char, 16> hex{'0', '1', '2', '3', '4', '5', '6', '7',
                                         '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > most) out += "...";
  out += "'";
  return out;
}

constexpr std::string_view units_help = "(use ns, us, ms, s, m or min, h, d)";

/// One option as written: name=value, with where each part starts.
struct option {
  std::string_view name;
  std::string_view value;
  std::size_t at = 0;        // where the name starts
  std::size_t value_at = 0;  // where the value starts
};

class parser {
 public:
  explicit parser(std::string_view text) : text_(text) {}

  result<any_policy> parse() {
    skip_space();
    if (pos_ == text_.size()) return fail(pos_, "empty expression", "; write e.g. token-bucket 10/1s burst=5");
    auto p = policy(0);
    if (!p) return p;
    skip_space();
    if (pos_ != text_.size()) return fail(pos_, "unexpected " + quoted(token_at(pos_)));
    return p;
  }

 private:
  // ---- errors ----

  /// "MESSAGE at column N[SUFFIX]", its column N.
  error fail(std::size_t at, const std::string& message, std::string_view suffix = "") const {
    return error{"policy", message + " at column " + std::to_string(at + 1) + std::string(suffix),
                 error_code::unspecified, at + 1};
  }

  /// The token that starts at `at`, for a message: a word, a number, or one
  /// character.
  std::string_view token_at(std::size_t at) const {
    std::size_t end = at;
    while (end < text_.size() && !is_delimiter(text_[end])) ++end;
    if (end == at) end = at + 1;
    return text_.substr(at, end - at);
  }

  // ---- lexing ----

  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }
  bool at_char(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  std::string_view word() {
    const std::size_t from = pos_;
    while (pos_ < text_.size() && is_word(text_[pos_])) ++pos_;
    return text_.substr(from, pos_ - from);
  }
  std::string_view digits() {
    const std::size_t from = pos_;
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    return text_.substr(from, pos_ - from);
  }

  // ---- grammar ----

  /// policy := composite | algorithm
  result<any_policy> policy(int depth) {
    skip_space();
    const std::size_t at = pos_;
    if (pos_ == text_.size()) return fail(pos_, "expected an algorithm");
    if (!is_letter(text_[pos_])) return fail(pos_, "expected an algorithm, found " + quoted(token_at(pos_)));
    const std::string_view name = word();
    if (name == "all" || name == "any") return composite(name, at, depth);
    const auto algo = algorithm_named(name);
    if (!algo) {
      skip_space();
      if (at_char('(')) return fail(at, "unknown composite " + quoted(name), " (use all(...) or any(...))");
      return fail(at, "unknown algorithm " + quoted(name),
                  " (choose from " + algorithm_names() + ", all(...), any(...))");
    }
    return plain(*algo, name, at);
  }

  /// composite := ("all" | "any") "(" policy { "," policy } ")"
  result<any_policy> composite(std::string_view name, std::size_t at, int depth) {
    if (depth >= max_policy_depth)
      return fail(at, "nesting deeper than " + std::to_string(max_policy_depth) + " levels");
    skip_space();
    if (!at_char('(')) return fail(pos_, "expected '(' after '" + std::string(name) + "'");
    ++pos_;
    std::vector<any_policy> parts;
    skip_space();
    if (at_char(')')) return fail(pos_, std::string(name) + "(...) needs at least one limiter");
    for (;;) {
      auto part = policy(depth + 1);
      if (!part) return part;
      parts.push_back(std::move(part).value());
      skip_space();
      if (at_char(',')) {
        ++pos_;
        continue;
      }
      if (at_char(')')) {
        ++pos_;
        break;
      }
      if (pos_ == text_.size()) return fail(pos_, "expected ')'");
      return fail(pos_, "expected ',' or ')', found " + quoted(token_at(pos_)));
    }
    if (name == "all") {
      auto a = all_of::make(std::move(parts));
      if (!a) return fail(at, a.err().message);
      return any_policy{std::move(a).value()};
    }
    auto a = any_of::make(std::move(parts));
    if (!a) return fail(at, a.err().message);
    return any_policy{std::move(a).value()};
  }

  /// algorithm := name [rate | count] { option }
  result<any_policy> plain(algorithm a, std::string_view name, std::size_t at) {
    spec s;
    s.algo = a;
    std::size_t rate_at = at;
    std::size_t units_at = at;
    if (a == algorithm::quota || a == algorithm::concurrency) {
      const std::string n_name(name);
      const std::string example = a == algorithm::quota ? ", e.g. quota 100" : ", e.g. concurrency 5 lease=30s";
      skip_space();
      units_at = pos_;
      const std::string_view n = digits();
      if (n.empty() || (pos_ < text_.size() && !is_delimiter(text_[pos_]))) {
        if (units_at == text_.size())
          return fail(units_at, "expected the number of units after '" + n_name + "'", example);
        return fail(units_at,
                    "expected the number of units after '" + n_name + "', found " + quoted(token_at(units_at)),
                    example);
      }
      std::int64_t v = 0;
      if (std::from_chars(n.data(), n.data() + n.size(), v).ec != std::errc())
        return fail(units_at, n_name + " " + quoted(n), ": too large (at most 2^62)");
      s.units = v;
    } else if (a != algorithm::always_allow && a != algorithm::always_deny) {
      skip_space();
      rate_at = pos_;
      auto r = parse_rate_here(name);
      if (!r) return r.err();
      s.limit = *r;
    }
    // Options.
    std::vector<option> opts;
    for (;;) {
      const std::size_t save = pos_;
      skip_space();
      if (pos_ == text_.size() || !is_letter(text_[pos_])) {
        pos_ = save;
        break;
      }
      option o;
      o.at = pos_;
      o.name = word();
      skip_space();
      if (!at_char('=')) {
        // Not an option: the caller says what it expected instead, unless it
        // is an option's name without its '='.
        if (is_option_name(o.name))
          return fail(pos_, "expected '=' after '" + std::string(o.name) + "'", options_help(a));
        pos_ = save;
        break;
      }
      ++pos_;
      skip_space();
      o.value_at = pos_;
      while (pos_ < text_.size() && !is_delimiter(text_[pos_])) ++pos_;
      o.value = text_.substr(o.value_at, pos_ - o.value_at);
      for (const auto& prev : opts)
        if (prev.name == o.name) return fail(o.at, std::string(o.name) + "= given twice");
      opts.push_back(o);
    }
    const option* burst = nullptr;
    const option* buckets = nullptr;
    const option* queue = nullptr;
    const option* lease = nullptr;
    for (const auto& o : opts) {
      if (!takes_option(a, o.name)) return fail(o.at, "unknown option " + quoted(o.name), options_help(a));
      if (o.name == "burst") {
        burst = &o;
      } else if (o.name == "buckets") {
        buckets = &o;
      } else if (o.name == "queue") {
        queue = &o;
      } else if (o.name == "origin") {
        auto d = parse_duration(o.value, "origin");
        if (!d) return fail(o.at, "origin=" + quoted(o.value), ": " + d.err().message);
        s.origin = *d;
      } else if (o.name == "lease") {
        auto d = parse_duration(o.value, "lease");
        if (!d) return fail(o.at, "lease=" + quoted(o.value), ": " + d.err().message);
        if (*d < 1) return fail(o.value_at, "lease=" + quoted(o.value), ": lease must be positive");
        s.lease = *d;
        lease = &o;
      } else {
        // An algorithm's option (its `options`) that no field of spec holds.
        return fail(o.at, "option " + quoted(o.name) + " is not read yet", options_help(a));
      }
    }
    const auto count = [&](const option* o, std::optional<std::int64_t>& into) -> std::optional<error> {
      if (o == nullptr) return std::nullopt;
      // count = [ "+" | "-" ] digits: from_chars takes the '-', not the '+'.
      const std::string_view text = !o->value.empty() && o->value[0] == '+' ? o->value.substr(1) : o->value;
      std::int64_t v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      const bool whole = !text.empty() && text[0] != '+' && !(text.data() != o->value.data() && text[0] == '-') &&
                         end == text.data() + text.size();
      if (ec == std::errc::result_out_of_range && whole)
        return fail(o->value_at, std::string(o->name) + "=" + quoted(o->value),
                    ": " + std::string(o->name) + " is too large (at most 9223372036854775807)");
      if (ec != std::errc() || !whole)
        return fail(o->value_at, std::string(o->name) + "=" + quoted(o->value),
                    ": " + std::string(o->name) + " must be a whole number");
      into = v;
      return std::nullopt;
    };
    if (auto e = count(burst, s.burst)) return *e;
    if (auto e = count(buckets, s.buckets)) return *e;
    if (auto e = count(queue, s.queue)) return *e;
    if (a == algorithm::sliding_buckets && !buckets)
      return fail(at, "sliding-buckets needs buckets=N (the number of sub-windows, dividing the window)");
    auto p = make_policy(s);
    if (!p) {
      // Point at what the field came from.
      const error& e = p.err();
      const auto at_option = [&](const option* o) {
        return fail(o->at, std::string(o->name) + "=" + std::string(o->value),
                    ": " + std::string(o->name) + " " + e.message);
      };
      if (e.field == "burst" && burst) return at_option(burst);
      if (e.field == "buckets" && buckets) return at_option(buckets);
      if (e.field == "queue" && queue) return at_option(queue);
      if (e.field == "quota") return fail(units_at, "quota", ": " + e.message);
      if (e.field == "concurrency") return fail(units_at, "concurrency", ": " + e.message);
      if (e.field == "lease" && lease) return at_option(lease);
      if (e.field == "limit" || e.field == "window") return fail(rate_at, "rate", ": " + e.what());
      return fail(at, std::string(name), ": " + e.what());
    }
    return p;
  }

  static std::string options_help(algorithm a) {
    const std::string_view takes = options_of(a);
    return " (" + std::string(name_of(a)) + " takes " +
           (takes.empty() ? std::string("no options") : std::string(takes)) + ")";
  }

  /// rate := digits ("/" | "per") [number] unit, as parse_rate reads it.
  result<rate> parse_rate_here(std::string_view name) {
    const std::size_t at = pos_;
    const std::string help = ", e.g. " + std::string(name) + " 10/1s";
    if (pos_ == text_.size()) return fail(pos_, "expected a rate after " + quoted(name), help);
    if (!is_digit(text_[pos_]))
      return fail(pos_, "expected a rate after " + quoted(name) + ", found " + quoted(token_at(pos_)), help);
    const std::string_view l = digits();
    std::int64_t limit = 0;
    if (std::from_chars(l.data(), l.data() + l.size(), limit).ec != std::errc() || limit > max_quantity)
      return fail(at, "limit " + quoted(l), ": must be at most 2^62");
    skip_space();
    if (at_char('/')) {
      ++pos_;
    } else if (text_.substr(pos_, 3) == "per" && pos_ + 3 < text_.size() && is_space(text_[pos_ + 3])) {
      pos_ += 3;
    } else {
      if (pos_ == text_.size()) return fail(pos_, "expected '/' after the limit", help);
      return fail(pos_, "expected '/' after the limit, found " + quoted(token_at(pos_)), help);
    }
    skip_space();
    const std::size_t window_at = pos_;
    // [digits ["." digits]] [space] unit
    const std::string_view number = [&] {
      const std::size_t from = pos_;
      digits();
      if (pos_ > from && at_char('.')) {
        ++pos_;
        digits();
      }
      return text_.substr(from, pos_ - from);
    }();
    const std::size_t after_number = pos_;
    skip_space();
    const std::size_t unit_at = pos_;
    std::size_t unit_end = pos_;
    while (unit_end < text_.size() && is_letter(text_[unit_end])) ++unit_end;
    std::string_view unit = text_.substr(unit_at, unit_end - unit_at);
    // A word after a space that is followed by '=' is the next option.
    std::size_t look = unit_end;
    while (look < text_.size() && is_space(text_[look])) ++look;
    const bool is_option = unit_at > after_number && look < text_.size() && text_[look] == '=';
    if (unit.empty() && !number.empty() && unit_at < text_.size() && !is_delimiter(text_[unit_at]))
      return fail(unit_at, "unknown unit " + quoted(token_at(unit_at)), " " + std::string(units_help));
    if (unit.empty() || is_option) {
      pos_ = after_number;
      if (number.empty()) {
        if (pos_ == text_.size()) return fail(pos_, "expected a window after '/'", help);
        return fail(window_at, "expected a window after '/', found " + quoted(token_at(window_at)), help);
      }
      return fail(window_at, "window " + quoted(number) + " needs a unit", " " + std::string(units_help));
    }
    pos_ = unit_end;
    if (pos_ < text_.size() && !is_delimiter(text_[pos_]))
      return fail(window_at, "window " + quoted(text_.substr(window_at, pos_ - window_at + 1)) + " is not a duration",
                  " " + std::string(units_help));
    if (!parse_duration("1" + std::string(unit)))
      return fail(unit_at, "unknown unit " + quoted(unit), " " + std::string(units_help));
    const std::string_view window_text = text_.substr(window_at, pos_ - window_at);
    auto w = parse_duration(window_text, "window");
    if (!w) return fail(window_at, "window " + quoted(window_text), ": " + w.err().message);
    auto r = make_rate(limit, *w);
    if (!r) return fail(at, "rate " + quoted(text_.substr(at, pos_ - at)), ": " + r.err().what());
    return *r;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

struct unit {
  std::string_view name;
  tick ns;
};
constexpr std::array<unit, 7> units{{{"d", 86'400'000'000'000},
                                     {"h", 3'600'000'000'000},
                                     {"m", 60'000'000'000},
                                     {"s", 1'000'000'000},
                                     {"ms", 1'000'000},
                                     {"us", 1'000},
                                     {"ns", 1}}};

void format_into(const any_policy& p, std::string& out) {
  std::visit(
      [&](const auto& pol) {
        using P = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          out += P::name;
          out += "(";
          bool first = true;
          for (const auto& part : pol.parts()) {
            if (!first) out += ", ";
            first = false;
            format_into(part, out);
          }
          out += ")";
        } else {
          out += policy_text(pol);  // each single algorithm writes its own (src/<name>.cpp)
        }
      },
      p);
}

}  // namespace

result<any_policy> parse_policy(std::string_view text) { return parser(text).parse(); }

std::string format_policy(const any_policy& p) {
  std::string out;
  format_into(p, out);
  return out;
}

std::string format_rate(rate r) { return std::to_string(r.limit) + "/" + format_duration(r.window); }

std::string format_duration(tick ns) {
  if (ns == 0) return "0s";
  // Work in unsigned magnitude so INT64_MIN formats too.
  const std::uint64_t mag = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  for (const auto& u : units) {
    const auto size = static_cast<std::uint64_t>(u.ns);
    if (mag % size == 0) return (ns < 0 ? "-" : "") + std::to_string(mag / size) + std::string(u.name);
  }
  return std::to_string(ns) + "ns";  // not reached: every duration is whole nanoseconds
}

}  // namespace sluice
