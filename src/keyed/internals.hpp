// What sluice::keyed's own files reach inside its public classes that is not
// API (private to sluice::keyed, and to the tests that drive its insides):
// a keyed store's and a memory store's implementation, and a keyed_budget's
// room, which only a store takes and gives back. The public headers name
// this struct as a friend and nothing else of it, so a user of the library
// has no way to these members.
#pragma once

#include <cstddef>

#include "sluice/keyed/keyed.hpp"
#include "sluice/keyed/memory.hpp"

namespace sluice::detail {

struct keyed_internals {
  /// The keyed store's implementation (src/keyed/keyed_impl.hpp), for the
  /// memory store's paths straight into it.
  static keyed_limiter::impl& of(keyed_limiter& k) noexcept { return *k.impl_; }
  /// The memory store's implementation (src/keyed/memory_store_impl.hpp).
  static memory_store::impl& of(memory_store& m) noexcept { return *m.impl_; }

  /// Takes room for one state in `b`; false (and nothing taken) when spent.
  static bool take(keyed_budget& b) noexcept { return b.take(); }
  /// Gives back room for `n` states (dropped, or a store destroyed).
  static void give(keyed_budget& b, std::size_t n) noexcept { b.give(n); }
  /// Counts `n` states restored whatever the bound.
  static void add(keyed_budget& b, std::size_t n) noexcept { b.add(n); }
  /// Counts one refusal.
  static void count_refused(keyed_budget& b) noexcept { b.count_refused(); }
};

}  // namespace sluice::detail
