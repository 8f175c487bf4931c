// One leaf of a request, decided by the core's own step function on the
// value the Lua library stores (engine.cpp calls it; leaves.cpp). The
// leaf's arguments are the library's (src/redis/lua/<algorithm>.lua): the
// quantities the client derived from the policy and the cost, from which
// the leaf rebuilds a core policy that decides exactly as that policy does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "redis_module/engine.hpp"
#include "sluice/core/time.hpp"

namespace sluice::redis_module {

/// A leaf's tag: its type letter and 8 hex digits.
inline constexpr std::size_t leaf_tag_size = 9;

/// Whether `c` is the type letter of a leaf of the library (g q f c u s b l).
bool is_leaf_letter(char c) noexcept;
/// Every type letter the module decides, in one string (SLUICE.INFO).
std::string decided_letters();
/// The bytes of the arguments after a leaf's tag (main.lua, `arg_bytes`).
std::size_t leaf_arg_bytes(char letter) noexcept;

/// What a leaf answers: whether it admits (a report: fits), the value it
/// would write, and how many ticks after the write its state is fresh
/// (-1: never); or an error reply, nothing decided.
struct leaf_step {
  bool ok = false;
  std::optional<std::string> after;
  std::int64_t ttl = 0;
  std::optional<reply> error;
};

/// Decides the leaf of `tag` with arguments `args` (leaf_arg_bytes of them)
/// on its value `before` (nullopt: fresh; its tag is `tag`) at `now`.
/// `shift`: the store's clock minus the client's estimate, by which the
/// windowed leaves move the client's window.
leaf_step step_leaf(std::string_view tag, std::string_view args, const std::optional<std::string>& before, tick now,
                    std::int64_t shift);

}  // namespace sluice::redis_module
