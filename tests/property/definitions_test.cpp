// The figures of every decision against their definitions: every
// algorithm on random traces and at the edges, and random nested composites
// (the properties are in definitions.hpp, which says what each checks).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "property/definitions.hpp"

namespace sluice::property_definitions_test {
namespace {

using namespace sluice::definitions;

// ---- every algorithm, on the model tests' configurations ----

TEST(Definitions, EveryAlgorithmOnRandomTraces) {
  model::for_each_algorithm([&](auto type) {
    using P = typename decltype(type)::type;
    tally n;
    for (std::uint64_t seed = 0; seed < 300; ++seed) {
      ASSERT_TRUE(leaf_figures_hold<P>(seed, n));
    }
    SCOPED_TRACE(std::string(name_of(model::algorithm_of_type<P>())));
    EXPECT_EQ(n.decisions, 300 * static_cast<long>(model::trace_length));
    if constexpr (!std::is_same_v<P, always_allow> && !std::is_same_v<P, always_deny>) {
      EXPECT_GT(n.remaining_probed, 100);
    }
    if constexpr (!std::is_same_v<P, always_allow> && !std::is_same_v<P, always_deny> && !std::is_same_v<P, quota>) {
      EXPECT_GT(n.reset_probed, 100);
      EXPECT_GT(n.retry_probed, 20);
    }
  });
}

TEST(Definitions, EveryAlgorithmAtTheEdges) {
  model::for_each_algorithm([&](auto type) {
    using P = typename decltype(type)::type;
    tally n;
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
      const model::drawn dr = model::draw_edges(seed, model::algorithm_of_type<P>());
      const any_policy p = make_policy(model::spec_of(dr.c)).value();
      ASSERT_TRUE(trace_holds(p, dr.trace, "edges seed " + std::to_string(seed) + " (" + dr.c.describe() + ")", n));
    }
  });
}

TEST(Definitions, RandomNestedComposites) {
  tally n;
  for (std::uint64_t seed = 0; seed < 600; ++seed) {
    ASSERT_TRUE(composite_figures_hold(seed, n));
  }
  EXPECT_GT(n.remaining_probed, 5000);
  EXPECT_GT(n.reset_probed, 5000);
  EXPECT_GT(n.retry_probed, 1000);
  EXPECT_GT(n.bound_by_other, 500);
}

}  // namespace
}  // namespace sluice::property_definitions_test
