// keyed's insides are not API (docs/architecture.md, "Headers"): a keyed
// store's and a memory store's implementation, and a keyed_budget's room,
// are private members, reached only through keyed's private
// detail::keyed_internals (src/keyed/internals.hpp), as the stores' own
// files and this test do.
#include <gtest/gtest.h>

#include <cstddef>

#include "keyed/internals.hpp"
#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::keyed_internals_test {
namespace {

// Whether a user of the public header can name these members (access is
// checked when the requirement is substituted).
template <typename T>
constexpr bool has_public_internals = requires(T& t) {
  t.internals();
};
template <typename B>
constexpr bool can_take = requires(B& b) {
  b.take();
};
template <typename B>
constexpr bool can_give = requires(B& b) {
  b.give(std::size_t{1});
};
template <typename B>
constexpr bool can_add = requires(B& b) {
  b.add(std::size_t{1});
};
template <typename B>
constexpr bool can_count_refused = requires(B& b) {
  b.count_refused();
};

TEST(KeyedInternals, AreNotPublic) {
  EXPECT_FALSE(has_public_internals<keyed_limiter>);
  EXPECT_FALSE(has_public_internals<memory_store>);
  EXPECT_FALSE(can_take<keyed_budget>);
  EXPECT_FALSE(can_give<keyed_budget>);
  EXPECT_FALSE(can_add<keyed_budget>);
  EXPECT_FALSE(can_count_refused<keyed_budget>);
}

TEST(KeyedInternals, TheStoresTakeAndGiveABudgetsRoomThroughThem) {
  keyed_budget b(1);
  EXPECT_TRUE(detail::keyed_internals::take(b));
  EXPECT_FALSE(detail::keyed_internals::take(b));  // spent: nothing taken
  EXPECT_EQ(b.held(), 1U);
  detail::keyed_internals::count_refused(b);
  EXPECT_EQ(b.refused(), 1U);
  detail::keyed_internals::give(b, 1);
  EXPECT_EQ(b.held(), 0U);
  detail::keyed_internals::add(b, 2);  // restored whatever the bound
  EXPECT_EQ(b.held(), 2U);
}

}  // namespace
}  // namespace sluice::keyed_internals_test
