// The shared types of client.hpp: a reply's strict accessors and makers,
// call_error's names.
#include "redis/client/client.hpp"

#include <utility>

namespace sluice::redis {

// ---------------------------------------------------------------- reply

std::optional<std::int64_t> reply::as_integer() const noexcept {
  if (kind != type::integer) return std::nullopt;
  return integer;
}
std::optional<std::string_view> reply::as_string() const noexcept {
  if (kind != type::string) return std::nullopt;
  return std::string_view(str);
}
std::optional<std::string_view> reply::as_status() const noexcept {
  if (kind != type::status) return std::nullopt;
  return std::string_view(str);
}
std::optional<std::string_view> reply::as_error() const noexcept {
  if (kind != type::error) return std::nullopt;
  return std::string_view(str);
}
const std::vector<reply>* reply::as_array() const noexcept { return kind == type::array ? &elements : nullptr; }

reply reply::make_integer(std::int64_t v) {
  reply r;
  r.kind = type::integer;
  r.integer = v;
  return r;
}
reply reply::make_string(std::string s) {
  reply r;
  r.kind = type::string;
  r.str = std::move(s);
  return r;
}
reply reply::make_status(std::string s) {
  reply r;
  r.kind = type::status;
  r.str = std::move(s);
  return r;
}
reply reply::make_error(std::string s) {
  reply r;
  r.kind = type::error;
  r.str = std::move(s);
  return r;
}
reply reply::make_array(std::vector<reply> v) {
  reply r;
  r.kind = type::array;
  r.elements = std::move(v);
  return r;
}

std::string_view call_error::name(kind_t k) noexcept {
  switch (k) {
    case timeout:
      return "timeout";
    case io:
      return "io";
    case refused:
      return "refused";
    case auth:
      return "auth";
    case server:
      return "server";
    case protocol:
      return "protocol";
    case breaker:
      return "breaker";
  }
  return "?";
}

std::string call_error::what() const { return std::string(name(kind)) + ": " + message; }

}  // namespace sluice::redis
