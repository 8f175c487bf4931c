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

/// The independent kinds of read section. A section of one domain may
/// contain a section of the other, and its thread may wait for the other's
/// grace periods (the memory store's policy gate holds a `store` section
/// around a keyed store's decision, which may reclaim); never the same.
enum class domain : unsigned { keyed = 0, store = 1 };
inline constexpr unsigned domain_count = 2;

/// One thread's read counters (one per domain), alone on its cache line.
/// Slots are never freed: a thread that exits gives its slot back for the
/// next thread.
struct alignas(64) reader_slot {
  std::atomic<std::uint64_t> ctr[domain_count] = {};  // odd: inside a read section
  std::atomic<bool> taken{false};
  /// The slot's place in the registry (0, 1, 2, ...): unique among the
  /// threads alive at once, so it can index per-thread data (counters).
  unsigned index = 0;
  reader_slot* next = nullptr;  // registry list; written once, under the registry lock
};

/// The calling thread's slot, registering it on first use.
reader_slot* register_reader();

/// Whether readers may skip their fence (the writer issues membarrier).
bool asymmetric_fences() noexcept;

/// This thread's slot; null until its first read section.
inline thread_local reader_slot* tl_slot = nullptr;

/// The calling thread's slot.
inline reader_slot* this_thread_slot() { return tl_slot != nullptr ? tl_slot : register_reader(); }

/// A read section of domain `D`: while it lives, nothing this thread can
/// reach through that domain's published pointers is freed or reused (the
/// keyed store: records and tables). Must not nest within its own domain
/// and must not wait for a shard lock (keyed) or a policy gate (store).
template <domain D>
class basic_read_guard {
 public:
  basic_read_guard() noexcept {
    slot_ = this_thread_slot();
    std::atomic<std::uint64_t>& c = slot_->ctr[static_cast<unsigned>(D)];
    ctr_ = c.load(std::memory_order_relaxed) + 1;
#if !defined(__SANITIZE_THREAD__)
    if (asymmetric_fences()) {
      c.store(ctr_, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the writer's membarrier is the fence
      return;
    }
#endif
    c.exchange(ctr_, std::memory_order_seq_cst);  // a full barrier (xchg)
  }
  ~basic_read_guard() { slot_->ctr[static_cast<unsigned>(D)].store(ctr_ + 1, std::memory_order_release); }
  basic_read_guard(const basic_read_guard&) = delete;
  basic_read_guard& operator=(const basic_read_guard&) = delete;

  /// The slot of the thread in the section.
  [[nodiscard]] reader_slot* slot() const noexcept { return slot_; }

 private:
  reader_slot* slot_;
  std::uint64_t ctr_;
};

/// The keyed store's read section.
using read_guard = basic_read_guard<domain::keyed>;

/// Waits until every read section of domain `d` that began before this call
/// has ended. Requires: the caller is not inside a read section of `d`.
/// Cost: one membarrier system call and one pass over the registered
/// threads, plus the wait.
void synchronize(domain d = domain::keyed);

}  // namespace sluice::keyed_detail
