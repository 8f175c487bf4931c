#include "compare.hpp"

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <optional>
#include <ostream>
#include <vector>

#include "cli.hpp"
#include "input.hpp"
#include "output.hpp"
#include "plot.hpp"
#include "policy_flag.hpp"
#include "sluice/core/analysis.hpp"
#include "sluice/core/policy_expr.hpp"
#include "sluice/core/worst_case.hpp"
#include "sluice/keyed/atomic_file.hpp"
#include "trace.hpp"
#include "window_tracker.hpp"

namespace sluice::cli {

CLI::App* add_compare(CLI::App& app, compare_flags& f) {
  CLI::App* sub = app.add_subcommand(
      "compare",
      "One trace through several limiters set to the same limit: what each lets through, the most in any "
      "window, and the most it could ever let in");
  add_limit_flags(*sub, f.limits);
  sub->add_option("--algorithms", f.algorithms,
                  "comma-separated limiters (default fixed-window,sliding-log,token-bucket)")
      ->check(non_empty())
      ->each([&f](const std::string&) { f.algorithms_given = true; });
  // No non_empty() here: the expression parser refuses an empty one, naming the flag.
  sub->add_option("--policy", f.policies,
                  "a limiter as an expression, one lane each (repeat for more), instead of --algorithms and the "
                  "limiter flags, e.g. 'all(token-bucket 10/1s burst=5, fixed-window 1000/1h)'")

      ->allow_extra_args(false);
  sub->add_option("--window", f.window,
                  "the window W of 'most in any W' and of the worst case (default: the limit's window, or the "
                  "largest window in the policies)")
      ->check(non_empty());
  sub->add_option(
         "--format", f.format,
         "table (default), csv or json (a key that is not UTF-8 is written as \"key\":null,\"key_hex\":\"...\")")
      ->check(non_empty());
  sub->add_option("--plot", f.plot, "also draw the comparison as an SVG picture in this file")->check(non_empty());
  sub->add_option("--granularity", f.granularity,
                  "the grid of request times for the worst case, e.g. 1s (default 1ns: any time)")
      ->check(non_empty());
  sub->add_option("--top", f.top, "with keys: how many of the keys refused most to list (default 10)")
      ->check(non_empty());
  sub->add_option("trace", f.trace, "the trace file, one 'TIME [KEY [COST]]' a line (seconds); '-' or none: stdin")
      ->check(non_empty());
  return sub;
}

namespace {

/// One limiter's counts over a stream of requests.
struct lane_stats {
  std::int64_t through = 0;
  std::int64_t refused = 0;
  window_tracker busiest;
};

/// Everything kept per key: each limiter's state and counts.
struct key_record {
  std::vector<any_state> states;
  std::vector<lane_stats> lanes;
  std::int64_t refused_total = 0;
};

/// The worst case of a policy: exact, or an upper bound where sluice cannot
/// pin it down (worst_case.hpp).
std::optional<worst_case_bound> worst_of(const any_policy& p, tick window, tick granularity) {
  return worst_case(p, window, granularity);
}

/// A worst case as the table and CSV show it: "19", "<=40" (a bound),
/// "unbounded" (a policy with no bound), ">=9223372036854775807" (a count
/// that saturated at 2^63 − 1).
std::string worst_text(const std::optional<worst_case_bound>& w, const any_policy& p, std::string_view none) {
  if (!w) return std::string(none);
  if (w->value == never) return admits_without_bound(p) ? "unbounded" : ">=" + std::to_string(w->value);
  return (w->exact ? "" : "<=") + std::to_string(w->value);
}

/// The flags one algorithm takes out of the shared ones.
limiter_flags flags_for(algorithm a, const limiter_flags& all) {
  limiter_flags f;
  if (a != algorithm::quota && a != algorithm::always_allow && a != algorithm::always_deny) f.limit = all.limit;
  if (a == algorithm::token_bucket || a == algorithm::gcra) f.burst = all.burst;
  if (a == algorithm::sliding_buckets) f.buckets = all.buckets;
  if (a == algorithm::leaky_queue) f.queue = all.queue;
  if (a == algorithm::quota) f.quota = all.quota;
  return f;
}

std::string seconds_text(tick t) { return format_seconds(t) + " s"; }

/// "1 request", "2 requests".
std::string plural(std::uint64_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

class progress_bar {
 public:
  progress_bar(std::ostream& err, bool on, std::uint64_t total) : err_(err), on_(on && total > 0), total_(total) {}
  void update(std::uint64_t done, std::uint64_t requests) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const std::uint64_t pct = std::min<std::uint64_t>(100, done * 100 / total_);
    const std::string bar(static_cast<std::size_t>(pct / 4), '#');
    err_ << fmt::format("\r[{:<25}] {:3}%  {} requests", bar, pct, requests) << std::flush;
    shown_ = true;
  }
  void finish() {
    if (shown_) err_ << "\r\033[K" << std::flush;
  }

 private:
  std::ostream& err_;
  bool on_;
  std::uint64_t total_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

int run_compare(const compare_flags& f, std::istream& in, std::ostream& out, std::ostream& err, bool progress) {
  // ---- flags ----
  const bool by_policy = !f.policies.empty();
  std::vector<algorithm> algos;
  std::vector<any_policy> policies;
  std::vector<std::string> names;  // of the lanes
  const auto uses = [&](std::initializer_list<algorithm> users) {
    return std::any_of(algos.begin(), algos.end(),
                       [&](algorithm a) { return std::find(users.begin(), users.end(), a) != users.end(); });
  };
  if (by_policy) {
    if (auto e = policy_excludes("--algorithms", f.algorithms_given, f.limits)) return usage_error(err, *e);
    for (const auto& text : f.policies) {
      auto p = parse_policy_flag(text);
      if (!p) return usage_error(err, p.err());
      names.push_back(format_policy(*p));
      policies.push_back(std::move(p).value());
    }
  } else {
    std::string_view list = f.algorithms;
    while (!list.empty()) {
      const std::size_t comma = list.find(',');
      std::string_view name = list.substr(0, comma);
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
      auto a = parse_algorithm("--algorithms", name);
      if (!a) return usage_error(err, a.err());
      if (std::find(algos.begin(), algos.end(), *a) != algos.end())
        return usage_error(err, error{"--algorithms", quote_input(name) + " is listed twice"});
      algos.push_back(*a);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
      if (list.empty()) return usage_error(err, error{"--algorithms", "ends with a comma"});
    }
    if (algos.empty()) return usage_error(err, error{"--algorithms", "is empty"});
    if (!f.limits.burst.empty() && !uses({algorithm::token_bucket, algorithm::gcra}))
      return usage_error(err, error{"--burst", "applies only to token-bucket and gcra, and neither is compared"});
    if (!f.limits.buckets.empty() && !uses({algorithm::sliding_buckets}))
      return usage_error(err, error{"--buckets", "applies only to sliding-buckets, which is not compared"});
    if (!f.limits.queue.empty() && !uses({algorithm::leaky_queue}))
      return usage_error(err, error{"--queue", "applies only to leaky-queue, which is not compared"});
    if (!f.limits.quota.empty() && !uses({algorithm::quota}))
      return usage_error(err, error{"--quota", "applies only to quota, which is not compared"});
    for (algorithm a : algos) {
      auto p = build_policy(a, flags_for(a, f.limits));
      if (!p) return usage_error(err, p.err());
      policies.push_back(std::move(p).value());
      names.emplace_back(name_of(a));
    }
  }
  // The window every lane is measured over: --window, else the limit's (or
  // with policies, the largest window in them).
  rate limit{0, 1};
  bool has_limit = false;
  if (!f.limits.limit.empty()) {
    limit = *parse_rate(f.limits.limit);  // already validated by build_policy
    has_limit = true;
  } else if (!by_policy) {
    return usage_error(err, error{"--limit", "is required: every limiter is measured over its window"});
  }
  tick window = limit.window;
  if (!f.window.empty()) {
    auto w = parse_duration(f.window, "--window");
    if (!w) return usage_error(err, w.err());
    if (*w <= 0) return usage_error(err, error{"--window", "must be positive"});
    window = *w;
  } else if (by_policy) {
    std::optional<tick> most;
    for (const auto& p : policies)
      if (const auto w = largest_window(p); w && (!most || *w > *most)) most = w;
    if (!most) return usage_error(err, error{"--window", "is required: no limiter in the policies has a window"});
    window = *most;
  }
  auto granularity = parse_duration(f.granularity, "--granularity");
  if (!granularity) return usage_error(err, granularity.err());
  if (*granularity <= 0) return usage_error(err, error{"--granularity", "must be positive"});
  auto top = parse_count("--top", f.top);
  if (!top) return usage_error(err, top.err());
  if (*top < 0) return usage_error(err, error{"--top", "must not be negative"});
  const auto fmt_kind = format_named(f.format);
  if (!fmt_kind)
    return usage_error(err, error{"--format", quote_input(f.format) + " is not a format (table, csv or json)"});
  // A --plot target that can never be written is refused before the run.
  if (!f.plot.empty())
    if (auto t = resolve_write_target(f.plot); !t) return usage_error(err, error{"--plot", t.err().message});
  opened_input trace;
  if (auto e = trace.open(f.trace, in)) return usage_error(err, *e);

  // ---- the run ----
  const std::size_t n_lanes = policies.size();
  const auto fresh_record = [&] {
    key_record r;
    for (const auto& p : policies) r.states.push_back(fresh_state(p));
    r.lanes.resize(n_lanes);
    return r;
  };
  key_record unkeyed = fresh_record();
  bool any_unkeyed = false;
  absl::flat_hash_map<std::string, key_record> keyed;
  std::vector<lane_stats> total(n_lanes);
  std::optional<plot_recorder> plot;
  if (!f.plot.empty()) plot.emplace(n_lanes);
  std::vector<bool> verdicts(n_lanes);
  progress_bar bar(err, progress && trace.is_file(), trace.size());

  trace_reader reader(trace.stream(), trace.name());
  request r;
  std::uint64_t n = 0;
  std::int64_t units = 0;  // the sum of the costs (saturated)
  bool costs = false;      // whether any cost is not 1: then the figures say "units"
  tick first = 0;
  tick last = 0;
  while (reader.next(r)) {
    if (n > 0 && r.time < last) {
      bar.finish();
      return usage_error(err, error{"", "trace line " + std::to_string(r.line) + ": time " + format_seconds(r.time) +
                                            " is earlier than the line before (" + format_seconds(last) +
                                            "); compare needs times in order"});
    }
    if (n == 0) first = r.time;
    last = r.time;
    ++n;
    units = units > detail::i64_max - r.cost ? detail::i64_max : units + r.cost;
    if (r.cost != 1) costs = true;
    key_record* rec = &unkeyed;
    if (r.key.empty()) {
      any_unkeyed = true;
    } else {
      auto it = keyed.find(absl::string_view(r.key.data(), r.key.size()));
      if (it == keyed.end()) it = keyed.emplace(std::string(r.key), fresh_record()).first;
      rec = &it->second;
    }
    for (std::size_t l = 0; l < n_lanes; ++l) {
      const bool ok = decide(policies[l], rec->states[l], r.time, r.cost).allowed;
      verdicts[l] = ok;
      lane_stats& k = rec->lanes[l];
      lane_stats& t = total[l];
      if (ok) {
        ++k.through;
        ++t.through;
        k.busiest.add(r.time, r.cost, window);
        t.busiest.add(r.time, r.cost, window);
      } else {
        ++k.refused;
        ++t.refused;
        ++rec->refused_total;
      }
    }
    if (plot) plot->add(r.time, verdicts);
    if ((n & 0xffff) == 0) bar.update(reader.bytes_read(), n);
  }
  bar.finish();
  if (!reader.error().empty()) return usage_error(err, error{"", reader.error()});

  // ---- the report ----
  std::vector<std::optional<worst_case_bound>> worst;
  for (const auto& p : policies) worst.push_back(worst_of(p, window, *granularity));
  // The keys refused most (by refusals over all limiters), then by name.
  std::vector<std::pair<const std::string*, const key_record*>> keys;
  const std::size_t key_count = keyed.size() + (any_unkeyed && !keyed.empty() ? 1 : 0);
  static const std::string no_key;
  if (!keyed.empty()) {
    for (const auto& [k, rec] : keyed) keys.emplace_back(&k, &rec);
    if (any_unkeyed) keys.emplace_back(&no_key, &unkeyed);
    const auto shown = std::min<std::size_t>(keys.size(), static_cast<std::size_t>(*top));
    std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(shown), keys.end(),
                      [](const auto& a, const auto& b) {
                        if (a.second->refused_total != b.second->refused_total)
                          return a.second->refused_total > b.second->refused_total;
                        return *a.first < *b.first;
                      });
    keys.resize(shown);
  }
  // Over the limit: only meaningful over the limit's own window.
  const auto over = [&](std::int64_t most) { return has_limit && window == limit.window && most > limit.limit; };
  // With keys the limit is each key's: the sum over keys is not held to it.
  const auto over_total = [&](std::int64_t most) { return key_count == 0 && over(most); };
  const std::string wtext = format_seconds(window) + " s";
  std::size_t name_width = 17;  // the longest algorithm name and two spaces; more for long expressions
  for (const auto& name : names) name_width = std::max(name_width, name.size() + 2);
  // With costs the busiest window counts units (the limit is in units), and says so.
  const std::string most_head = (costs ? "most units in any " : "most in any ") + wtext;
  const std::size_t most_width = std::max<std::size_t>(18, most_head.size() + 2);  // and two spaces
  const std::string requests_text =
      plural(n, "request") + (costs ? " (" + plural(static_cast<std::uint64_t>(units), "unit") + ")" : "");
  fmt::memory_buffer b;
  auto o = std::back_inserter(b);
  switch (*fmt_kind) {
    case format::table: {
      if (n == 0) {
        fmt::format_to(o, "No requests in the trace.\n");
        break;
      }
      std::string burst_note;
      if (uses({algorithm::token_bucket, algorithm::gcra}))
        burst_note = " (burst " + (f.limits.burst.empty() ? std::to_string(limit.limit) : f.limits.burst) + ")";
      const std::string keys_text = key_count == 0 ? std::string("no keys") : plural(key_count, "key");
      if (by_policy) {
        fmt::format_to(o, "{} from {} to {}, {}; {} limiter{}{}:\n", requests_text, seconds_text(first),
                       seconds_text(last), keys_text, n_lanes, n_lanes == 1 ? "" : "s",
                       key_count == 0 ? "" : ", each key its own");
      } else {
        fmt::format_to(o, "{} from {} to {}, {}; the limit is {} per {}{}{}:\n", requests_text, seconds_text(first),
                       seconds_text(last), keys_text, limit.limit, wtext, key_count == 0 ? "" : " for each key",
                       burst_note);
      }
      fmt::format_to(o, "  {:<{}}{:>9}{:>10}{:>{}}{:>13}\n", "limiter", name_width, "through", "refused", most_head,
                     most_width, "worst case");
      for (std::size_t l = 0; l < n_lanes; ++l) {
        const auto& t = total[l];
        std::string note;
        if (over_total(t.busiest.most())) note = "  over the limit, from " + seconds_text(t.busiest.start());
        fmt::format_to(o, "  {:<{}}{:>9}{:>10}{:>{}}{:>13}{}\n", names[l], name_width, t.through, t.refused,
                       t.busiest.most(), most_width, worst_text(worst[l], policies[l], "-"), note);
      }
      fmt::format_to(o, "Worst case: the most {}each limiter lets into any {}{}, whatever the trace{}.\n",
                     costs ? "units " : "", wtext, key_count == 0 ? "" : " for one key",
                     *granularity == 1 ? std::string("") : " (times on a " + seconds_text(*granularity) + " grid)");
      if (std::find(worst.begin(), worst.end(), std::nullopt) != worst.end())
        fmt::format_to(o, "(-: not derived yet for this algorithm.)\n");
      if (std::any_of(worst.begin(), worst.end(), [](const auto& w) { return w && !w->exact; }))
        fmt::format_to(o, "(<=: an upper bound; sluice could not pin the exact worst case down.)\n");
      for (std::size_t l = 0; l < n_lanes; ++l)
        if (worst[l] && worst[l]->value == never && !admits_without_bound(policies[l])) {
          fmt::format_to(o, "(>=: saturated; sluice counts to 2^63 - 1, and the worst case is at least that.)\n");
          break;
        }
      if (!keys.empty()) {
        fmt::format_to(o, "\nPer key, the {} of {} refused most:\n", keys.size(), key_count);
        fmt::format_to(o, "  {:<20}{:<{}}{:>9}{:>10}{:>{}}\n", "key", "limiter", name_width, "through", "refused",
                       most_head, most_width);
        for (const auto& [k, rec] : keys) {
          for (std::size_t l = 0; l < n_lanes; ++l) {
            const auto& s = rec->lanes[l];
            std::string note;
            if (over(s.busiest.most())) note = "  over the limit, from " + seconds_text(s.busiest.start());
            fmt::format_to(o, "  {:<20}{:<{}}{:>9}{:>10}{:>{}}{}\n", l == 0 ? (k->empty() ? "(no key)" : *k) : "",
                           names[l], name_width, s.through, s.refused, s.busiest.most(), most_width, note);
          }
        }
      }
      break;
    }
    case format::csv: {
      fmt::format_to(o, "scope,key,limiter,through,refused,busiest,busiest_start,over_limit,worst_case\n");
      const auto row = [&](std::string_view scope, std::string_view key, std::size_t l, const lane_stats& s,
                           bool is_total) {
        const bool is_over = is_total ? over_total(s.busiest.most()) : over(s.busiest.most());
        fmt::format_to(o, "{},", scope);
        append_csv_field(b, key);
        b.push_back(',');
        append_csv_field(b, names[l]);
        fmt::format_to(o, ",{},{},{},{},{},{}\n", s.through, s.refused, s.busiest.most(),
                       s.busiest.most() > 0 ? format_seconds(s.busiest.start()) : "", is_over ? "yes" : "no",
                       is_total ? worst_text(worst[l], policies[l], "") : "");
      };
      for (std::size_t l = 0; l < n_lanes; ++l) row("total", "", l, total[l], true);
      for (const auto& [k, rec] : keys)
        for (std::size_t l = 0; l < n_lanes; ++l) row("key", *k, l, rec->lanes[l], false);
      break;
    }
    case format::json: {
      const auto lane_json = [&](std::size_t l, const lane_stats& s, bool is_total) {
        const bool is_over = is_total ? over_total(s.busiest.most()) : over(s.busiest.most());
        fmt::format_to(o, "{{\"limiter\":");
        append_json_string(b, names[l]);  // an algorithm's name or a canonical expression: ASCII
        fmt::format_to(o,
                       ",\"through\":{},\"refused\":{},\"busiest\":{},\"busiest_start\":{},"
                       "\"over_limit\":{}",
                       s.through, s.refused, s.busiest.most(),
                       s.busiest.most() > 0 ? format_seconds(s.busiest.start()) : "null", is_over ? "true" : "false");
        if (is_total) {
          // null: unbounded (or not derived); INT64_MAX of a bounded policy saturated.
          const bool known = worst[l] && (worst[l]->value != never || !admits_without_bound(policies[l]));
          fmt::format_to(o, ",\"worst_case\":{}", known ? std::to_string(worst[l]->value) : "null");
          if (known && worst[l]->value == never) fmt::format_to(o, ",\"worst_case_saturated\":true");
          if (worst[l] && !worst[l]->exact) fmt::format_to(o, ",\"worst_case_exact\":false");
        }
        b.push_back('}');
      };
      fmt::format_to(o,
                     "{{\"requests\":{},\"units\":{},\"first\":{},\"last\":{},\"keys\":{},\"limit\":{},\"window\":{},"
                     "\"limiters\":[",
                     n, units, n ? format_seconds(first) : "null", n ? format_seconds(last) : "null", key_count,
                     has_limit ? std::to_string(limit.limit) : "null", format_seconds(window));
      for (std::size_t l = 0; l < n_lanes; ++l) {
        if (l) b.push_back(',');
        lane_json(l, total[l], true);
      }
      fmt::format_to(o, "],\"top_keys\":[");
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (i) b.push_back(',');
        b.push_back('{');
        append_json_key(b, *keys[i].first);
        fmt::format_to(o, ",\"limiters\":[");
        for (std::size_t l = 0; l < n_lanes; ++l) {
          if (l) b.push_back(',');
          lane_json(l, keys[i].second->lanes[l], false);
        }
        fmt::format_to(o, "]}}");
      }
      fmt::format_to(o, "]}}\n");
      break;
    }
  }
  if (auto why = write_and_flush(out, std::string_view(b.data(), b.size())))
    return output_error(err, stdout_name, *why);

  if (plot) {
    std::vector<plot_recorder::lane_info> info;
    for (std::size_t l = 0; l < n_lanes; ++l)
      info.push_back({names[l], total[l].through, total[l].refused, total[l].busiest.most(), total[l].busiest.start(),
                      over_total(total[l].busiest.most()), costs});
    std::string title = by_policy ? fmt::format("{}; most {}in any {}", requests_text, costs ? "units " : "", wtext)
                                  : fmt::format("{}; the limit is {} per {}", requests_text, limit.limit, wtext);
    if (uses({algorithm::token_bucket, algorithm::gcra}))
      title += " (burst " + (f.limits.burst.empty() ? std::to_string(limit.limit) : f.limits.burst) + ")";
    const std::string svg = n == 0 ? std::string(
                                         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"40\">"
                                         "<text x=\"10\" y=\"25\">No requests in the trace.</text></svg>\n")
                                   : plot->render(title, window, info);
    auto written = write_file_atomically(f.plot, [&svg](const byte_sink& sink) { return sink(svg); });
    if (!written) return output_error(err, "--plot", written.err().message);
  }
  return exit_ok;
}

}  // namespace sluice::cli
