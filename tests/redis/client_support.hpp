// Shared by the tests that drive the Redis client directly (client,
// async_client, library, override_design): client options for a server's
// URL, and the reply of a call that must succeed.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <variant>

#include "redis/client/async_client.hpp"
#include "redis/client/client.hpp"

namespace sluice::redis::client_support {

/// Options for the server at `text`, each call's deadline `command_timeout`.
inline async_client_options options_for(
    const std::string& text, std::chrono::milliseconds command_timeout = async_client_options{}.command_timeout) {
  auto u = parse_url(text);
  EXPECT_TRUE(u.ok()) << (u.ok() ? "" : u.err().what());
  async_client_options o;
  o.where = u.ok() ? u.value() : url{};
  o.command_timeout = command_timeout;
  return o;
}

/// The reply of a call that must succeed (an empty reply, and a failed test, if not).
inline reply ok(call_result r) {
  if (auto* e = std::get_if<call_error>(&r)) {
    ADD_FAILURE() << e->what();
    return reply{};
  }
  return std::get<reply>(std::move(r));
}

}  // namespace sluice::redis::client_support
