// The pieces of async_client shared by its two files (async_client.cpp: the
// connection; async_fcall.cpp: the FUNCTION library path). Private.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redis/client/async_client.hpp"

namespace sluice::redis {

/// One submission: commands in RESP, answered by `expected` replies.
struct async_client::op {
  std::string bytes;
  std::size_t expected = 1;
  std::vector<reply> got;
  /// Empty once the caller was answered (a timed-out op keeps its place).
  batch_handler done;
  std::chrono::steady_clock::time_point deadline{};
  std::chrono::steady_clock::time_point written_at{};
  bool written = false;
  bool internal = false;    // the login of a new connection
  bool ends_batch = false;  // the last op of a write (batches_in_flight counts them)
};

/// The FUNCTION library: its code, its script form and that form's SHA1.
struct async_client::library {
  std::string name;
  std::string code;    // the FUNCTION library
  std::string script;  // its EVAL form
  mutable std::mutex sha_mu;
  mutable std::string sha;  // SHA1 of `script` once SCRIPT LOAD answered; requires sha_mu
};

/// One async_fcall_each: the calls (owned), their replies so far, the calls
/// of the round in flight.
struct async_client::fcall_job {
  /// One call: its function, then its keys and arguments, as pieces of
  /// `arena` (the caller's views are copied once, into one buffer, so that
  /// a round may be sent again).
  struct call {
    std::size_t first = 0;  ///< its function's index in `pieces`
    std::size_t count = 0;  ///< its keys and arguments, the pieces after it
    std::size_t num_keys = 0;
    module_command module = module_command::none;  ///< function_call::module
    letter_set letters = 0;
    bool via_module = false;  ///< sent as the module's command in the round in flight
    bool to_library = false;  ///< the module refused it: the library's from now on
  };
  std::string arena;
  std::vector<std::pair<std::size_t, std::size_t>> pieces;  ///< (offset, length) in `arena`
  std::vector<call> calls;
  [[nodiscard]] std::string_view piece(std::size_t i) const {
    return std::string_view(arena).substr(pieces[i].first, pieces[i].second);
  }
  std::vector<reply> out;
  std::vector<std::size_t> pending;
  std::shared_ptr<const library> lib;
  std::string sha;
  bool script = false;
  bool loaded = false;
  bool asking = false;  // each FCALL after an ASKING (whose +OK is dropped)
  int round = 0;
  batch_handler done;
};

}  // namespace sluice::redis
