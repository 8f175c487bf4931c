// Replays every seed in regressions.txt through every property, for every
// algorithm: a seed that once found a bug keeps guarding against it.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "property/checks.hpp"
#include "property/definitions.hpp"

namespace sluice::property_regressions_test {
namespace {

using namespace sluice::model;

std::vector<std::uint64_t> regression_seeds() {
  std::ifstream in(SLUICE_REGRESSIONS_FILE);
  EXPECT_TRUE(in.good()) << "cannot read " << SLUICE_REGRESSIONS_FILE;
  std::vector<std::uint64_t> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const auto end = line.find_first_of(" \t\r", first);
    const std::string word = line.substr(first, end == std::string::npos ? std::string::npos : end - first);
    std::size_t used = 0;
    const std::uint64_t seed = std::stoull(word, &used, 0);
    EXPECT_EQ(used, word.size()) << "not a seed: " << word;
    out.push_back(seed);
  }
  return out;
}

TEST(Regressions, EverySeedThroughEveryProperty) {
  for (const std::uint64_t seed : regression_seeds()) {
    SCOPED_TRACE("regression seed " + std::to_string(seed));
    for_each_algorithm([&](auto type) {
      using P = typename decltype(type)::type;
      EXPECT_TRUE(agrees_with_model<P>(seed));
      EXPECT_TRUE(agrees_with_model_on_edges<P>(seed));
      EXPECT_TRUE(variant_agrees<P>(seed));
      denial_counts counts;
      EXPECT_TRUE(denials_are_exact_and_pure<P>(seed, counts));
      long stepped_back = 0;
      EXPECT_TRUE(clock_back_earns_nothing<P>(seed, stepped_back));
      definitions::tally figures;
      EXPECT_TRUE(definitions::leaf_figures_hold<P>(seed, figures));
    });
    definitions::tally figures;
    EXPECT_TRUE(definitions::composite_figures_hold(seed, figures));
    EXPECT_TRUE(gcra_is_token_bucket(seed));
    EXPECT_TRUE(log_never_exceeds_limit(seed));
    EXPECT_TRUE(fixed_window_doubles_at_a_boundary(seed));
  }
}

}  // namespace
}  // namespace sluice::property_regressions_test
