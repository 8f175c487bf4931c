// A remote store's I/O on its caller's event loops (sluice::remote): what a
// front end whose event loops are Boost.Asio io_contexts, each run by one
// thread (`sluice serve`'s), offers a store, so that an asynchronous call
// made on a loop (store::decide_async, peek_async, report_async) is written,
// read, judged and answered on that loop's own thread — no hand-off to a
// thread of the store's and back, which on a busy machine costs two task
// switches a request (docs/serve.md, "Benchmark").
//
// Nothing else changes: the synchronous calls, and asynchronous ones made
// on any other thread, keep the store's own I/O thread. A loop never waits
// on the store (its calls are asynchronous), so a store that is slow or gone
// stalls no loop either way.
//
// Lifetime: attach before the loops run; detach each loop on its own thread
// (or once no thread runs it) before it ends. A loop that still holds the
// store's connection has work outstanding (the connection's read), so its
// `run()` does not return until it is detached; detaching closes that
// connection, which fails any call still waiting on it (the store's failure
// mode answers it), on the loop, when it runs next. The store's destructor
// requires every loop detached, and run until its calls were answered.
#pragma once

#include <span>

#include "sluice/core/result.hpp"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace sluice::remote {

/// A store that can do its I/O on the caller's event loops.
class loop_store {
 public:
  /// From now on, an asynchronous call made on a thread running `loops[i]`
  /// goes out on a connection of that loop's own, made on first use, and
  /// its `done` runs on that thread. Called once, before any loop runs.
  /// The error says why the store keeps its own thread (nothing attached).
  virtual result<bool> attach_loops(std::span<boost::asio::io_context* const> loops) = 0;

  /// Ends `loop`'s own connection (see the file's comment); calls made on
  /// it afterwards take the store's own thread. Idempotent.
  virtual void detach_loop(boost::asio::io_context& loop) = 0;

 protected:
  loop_store() = default;
  ~loop_store() = default;
  loop_store(const loop_store&) = default;
  loop_store& operator=(const loop_store&) = default;
};

}  // namespace sluice::remote
