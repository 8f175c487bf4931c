// Medians and ranges of repeated benchmark runs, for the RESULT lines the
// keyed and store benchmarks print beside the peers'.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace sluice_bench {

/// The median, the least and the largest of n runs.
struct stats3 {
  double median = 0, lo = 0, hi = 0;
  std::size_t n = 0;
};

/// The stats3 of `v` (all zero when empty).
inline stats3 summarize(std::vector<double> v) {
  stats3 s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = v.size();
  s.lo = v.front();
  s.hi = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

/// Counter `name` of every run that has it, in run order.
inline std::vector<double> field(const std::vector<std::map<std::string, double>>& runs, const std::string& name) {
  std::vector<double> v;
  for (const auto& r : runs)
    if (auto it = r.find(name); it != r.end()) v.push_back(it->second);
  return v;
}

}  // namespace sluice_bench
