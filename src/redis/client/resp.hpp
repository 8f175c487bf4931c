// RESP helpers shared by the synchronous client (client.cpp) and the
// asynchronous one (async_client.cpp): formatting a command, converting a
// hiredis reply tree into an owned `reply`, reading Redis's error replies,
// and the FUNCTION library's EVAL form. Private to sluice::redis.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "redis/client/client.hpp"
#include "sluice/core/result.hpp"

struct redisReply;  // hiredis

namespace sluice::redis {

/// Appends one command in RESP (`*argc`, then `$len` and the bytes of each
/// argument) to `out`.
void format_command(std::string& out, std::span<const std::string_view> args);

/// Strict conversion of a hiredis reply tree; false on a type hiredis 0.14
/// should never produce.
bool convert_reply(const redisReply* r, reply& out);

/// Whether an error reply is about logging in (NOAUTH, WRONGPASS, ...).
bool is_auth_error(std::string_view msg);
/// An error reply as a call_error: `auth` for a login error, else `server`.
call_error server_error(std::string msg);
/// FCALL of a function the server does not have (fresh server, FUNCTION FLUSH).
bool is_function_missing(std::string_view msg);
/// FUNCTION / FCALL refused: ACL, or a server without functions (before 7.0).
bool is_function_refused(std::string_view msg);
/// EVALSHA of a script the server does not have.
bool is_noscript(std::string_view msg);

/// The library's code as an EVAL script: the same body, with a local `redis`
/// whose register_function records the callbacks, then a dispatch on ARGV[1].
std::string script_form(std::string_view code);

/// An error naming "library" unless the code's first line declares `name`
/// (`#!lua name=<name>`, possibly followed by more options).
result<bool> check_library(std::string_view name, std::string_view code);

}  // namespace sluice::redis
