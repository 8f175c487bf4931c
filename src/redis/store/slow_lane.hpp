// A thread of the Redis store's own for the rare decisions that take more
// than one call (a state carried over from an earlier configuration, a
// compare-and-set that lost a race; the clock's offset measurement): the
// asynchronous path hands them here, where the synchronous code decides
// them, so that no I/O thread and no caller's event loop ever waits on a
// second call. Jobs run in the order given. Private to sluice::redis.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace sluice::redis {

class slow_lane {
 public:
  slow_lane() = default;
  slow_lane(const slow_lane&) = delete;
  slow_lane& operator=(const slow_lane&) = delete;
  /// Runs the jobs already given, then joins the thread.
  ~slow_lane() {
    {
      const std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  /// Runs `job` on the lane's thread (started by the first job).
  void post(std::function<void()> job) {
    {
      const std::lock_guard lock(mu_);
      jobs_.push_back(std::move(job));
      if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    }
    cv_.notify_one();
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // requires mu_
  bool stopping_ = false;                   // requires mu_
  std::thread thread_;
};

}  // namespace sluice::redis
