// Grace periods for the keyed store's lock-free readers: see reclaim.hpp.
#include "reclaim.hpp"

#include <mutex>
#include <thread>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sluice::keyed_detail {
namespace {

struct registry {
  std::mutex mu;
  std::atomic<reader_slot*> head{nullptr};
  unsigned count = 0;  // slots made
  bool asym = false;

  registry() {
#if defined(__linux__) && !defined(__SANITIZE_THREAD__)
    const long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
      asym = true;
#endif
  }
};

registry& reg() {
  static registry r;  // never destroyed before the threads that use it: slots are leaked on purpose
  return r;
}

/// Gives the slot back when its thread exits.
struct slot_release {
  reader_slot* slot = nullptr;
  ~slot_release() {
    if (slot != nullptr) {
      tl_slot = nullptr;
      slot->taken.store(false, std::memory_order_release);
    }
  }
};

void heavy_barrier() {
#if defined(__linux__) && !defined(__SANITIZE_THREAD__)
  if (reg().asym) {
    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    return;
  }
#endif
  static std::atomic<int> barrier{0};
  barrier.fetch_add(1, std::memory_order_seq_cst);  // a full barrier (lock xadd)
}

}  // namespace

bool asymmetric_fences() noexcept {
  static const bool asym = reg().asym;
  return asym;
}

reader_slot* register_reader() {
  thread_local slot_release release;
  registry& r = reg();
  std::lock_guard lock(r.mu);
  reader_slot* s = nullptr;
  for (reader_slot* p = r.head.load(std::memory_order_relaxed); p != nullptr; p = p->next) {
    if (!p->taken.load(std::memory_order_acquire)) {
      s = p;
      break;
    }
  }
  if (s == nullptr) {
    s = new reader_slot;  // NOLINT: lives as long as the process
    s->index = r.count++;
    s->next = r.head.load(std::memory_order_relaxed);
    r.head.store(s, std::memory_order_release);
  }
  s->taken.store(true, std::memory_order_relaxed);
  release.slot = s;
  tl_slot = s;
  return s;
}

void synchronize(domain d) {
  // No lock: the list only grows, each slot published whole (a slot added
  // meanwhile belongs to a thread whose sections begin after this call), and
  // holding the registry lock while waiting would deadlock a reader of one
  // domain that, inside its section, waits for the other's grace period.
  registry& r = reg();
  heavy_barrier();
  const auto k = static_cast<unsigned>(d);
  for (reader_slot* p = r.head.load(std::memory_order_acquire); p != nullptr; p = p->next) {
    const std::uint64_t v = p->ctr[k].load(std::memory_order_acquire);
    if ((v & 1U) == 0) continue;
    for (int spins = 0; p->ctr[k].load(std::memory_order_acquire) == v; ++spins) {
      if (spins > 64) std::this_thread::yield();
    }
  }
  heavy_barrier();
}

}  // namespace sluice::keyed_detail
