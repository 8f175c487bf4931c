#include "worst_case_cmd.hpp"

#include <fmt/format.h>

#include <iterator>
#include <optional>
#include <ostream>

#include "cli.hpp"
#include "input.hpp"
#include "options.hpp"
#include "output.hpp"
#include "policy_flag.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/rate.hpp"
#include "sluice/core/worst_case.hpp"
#include "trace.hpp"

namespace sluice::cli {

namespace {
/// The most requests the table writes out as a trace, one a line.
constexpr std::int64_t most_lines = 1'000'000;
}  // namespace

CLI::App* add_worst_case(CLI::App& app, worst_case_flags& f) {
  CLI::App* sub = app.add_subcommand(
      "worst-case", "The most a limiter lets into any window, whatever the trace, and a trace that gets there");
  // No non_empty() here: the expression parser refuses an empty one, naming the flag.
  sub->add_option("--policy", f.policy, "the limiter, e.g. 'all(token-bucket 10/1s burst=5, fixed-window 1000/1h)'")

      ->each([&f](const std::string&) { f.policy_given = true; });
  sub->add_option("--window", f.window, "the window W′, e.g. 1h (default: the largest window in the policy)")
      ->check(non_empty());
  sub->add_option("--granularity", f.granularity, "request times on multiples of this, e.g. 1s (default 1ns: any time)")
      ->check(non_empty());
  sub->add_option("--format", f.format,
                  "table (default: the witness as a trace for 'sluice replay', under # comments), csv or json")
      ->check(non_empty());
  return sub;
}

int run_worst_case(const worst_case_flags& f, std::ostream& out, std::ostream& err) {
  if (!f.policy_given)
    return usage_error(err, error{"--policy", "is required, e.g. --policy 'token-bucket 10/1s burst=5'"});
  auto policy = parse_policy_flag(f.policy);
  if (!policy) return usage_error(err, policy.err());
  tick window = 0;
  if (!f.window.empty()) {
    auto w = parse_duration(f.window, "--window");
    if (!w) return usage_error(err, w.err());
    if (*w <= 0) return usage_error(err, error{"--window", "must be positive"});
    window = *w;
  } else if (const auto w = largest_window(*policy)) {
    window = *w;
  } else {
    return usage_error(err, error{"--window", "is required: the policy has no window of its own"});
  }
  auto granularity = parse_duration(f.granularity, "--granularity");
  if (!granularity) return usage_error(err, granularity.err());
  if (*granularity <= 0) return usage_error(err, error{"--granularity", "must be positive"});
  const auto kind = format_named(f.format);
  if (!kind)
    return usage_error(err, error{"--format", quote_input(f.format) + " is not a format (table, csv or json)"});

  const worst_case_report r = worst_case_witness(*policy, window, *granularity);
  const std::string expr = format_policy(*policy);
  // INT64_MAX is "unbounded" only for a policy that has no bound; for any
  // other it is a count that saturated, shown as the number it is.
  const bool unbounded = r.value == never && admits_without_bound(*policy);
  const bool saturated = r.value == never && !unbounded;
  const bool reached_unbounded = r.reached == never && unbounded;
  const auto requests = [](std::int64_t n) { return std::to_string(n) + (n == 1 ? " request" : " requests"); };
  std::int64_t listed = 0;  // requests in the witness as kept
  for (const auto& pt : r.witness) listed = listed > never - pt.count ? never : listed + pt.count;
  fmt::memory_buffer b;
  auto o = std::back_inserter(b);
  switch (*kind) {
    case format::table: {
      const std::string grid =
          *granularity == 1 ? std::string("any time") : "times on a " + format_seconds(*granularity) + " s grid";
      fmt::format_to(o, "# policy: {}\n", expr);
      if (unbounded) {
        fmt::format_to(o, "# worst case: unbounded in any {} s\n", format_seconds(window));
      } else if (saturated) {
        fmt::format_to(o, "# worst case: at least {} in {} s (saturated: sluice counts to 2^63 - 1; {})\n",
                       requests(r.value), format_seconds(window), grid);
      } else if (r.exact) {
        fmt::format_to(o, "# worst case: {} in {} s (exact; {})\n", requests(r.value), format_seconds(window), grid);
      } else {
        fmt::format_to(o, "# worst case: at most {} in {} s (an upper bound; the witness gets {}; {})\n",
                       requests(r.value), format_seconds(window), r.reached, grid);
      }
      if (r.witness.empty()) {
        fmt::format_to(o, "# witness: none (nothing is ever admitted)\n");
      } else if (listed > most_lines || !r.complete) {
        fmt::format_to(o, "# witness: {} from {} s, too many to list here (see --format json)\n",
                       reached_unbounded    ? std::string("unboundedly many requests")
                       : r.reached == never ? "at least " + requests(r.reached) + " (saturated)"
                                            : requests(r.reached),
                       format_seconds(r.start));
      } else {
        fmt::format_to(o, "# witness: {} from {} s to {} s, every one admitted; pipe into sluice replay\n",
                       requests(r.reached), format_seconds(r.witness.front().at), format_seconds(r.witness.back().at));
        for (const auto& pt : r.witness) {
          const std::string t = format_seconds(pt.at);
          for (std::int64_t k = 0; k < pt.count; ++k) fmt::format_to(o, "{}\n", t);
        }
      }
      break;
    }
    case format::csv: {
      fmt::format_to(o, "policy,window,granularity,worst_case,exact,reached,start\n");
      append_csv_field(b, expr);
      fmt::format_to(o, ",{},{},{},{},{},{}\n", format_seconds(window), format_seconds(*granularity),
                     unbounded ? std::string("unbounded") : std::to_string(r.value),
                     r.exact && !saturated ? "yes" : "no",
                     reached_unbounded ? std::string("unbounded") : std::to_string(r.reached), format_seconds(r.start));
      break;
    }
    case format::json: {
      fmt::format_to(o, "{{\"policy\":");
      append_json_string(b, expr);
      fmt::format_to(o,
                     ",\"window\":{},\"granularity\":{},\"worst_case\":{},\"unbounded\":{},\"saturated\":{},"
                     "\"exact\":{},",
                     format_seconds(window), format_seconds(*granularity),
                     unbounded ? std::string("null") : std::to_string(r.value), unbounded ? "true" : "false",
                     saturated ? "true" : "false", r.exact && !saturated ? "true" : "false");
      fmt::format_to(o, "\"reached\":{},\"start\":{},\"complete\":{},\"witness\":[",
                     reached_unbounded ? std::string("null") : std::to_string(r.reached), format_seconds(r.start),
                     r.complete ? "true" : "false");
      for (std::size_t i = 0; i < r.witness.size(); ++i)
        fmt::format_to(o, "{}{{\"time\":{},\"count\":{}}}", i ? "," : "", format_seconds(r.witness[i].at),
                       r.witness[i].count);
      fmt::format_to(o, "]}}\n");
      break;
    }
  }
  if (auto why = write_and_flush(out, std::string_view(b.data(), b.size())))
    return output_error(err, stdout_name, *why);
  return exit_ok;
}

}  // namespace sluice::cli
