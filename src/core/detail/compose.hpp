// Private to sluice::core: how a composite decides in time proportional to
// its size. A decision is two passes over the tree of parts:
//
// - `evaluate` asks every part, without changing any state, what it would
//   answer (`outcome::d`, the figures on the state after that answer) and,
//   where its parent needs them, its figures as it is now (`before`: what a
//   part that would admit reports when it is not let to consume). Every
//   any_of records the part it would consume from in a scratch array, one
//   slot per any_of, in the order the tree is walked.
// - `commit`, only when the whole composite admits, lets the consuming
//   parts decide for real, reading each any_of's choice from the scratch
//   instead of asking its parts again.
//
// Each part is evaluated once and committed at most once, so the cost is
// linear in the number of parts at any depth, and no state is copied but a
// plain limiter's small, trivially copyable one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <variant>

#include "sluice/core/any.hpp"

namespace sluice::detail {

/// What a part would answer, computed without changing it.
struct outcome {
  /// The decision it would return: on an admit, `remaining` and
  /// `reset_after` are read after its consumption.
  decision d;
  /// `remaining` and `reset_after` on the state as it is (equal to d's on a
  /// denial); meaningful only when `before_known`.
  std::int64_t remaining_before = 0;
  tick reset_before = 0;
  bool before_known = false;
};

/// The scratch a decision records every any_of's choice in: on the stack
/// for up to 64 of them, else allocated.
class choice_buffer {
 public:
  explicit choice_buffer(std::size_t n) {
    if (n > small_.size()) big_ = std::make_unique<std::int32_t[]>(n);
  }
  std::int32_t* data() noexcept { return big_ ? big_.get() : small_.data(); }

 private:
  std::array<std::int32_t, 64> small_;
  std::unique_ptr<std::int32_t[]> big_;
};

/// The number of any_of composites in `p`, at any depth (0 for a plain
/// limiter): the scratch slots its evaluation writes.
inline std::size_t choices_of(const any_policy& p) noexcept {
  if (const auto* a = std::get_if<all_of>(&p)) return a->choices();
  if (const auto* a = std::get_if<any_of>(&p)) return a->choices();
  return 0;
}

/// What `p` would answer, without changing `s`; records the choices of its
/// any_of composites in `choices` (choices_of(p) slots). With `want_before`
/// the figures before are always computed; without it, a plain limiter
/// that would admit may leave them unknown.
outcome evaluate(const any_policy& p, const any_state& s, tick now, std::int64_t cost, std::int32_t* choices,
                 bool want_before) noexcept;
outcome evaluate(const all_of& p, const all_of_state& s, tick now, std::int64_t cost, std::int32_t* choices,
                 bool want_before) noexcept;
outcome evaluate(const any_of& p, const any_of_state& s, tick now, std::int64_t cost, std::int32_t* choices,
                 bool want_before) noexcept;

/// Applies the admit that `evaluate` found, with the choices it recorded.
/// Requires that evaluate(p, s, now, cost, choices) has just admitted.
void commit(const any_policy& p, any_state& s, tick now, std::int64_t cost, const std::int32_t* choices) noexcept;
void commit(const all_of& p, all_of_state& s, tick now, std::int64_t cost, const std::int32_t* choices) noexcept;
void commit(const any_of& p, any_of_state& s, tick now, std::int64_t cost, const std::int32_t* choices) noexcept;

/// The scratch offset of part `k` of an any_of (its own choice is slot 0).
inline std::size_t choice_offset(const any_of& p, std::size_t k) noexcept {
  std::size_t off = 1;
  for (std::size_t i = 0; i < k; ++i) off += choices_of(p.parts()[i]);
  return off;
}

}  // namespace sluice::detail
