// Grace periods for the keyed store's lock-free readers (private).
//
// A reader brackets its lock-free lookup with a `read_guard`: it bumps a
// counter of its own (odd while inside, even outside) on its own cache line,
// so readers never write anything shared. A writer that has unlinked a
// record or a table calls `synchronize()`, which returns once every read
// section that might still see it has ended; only then is the memory reused.
//
// On Linux the readers' side is two plain stores: the writer's
// membarrier(PRIVATE_EXPEDITED) stands in for the readers' fences
// (asymmetric fences, as userspace RCU does). Elsewhere, or when the kernel
// refuses membarrier, or under ThreadSanitizer, a reader enters with a
// seq_cst exchange (a full barrier) instead.
#pragma once

#include <atomic>
#include <cstdint>

namespace sluice::keyed_detail {

/// One thread's read counter, alone on its cache line. Slots are never
/// freed: a thread that exits gives its slot back for the next thread.
struct alignas(64) reader_slot {
  std::atomic<std::uint64_t> ctr{0};  // odd: inside a read section
  std::atomic<bool> taken{false};
  reader_slot* next = nullptr;  // registry list; written once, under the registry lock
};

/// The calling thread's slot, registering it on first use.
reader_slot* register_reader();

/// Whether readers may skip their fence (the writer issues membarrier).
bool asymmetric_fences() noexcept;

/// This thread's slot; null until its first read section.
inline thread_local reader_slot* tl_slot = nullptr;

/// A read section: while it lives, no record or table this thread can reach
/// through the store's published pointers is freed or reused. Must not nest
/// and must not wait for a shard lock.
class read_guard {
 public:
  read_guard() noexcept {
    slot_ = tl_slot != nullptr ? tl_slot : register_reader();
    ctr_ = slot_->ctr.load(std::memory_order_relaxed) + 1;
#if !defined(__SANITIZE_THREAD__)
    if (asymmetric_fences()) {
      slot_->ctr.store(ctr_, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the writer's membarrier is the fence
      return;
    }
#endif
    slot_->ctr.exchange(ctr_, std::memory_order_seq_cst);  // a full barrier (xchg)
  }
  ~read_guard() { slot_->ctr.store(ctr_ + 1, std::memory_order_release); }
  read_guard(const read_guard&) = delete;
  read_guard& operator=(const read_guard&) = delete;

 private:
  reader_slot* slot_;
  std::uint64_t ctr_;
};

/// Waits until every read section that began before this call has ended.
/// Requires: the caller is not inside a read section. Takes the registry
/// lock (threads registering meanwhile wait). Cost: one membarrier system
/// call and one pass over the registered threads, plus the wait.
void synchronize();

}  // namespace sluice::keyed_detail
