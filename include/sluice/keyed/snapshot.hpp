// Snapshots of a keyed store: every key's state saved to a file and read
// back, so that a restart does not hand every client a fresh limit.
//
// The format (docs/snapshot-format.md) is versioned binary with a CRC-32C
// of the whole file. States keep the store's own ticks (the Unix clock's
// nanoseconds by default, a trace's ticks in `sluice replay`): a restore
// puts every instant back as it was, so after any downtime every state is
// the one the store would hold had it kept running, and every decision the
// one it would have made (semantics.md, "Time and arithmetic"), fixed
// windows included. Version-1 files (whose default clock counted from boot)
// are still read where that can be done exactly.
//
// Writing is atomic: a temporary file in the same folder, fsync, rename over
// the target, fsync of the folder. A crash at any moment leaves the old file
// or the new one, never a mix. Reading checks everything (magic, version,
// length, checksum, the policy, every state's ranges) before it returns, so
// a truncated, corrupt or foreign file is refused and the running store is
// left untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/core/any.hpp"
#include "sluice/core/policy_codec.hpp"  // encode_policy, describe_policy, crc32c
#include "sluice/core/result.hpp"
#include "sluice/core/time.hpp"
#include "sluice/keyed/keyed.hpp"

namespace sluice {

/// The snapshot format version this sluice writes (it also reads 1 and 2).
inline constexpr std::uint32_t snapshot_version = 3;

/// One override (semantics.md, "Overrides") with its key's state, as a
/// snapshot (version 3) keeps it beside the policy's states.
struct override_state {
  std::string key;
  any_policy policy;  ///< the override
  any_state state;    ///< the key's state under it (fresh when it holds none)
};

/// What a snapshot's header and trailer say.
struct snapshot_info {
  std::uint32_t version = 0;  ///< format version (snapshot_version)
  tick taken_at = 0;          ///< the store's clock at the snapshot's moment, in ticks
  std::int64_t wall_ns = 0;   ///< the wall clock then: nanoseconds since the Unix epoch
  std::uint64_t keys = 0;     ///< states in the file
  std::uint64_t bytes = 0;    ///< the file's length
};

/// A snapshot read and fully checked, not yet applied to a store.
class snapshot {
 public:
  /// Movable (it owns the file's bytes), not copyable.
  snapshot(snapshot&&) noexcept;
  /// Movable, not copyable.
  snapshot& operator=(snapshot&&) noexcept;
  ~snapshot();

  /// The header's facts.
  [[nodiscard]] const snapshot_info& info() const noexcept;

  /// Every key's state with its times placed so that the snapshot's moment
  /// is `at` (ticks of the clock the states will be used with): a time t in
  /// the saved store becomes at + (t − taken_at), saturated to int64.
  /// `at == taken_at` puts every state back exactly (a restart). Another
  /// `at` shifts the states: fixed and sliding windows keep their alignment
  /// to the clock's origin, so they are exact when at − taken_at is a
  /// multiple of W and otherwise keep a count until the end of the window
  /// that holds the old window's last instant. A version-1 file with such
  /// windows is refused unless `at == taken_at` (its clock counted from
  /// boot; the message says so).
  [[nodiscard]] result<std::vector<std::pair<std::string, any_state>>> states_at(tick at) const;
  /// The file's overrides (none before version 3), each key's state placed
  /// as `states_at` places the states, in the file's order.
  [[nodiscard]] result<std::vector<override_state>> overrides_at(tick at) const;

  /// The checked bytes and their index (src/keyed/snapshot.cpp); not part of the API.
  struct data;

 private:
  explicit snapshot(std::unique_ptr<data> d) noexcept;
  friend result<snapshot> parse_snapshot(std::string bytes, const any_policy& policy, const std::string& name);
  std::unique_ptr<data> d_;
};

/// Saves every state of `store` to `path` atomically (temporary file in the
/// same folder, fsync, rename, fsync of the folder: write_file_atomically in
/// atomic_file.hpp), relative to the moment `taken_at` (the store's clock,
/// ticks) and the wall-clock time `wall_ns` (ns since the Unix epoch). A
/// symbolic link is written through to its target; a target that is not a
/// regular file (a device, a FIFO, a directory) is refused. An existing file
/// keeps its mode; a new one is created with mode 0600 (then the umask), as
/// its keys may name clients. Safe while other threads use the store (each key is read
/// atomically; keys changed during the save may or may not be in it). The
/// error (field "snapshot") names the path and the system's reason.
result<snapshot_info> save_snapshot(const keyed_limiter& store, const std::string& path, tick taken_at,
                                    std::int64_t wall_ns);

/// As above, with the policy's overrides and their keys' states (a memory
/// store's: memory_store::for_each_policy_with_overrides).
result<snapshot_info> save_snapshot(const keyed_limiter& store, std::span<const override_state> overrides,
                                    const std::string& path, tick taken_at, std::int64_t wall_ns);

/// As above at the store's own clock's now (`keyed_limiter::now`) and the
/// Unix clock's now.
result<snapshot_info> save_snapshot(const keyed_limiter& store, const std::string& path);

/// Reads and checks `path` for a store of `policy`. Errors (field
/// "snapshot"): "'f' is not a sluice snapshot", "'f' is a snapshot of format
/// version N; this sluice reads versions 1 to 3", "'f' is truncated", "'f' is
/// corrupt (checksum mismatch)", "'f' is corrupt (...)", "'f' was saved for
/// another limiter: ... (this one: ...)", "cannot read 'f': <reason>".
result<snapshot> read_snapshot(const std::string& path, const any_policy& policy);

/// The bytes `save_snapshot` would write, in memory (to send elsewhere, or
/// for tests). Thread safety as save_snapshot.
std::string snapshot_bytes(const keyed_limiter& store, tick taken_at, std::int64_t wall_ns);

/// Checks `bytes` as read_snapshot checks a file; `name` stands for the file
/// in messages.
result<snapshot> parse_snapshot(std::string bytes, const any_policy& policy, const std::string& name);

/// Reads `path` and, only if it is valid, replaces every state of `store`
/// with its states placed so the snapshot's moment is `at`.
result<snapshot_info> load_snapshot(keyed_limiter& store, const std::string& path, tick at);

/// As above at the snapshot's own moment (`at = taken_at`): every state
/// exactly as it was saved, on a store whose clock has the saver's origin
/// (the Unix clock, or the same manual clock). A version-1 file (its moment
/// on a steady clock counted from boot) is placed at its wall-clock time
/// `wall_ns` on this store's clock instead (at its now if that is earlier:
/// a wall clock that went back counts as no time passed), which is exact
/// except for aligned windows: a policy with those is refused.
result<snapshot_info> load_snapshot(keyed_limiter& store, const std::string& path);

/// The instant, on a nanosecond clock that reads `now` while the wall clock
/// reads `wall_now_ns`, of a snapshot taken at wall time `info.wall_ns`:
/// now − (wall_now_ns − wall_ns), saturated. A wall clock that went back
/// since counts as no time passed (never more permissive). For moving a
/// snapshot onto a clock of another origin (version-1 files).
tick restore_instant(const snapshot_info& info, tick now, std::int64_t wall_now_ns) noexcept;

/// The bytes of one state of `p` with its times relative to `moment`.
std::string encode_state(const any_policy& p, const any_state& s, tick moment);

/// A state of `p` from `encode_state`'s bytes, its times placed relative to
/// `moment`; checks every range, so a state that decodes is valid for `p`.
result<any_state> decode_state(const any_policy& p, std::string_view bytes, tick moment);

}  // namespace sluice
