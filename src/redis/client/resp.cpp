// RESP helpers shared by both clients (resp.hpp).
#include "redis/client/resp.hpp"

#include <hiredis/hiredis.h>

#include <charconv>
#include <string>

namespace sluice::redis {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

bool convert_reply(const redisReply* r, reply& out) {
  switch (r->type) {
    case REDIS_REPLY_NIL:
      out.kind = reply::type::nil;
      return true;
    case REDIS_REPLY_INTEGER:
      out.kind = reply::type::integer;
      out.integer = r->integer;
      return true;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      out.kind = r->type == REDIS_REPLY_STRING   ? reply::type::string
                 : r->type == REDIS_REPLY_STATUS ? reply::type::status
                                                 : reply::type::error;
      out.str.assign(r->str, r->len);
      return true;
    case REDIS_REPLY_ARRAY:
      out.kind = reply::type::array;
      out.elements.resize(r->elements);
      for (std::size_t i = 0; i < r->elements; ++i)
        if (r->element[i] == nullptr || !convert_reply(r->element[i], out.elements[i])) return false;
      return true;
    default:
      return false;
  }
}

void format_command(std::string& out, std::span<const std::string_view> args) {
  char num[24];
  auto put_num = [&](char lead, std::size_t n) {
    out.push_back(lead);
    const auto r = std::to_chars(num, num + sizeof num, n);
    out.append(num, r.ptr);
    out.append("\r\n", 2);
  };
  put_num('*', args.size());
  for (const auto& a : args) {
    put_num('$', a.size());
    out.append(a.data(), a.size());
    out.append("\r\n", 2);
  }
}

bool is_auth_error(std::string_view msg) {
  return starts_with(msg, "NOAUTH") || starts_with(msg, "WRONGPASS") || starts_with(msg, "ERR AUTH") ||
         starts_with(msg, "ERR invalid password") || starts_with(msg, "ERR Client sent AUTH");
}

call_error server_error(std::string msg) {
  call_error e;
  e.kind = is_auth_error(msg) ? call_error::auth : call_error::server;
  e.message = std::move(msg);
  e.maybe_applied = false;
  return e;
}

bool is_function_missing(std::string_view msg) { return starts_with(msg, "ERR Function not found"); }
bool is_function_refused(std::string_view msg) {
  return starts_with(msg, "NOPERM") || starts_with(msg, "ERR unknown command") ||
         starts_with(msg, "ERR unknown subcommand");
}
bool is_noscript(std::string_view msg) { return starts_with(msg, "NOSCRIPT"); }

std::string script_form(std::string_view code) {
  std::string_view body = code;
  if (starts_with(body, "#!")) {
    const auto nl = body.find('\n');
    body = nl == std::string_view::npos ? std::string_view{} : body.substr(nl + 1);
  }
  std::string s;
  s.reserve(body.size() + 512);
  s += "local sluice_fns__ = {}\n";
  s += "local redis = setmetatable({register_function = function(a, b)\n";
  s += "  if type(a) == 'table' then sluice_fns__[a.function_name] = a.callback else sluice_fns__[a] = b end\n";
  s += "end}, {__index = redis})\n";
  s += "local function sluice_body__()\n";
  s += body;
  s += "\nend\nsluice_body__()\n";
  s += "local f = sluice_fns__[ARGV[1]]\n";
  s += "if not f then return redis.error_reply('ERR sluice script form: no function ' .. tostring(ARGV[1])) end\n";
  s += "return f(KEYS, {unpack(ARGV, 2)})\n";
  return s;
}

result<bool> check_library(std::string_view name, std::string_view code) {
  const std::string first_line(code.substr(0, code.find('\n')));
  if (name.empty()) return error{"library", "the library name is empty"};
  // "#!lua name=<name>" possibly followed by more options.
  const std::string want = "#!lua name=" + std::string(name);
  if (first_line != want && !starts_with(first_line, want + " "))
    return error{"library", "the code's first line must be \"" + want + "\", not \"" + first_line + "\""};
  return true;
}

}  // namespace sluice::redis
