// stop_and_join: at scope exit, tells a test's load threads to stop and
// joins them, so that an early exit (a failed assertion, an exception of
// the harness) never destroys a running std::thread (an abort).
#pragma once

#include <atomic>
#include <initializer_list>
#include <thread>
#include <vector>

namespace sluice::testing {

class stop_and_join {
 public:
  stop_and_join(std::atomic<bool>& stop, std::initializer_list<std::thread*> threads)
      : stop_(stop), threads_(threads) {}
  stop_and_join(const stop_and_join&) = delete;
  stop_and_join& operator=(const stop_and_join&) = delete;
  ~stop_and_join() {
    stop_ = true;
    for (std::thread* t : threads_)
      if (t->joinable()) t->join();
  }

 private:
  std::atomic<bool>& stop_;
  std::vector<std::thread*> threads_;
};

}  // namespace sluice::testing
