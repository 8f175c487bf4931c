// A client for tests that drive a redis-server directly (set a key, read a
// TTL, kill a connection): the synchronous face of the asynchronous client
// (sync_client over one async_client, the store's own client), with the
// few calls the tests need — one command, a pipeline of commands, FCALLs —
// and its counters.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redis/client/async_client.hpp"
#include "redis/client/sync_client.hpp"

namespace sluice::redis {

/// One connection to one server, answered synchronously.
class test_client {
 public:
  /// Nothing is connected yet: the first call connects.
  explicit test_client(async_client_options options) {
    auto c = sync_client::open(std::move(options));
    if (!c) ADD_FAILURE() << c.err().what();
    if (c) c_ = std::move(c).value();
  }

  /// One command; an error reply is `call_error::server`.
  call_result call(std::initializer_list<std::string_view> argv) { return c_->call(argv); }
  call_result call(std::span<const std::string_view> argv) { return c_->call(argv); }

  /// Commands in one write, their replies in order (an error reply is an
  /// element of kind `error`), or the error that broke the batch.
  batch_result pipeline(std::span<const std::vector<std::string_view>> commands) {
    std::promise<batch_result> p;
    auto f = p.get_future();
    async().async_pipeline(commands, [&p](batch_result r) { p.set_value(std::move(r)); });
    return f.get();
  }

  /// sync_client::close: every call in flight and every later one fails.
  void close() { c_->close(); }

  result<bool> set_library(std::string name, std::string code) {
    return c_->set_library(std::move(name), std::move(code));
  }
  /// One function; an error reply is `call_error::server`.
  call_result fcall(const function_call& fc) { return c_->fcall(fc); }
  std::vector<call_result> fcall_each(std::span<const function_call> calls) { return c_->fcall_each(calls); }
  /// The calls pipelined: their replies, or the first error that kept one
  /// from its reply.
  batch_result fcall_pipeline(std::span<const function_call> calls) {
    std::vector<reply> out;
    for (auto& r : c_->fcall_each(calls)) {
      if (auto* e = std::get_if<call_error>(&r)) return *e;
      out.push_back(std::get<reply>(std::move(r)));
    }
    return out;
  }
  std::optional<std::uint64_t> count_keys() { return c_->count_keys(); }

  /// Every connection's: the callers' and the I/O thread's (pipeline()).
  [[nodiscard]] async_stats stats() const { return c_->stats().value(); }
  [[nodiscard]] library_mode mode() const { return c_->mode().value(); }

 private:
  [[nodiscard]] async_client& async() const { return dynamic_cast<async_client&>(c_->async()); }
  std::unique_ptr<sync_client> c_;
};

}  // namespace sluice::redis
