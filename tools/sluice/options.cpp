#include "options.hpp"

#include <charconv>

#include "trace.hpp"

namespace sluice::cli {

const CLI::Validator& non_empty() {
  static const CLI::Validator check(
      [](const std::string& value) { return value.empty() ? std::string("is empty; give it a value") : std::string(); },
      "", "non-empty");
  return check;
}

void add_limit_flags(CLI::App& app, limiter_flags& f) {
  app.add_option("--limit", f.limit, "L/W: at most L units per window W, e.g. 10/60s, 100/min, '10 per minute'")
      ->check(non_empty());
  app.add_option("--burst", f.burst, "token-bucket, gcra: the largest burst S (default L)")->check(non_empty());
  app.add_option("--buckets", f.buckets, "sliding-buckets: sub-windows N, dividing W")->check(non_empty());
  app.add_option("--queue", f.queue, "leaky-queue: the most units waiting Q (default L)")->check(non_empty());
  app.add_option("--quota", f.quota, "quota: N units in all, never refilled")->check(non_empty());
}

result<std::int64_t> parse_count(std::string_view flag, std::string_view text) {
  // An optional sign, then digits (as count in docs/policy-expressions.md).
  const std::string_view digits = !text.empty() && text[0] == '+' ? text.substr(1) : text;
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  const bool whole = ptr == digits.data() + digits.size() && !digits.empty() && digits[0] != '+' &&
                     !(digits.data() != text.data() && digits[0] == '-');
  if (ec == std::errc::result_out_of_range && whole)
    return error{std::string(flag), quote_input(text) + " is too large (at most 9223372036854775807)"};
  if (ec != std::errc() || !whole) return error{std::string(flag), quote_input(text) + " is not a whole number"};
  return v;
}

result<algorithm> parse_algorithm(std::string_view flag, std::string_view name) {
  if (auto a = algorithm_named(name)) return *a;
  return error{std::string(flag),
               "unknown algorithm " + quote_input(name) + " (choose from " + algorithm_names() + ")"};
}

namespace {

/// Reports a flag given to an algorithm that has no use for it.
std::optional<error> unused(std::string_view flag, const std::string& value, algorithm algo, std::string_view users) {
  if (value.empty()) return std::nullopt;
  return error{std::string(flag),
               "does not apply to " + std::string(name_of(algo)) + " (only to " + std::string(users) + ")"};
}

}  // namespace

result<any_policy> build_policy(algorithm algo, const limiter_flags& f) {
  spec s;
  s.algo = algo;
  const bool needs_limit =
      algo != algorithm::quota && algo != algorithm::always_allow && algo != algorithm::always_deny;
  if (needs_limit) {
    if (f.limit.empty())
      return error{"--limit", "is required by " + std::string(name_of(algo)) + " (e.g. --limit 10/60s)"};
    auto r = parse_rate(f.limit);
    if (!r) return error{"--limit", r.err().what()};
    s.limit = *r;
  } else if (!f.limit.empty()) {
    return error{"--limit", "does not apply to " + std::string(name_of(algo)) +
                                (algo == algorithm::quota ? " (it takes --quota N)" : "")};
  }
  const bool bucket = algo == algorithm::token_bucket || algo == algorithm::gcra;
  if (!bucket) {
    if (auto e = unused("--burst", f.burst, algo, "token-bucket and gcra")) return *e;
  }
  if (algo != algorithm::sliding_buckets) {
    if (auto e = unused("--buckets", f.buckets, algo, "sliding-buckets")) return *e;
  }
  if (algo != algorithm::leaky_queue) {
    if (auto e = unused("--queue", f.queue, algo, "leaky-queue")) return *e;
  }
  if (algo != algorithm::quota) {
    if (auto e = unused("--quota", f.quota, algo, "quota")) return *e;
  }
  const auto count = [](std::string_view flag, const std::string& text,
                        std::optional<std::int64_t>& into) -> std::optional<error> {
    if (text.empty()) return std::nullopt;
    auto v = parse_count(flag, text);
    if (!v) return v.err();
    into = *v;
    return std::nullopt;
  };
  if (auto e = count("--burst", f.burst, s.burst)) return *e;
  if (auto e = count("--buckets", f.buckets, s.buckets)) return *e;
  if (auto e = count("--queue", f.queue, s.queue)) return *e;
  if (auto e = count("--quota", f.quota, s.units)) return *e;
  auto p = make_policy(s);
  if (!p) {
    // Name the flag the field came from.
    const std::string& field = p.err().field;
    std::string flag = "--" + field;
    if (field == "limit" || field == "window") flag = "--limit";
    if (field == "algorithm") flag = "--algorithm";
    return error{flag, field == "limit" || field == "window" ? p.err().what() : p.err().message};
  }
  return p;
}

}  // namespace sluice::cli
