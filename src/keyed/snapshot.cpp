// Snapshot files: atomic writing (temporary file, fsync, rename, fsync of the
// folder) and checked reading. The layout is in docs/snapshot-format.md.
#include "sluice/keyed/snapshot.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <unordered_set>
#include <variant>

#include "codec.hpp"
#include "sluice/core/portable.hpp"
#include "sluice/keyed/atomic_file.hpp"

namespace sluice {
namespace {

constexpr char magic[8] = {'S', 'L', 'U', 'I', 'C', 'E', 'S', 'N'};
constexpr char end_magic[8] = {'S', 'L', 'U', 'I', 'C', 'E', 'N', 'D'};
constexpr std::size_t fixed_header = 8 + 4 + 4 + 8 + 8 + 4;  // magic, version, flags, wall, taken_at, policy length
constexpr std::size_t trailer = 8 + 8 + 8 + 4;               // end magic, keys, file length, crc

std::string quoted(const std::string& path) { return "'" + path + "'"; }

error snap_error(const std::string& message) { return error{"snapshot", message}; }

std::string sys_reason() { return std::strerror(errno); }

/// A file descriptor closed on scope exit.
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

/// Streams bytes through a buffer to `sink`, keeping the running CRC-32C
/// and the count of bytes passed on.
class snap_out {
 public:
  explicit snap_out(std::function<bool(std::string_view)> sink) : sink_(std::move(sink)) { buf_.reserve(cap); }
  void append(std::string_view s) {
    buf_.append(s);
    if (buf_.size() >= cap) flush();
  }
  bool flush() {
    if (!ok_) return false;
    crc_ = crc32c(buf_.data(), buf_.size(), crc_);
    written_ += buf_.size();
    ok_ = sink_(buf_);
    buf_.clear();
    return ok_;
  }
  [[nodiscard]] std::uint32_t crc() const noexcept { return crc_; }
  [[nodiscard]] std::uint64_t written() const noexcept { return written_; }

 private:
  static constexpr std::size_t cap = 1 << 20;
  std::function<bool(std::string_view)> sink_;
  std::string buf_;
  std::uint32_t crc_ = 0;
  std::uint64_t written_ = 0;
  bool ok_ = true;
};

/// Writes a whole snapshot of `store` through `sink`: header, one record per
/// key, trailer. Returns false as soon as the sink fails.
bool stream_snapshot(const keyed_limiter& store, std::span<const override_state> overrides, tick taken_at,
                     std::int64_t wall_ns, const std::function<bool(std::string_view)>& sink, snapshot_info& info) {
  const any_policy& policy = store.policy();
  snap_out out(sink);
  std::string chunk;
  codec::writer w(chunk);
  chunk.append(magic, 8);
  w.u32(snapshot_version);
  w.u32(0);  // flags
  w.i64(wall_ns);
  w.i64(taken_at);
  const std::string pol = encode_policy(policy);
  w.u32(static_cast<std::uint32_t>(pol.size()));
  w.bytes(pol);
  // Version 3: the overrides, each with its key's state under it.
  w.u32(static_cast<std::uint32_t>(overrides.size()));
  for (const override_state& o : overrides) {
    const std::string op = encode_policy(o.policy);
    const std::string os = encode_state(o.policy, o.state, taken_at);
    w.u32(static_cast<std::uint32_t>(o.key.size()));
    w.bytes(o.key);
    w.u32(static_cast<std::uint32_t>(op.size()));
    w.bytes(op);
    w.u32(static_cast<std::uint32_t>(os.size()));
    w.bytes(os);
  }
  out.append(chunk);
  std::uint64_t keys = 0;
  std::string state;
  store.for_each([&](std::string_view key, const any_state& s) {
    state.clear();
    codec::writer sw(state);
    codec::encode_state_to(sw, policy, s, taken_at);
    chunk.clear();
    w.u32(static_cast<std::uint32_t>(key.size()));
    w.bytes(key);
    w.u32(static_cast<std::uint32_t>(state.size()));
    w.bytes(state);
    out.append(chunk);
    ++keys;
  });
  // The trailer: end marker, key count, the file's whole length, and the
  // CRC-32C of every byte before the CRC.
  if (!out.flush()) return false;
  const std::uint64_t total = out.written() + trailer;
  chunk.clear();
  chunk.append(end_magic, 8);
  w.u64(keys);
  w.u64(total);
  out.append(chunk);
  if (!out.flush()) return false;
  chunk.clear();
  w.u32(out.crc());
  if (!sink(chunk)) return false;
  info.version = snapshot_version;
  info.taken_at = taken_at;
  info.wall_ns = wall_ns;
  info.keys = keys;
  info.bytes = total;
  return true;
}

std::int64_t wall_now_ns() { return unix_clock::now(); }

/// Whether `p` holds an algorithm whose windows are aligned to the clock's
/// origin (its description's `aligned_windows`: fixed window, sliding-window
/// counter, bucketed sliding window): its states cannot be moved to another
/// clock's origin exactly.
bool has_aligned_windows(const any_policy& p) {
  return std::visit(
      [](const auto& pol) {
        using P = std::decay_t<decltype(pol)>;
        if constexpr (std::is_same_v<P, all_of> || std::is_same_v<P, any_of>) {
          return std::any_of(pol.parts().begin(), pol.parts().end(), has_aligned_windows);
        } else {
          return portable::of<P>::aligned_windows;
        }
      },
      p);
}

}  // namespace

struct snapshot::data {
  snapshot_info info;
  any_policy policy;
  std::string name;  // the file, for messages
  std::string file;
  std::vector<std::pair<std::string_view, std::string_view>> entries;  // key, state bytes (into `file`)
  struct override_entry {
    std::string_view key;
    any_policy policy;
    std::string_view state;  // bytes into `file`
  };
  std::vector<override_entry> overrides;  // version 3
};

snapshot::snapshot(std::unique_ptr<data> d) noexcept : d_(std::move(d)) {}
snapshot::snapshot(snapshot&&) noexcept = default;
snapshot& snapshot::operator=(snapshot&&) noexcept = default;
snapshot::~snapshot() = default;

const snapshot_info& snapshot::info() const noexcept { return d_->info; }

result<std::vector<std::pair<std::string, any_state>>> snapshot::states_at(tick at) const {
  // A version-1 file was written on a clock of its process's own origin
  // (the steady clock counts from boot): moved anywhere but its own
  // moment, its windows would lose their alignment (docs/snapshot-format.md).
  if (d_->info.version == 1 && at != d_->info.taken_at && has_aligned_windows(d_->policy))
    return snap_error(quoted(d_->name) +
                      " is a snapshot of format version 1, whose times count from its machine's boot: the windows of " +
                      describe_policy(d_->policy) +
                      " cannot continue exactly on the Unix clock (delete the file to start this policy fresh)");
  std::vector<std::pair<std::string, any_state>> out;
  out.reserve(d_->entries.size());
  for (const auto& [key, bytes] : d_->entries) {
    auto st = decode_state(d_->policy, bytes, at);
    if (!st) return snap_error("a state does not decode at this moment: " + st.err().message);
    out.emplace_back(std::string(key), std::move(st).value());
  }
  return out;
}

result<std::vector<override_state>> snapshot::overrides_at(tick at) const {
  std::vector<override_state> out;
  out.reserve(d_->overrides.size());
  for (const auto& o : d_->overrides) {
    auto st = decode_state(o.policy, o.state, at);
    if (!st) return snap_error("an override's state does not decode at this moment: " + st.err().message);
    out.push_back({std::string(o.key), o.policy, std::move(st).value()});
  }
  return out;
}

result<snapshot_info> save_snapshot(const keyed_limiter& store, const std::string& path, tick taken_at,
                                    std::int64_t wall_ns) {
  return save_snapshot(store, {}, path, taken_at, wall_ns);
}

result<snapshot_info> save_snapshot(const keyed_limiter& store, std::span<const override_state> overrides,
                                    const std::string& path, tick taken_at, std::int64_t wall_ns) {
  // New snapshots are private (0600, then the umask): keys name clients.
  snapshot_info info;
  auto written = write_file_atomically(
      path, [&](const byte_sink& sink) { return stream_snapshot(store, overrides, taken_at, wall_ns, sink, info); },
      atomic_write_options{.new_file_mode = 0600});
  if (!written) return snap_error(written.err().message);
  return info;
}

result<snapshot_info> save_snapshot(const keyed_limiter& store, const std::string& path) {
  return save_snapshot(store, path, store.now(), wall_now_ns());
}

std::string snapshot_bytes(const keyed_limiter& store, tick taken_at, std::int64_t wall_ns) {
  std::string out;
  snapshot_info info;
  stream_snapshot(
      store, {}, taken_at, wall_ns,
      [&out](std::string_view b) {
        out.append(b);
        return true;
      },
      info);
  return out;
}

result<snapshot> read_snapshot(const std::string& path, const any_policy& policy) {
  const std::string q = quoted(path);
  std::string file;
  fd_guard f;
  f.fd = ::open(path.c_str(), O_RDONLY);
  if (f.fd < 0) return snap_error("cannot read " + q + ": " + sys_reason());
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return snap_error("cannot read " + q + ": " + sys_reason());
  if (!S_ISREG(st.st_mode)) return snap_error(q + " is not a sluice snapshot (not a regular file)");
  file.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < file.size()) {
    const ssize_t r = ::read(f.fd, file.data() + got, file.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return snap_error("cannot read " + q + ": " + sys_reason());
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  file.resize(got);
  return parse_snapshot(std::move(file), policy, path);
}

result<snapshot> parse_snapshot(std::string bytes, const any_policy& policy, const std::string& name) {
  const std::string q = quoted(name);
  auto d = std::make_unique<snapshot::data>(snapshot::data{{}, policy, name, std::move(bytes), {}, {}});
  const std::string& file = d->file;
  if (file.size() < 8 || std::memcmp(file.data(), magic, 8) != 0) return snap_error(q + " is not a sluice snapshot");
  codec::reader head(std::string_view(file).substr(8));
  const std::uint32_t version = head.u32();
  if (!head.ok()) return snap_error(q + " is truncated");
  if (version < 1 || version > snapshot_version)
    return snap_error(q + " is a snapshot of format version " + std::to_string(version) +
                      "; this sluice reads versions 1 to " + std::to_string(snapshot_version));
  if (file.size() < fixed_header + trailer) return snap_error(q + " is truncated");
  const std::size_t tail = file.size() - trailer;
  if (std::memcmp(file.data() + tail, end_magic, 8) != 0) return snap_error(q + " is truncated (no end marker)");
  codec::reader tr(std::string_view(file).substr(tail + 8));
  const std::uint64_t keys = tr.u64();
  const std::uint64_t length = tr.u64();
  const std::uint32_t crc = tr.u32();
  if (length != file.size()) return snap_error(q + " is truncated or corrupt (its length is not the one recorded)");
  if (crc32c(file.data(), file.size() - 4) != crc) return snap_error(q + " is corrupt (checksum mismatch)");

  codec::reader r(std::string_view(file).substr(0, tail));
  (void)r.bytes(8);
  (void)r.u32();
  const std::uint32_t flags = r.u32();
  const std::int64_t wall = r.i64();
  const tick taken = r.i64();
  const std::uint32_t plen = r.u32();
  const std::string_view pol = r.bytes(plen);
  if (!r.ok()) return snap_error(q + " is corrupt (bad header)");
  if (flags != 0) return snap_error(q + " is corrupt (unknown flags)");
  if (pol != encode_policy(policy)) {
    auto saved = decode_policy(pol);
    if (!saved) return snap_error(q + " is corrupt (its limiter: " + saved.err().what() + ")");
    error e = snap_error(q + " was saved for another limiter: " + describe_policy(*saved) +
                         " (this one: " + describe_policy(policy) + ")");
    e.code = error_code::other_policy;
    return e;
  }
  std::unordered_set<std::string_view> overridden;
  if (version >= 3) {
    const std::uint32_t n = r.u32();
    if (!r.ok()) return snap_error(q + " is corrupt (bad header)");
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::string_view key = r.bytes(r.u32());
      const std::string_view op = r.bytes(r.u32());
      const std::string_view os = r.bytes(r.u32());
      if (!r.ok()) return snap_error(q + " is corrupt (an override runs past the end)");
      auto p = decode_policy(op);
      if (!p) return snap_error(q + " is corrupt (an override's policy: " + p.err().what() + ")");
      auto st = decode_state(*p, os, taken);
      if (!st) return snap_error(q + " is corrupt (an override's state: " + st.err().message + ")");
      if (!overridden.insert(key).second) return snap_error(q + " is corrupt (an override's key appears twice)");
      d->overrides.push_back({key, std::move(p).value(), os});
    }
  }
  std::unordered_set<std::string_view> seen;
  seen.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(keys, file.size() / 9 + 1)));
  d->entries.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(keys, file.size() / 9 + 1)));
  while (r.left() > 0) {
    const std::uint32_t klen = r.u32();
    const std::string_view key = r.bytes(klen);
    const std::uint32_t slen = r.u32();
    const std::string_view sbytes = r.bytes(slen);
    if (!r.ok()) return snap_error(q + " is corrupt (a record runs past the end)");
    auto st = decode_state(policy, sbytes, taken);
    if (!st) return snap_error(q + " is corrupt (the state of a key: " + st.err().message + ")");
    if (!seen.insert(key).second) return snap_error(q + " is corrupt (a key appears twice)");
    if (overridden.count(key) != 0) return snap_error(q + " is corrupt (an overridden key has a state of the policy)");
    d->entries.emplace_back(key, sbytes);
  }
  if (d->entries.size() != keys) return snap_error(q + " is corrupt (the count of keys differs)");
  d->info.version = version;
  d->info.taken_at = taken;
  d->info.wall_ns = wall;
  d->info.keys = keys;
  d->info.bytes = file.size();
  return snapshot(std::move(d));
}

namespace {
/// Replaces the store's states with the snapshot's as of `at`; the store is
/// untouched when that fails.
result<snapshot_info> restore_from(keyed_limiter& store, const std::string& path, const snapshot& snap, tick at) {
  auto states = snap.states_at(at);
  if (!states) return states.err();
  try {
    store.restore(*states);
  } catch (const std::exception& e) {
    return snap_error(quoted(path) + " does not fit this store: " + e.what());
  }
  return snap.info();
}
}  // namespace

result<snapshot_info> load_snapshot(keyed_limiter& store, const std::string& path, tick at) {
  auto snap = read_snapshot(path, store.policy());
  if (!snap) return snap.err();
  return restore_from(store, path, *snap, at);
}

result<snapshot_info> load_snapshot(keyed_limiter& store, const std::string& path) {
  auto snap = read_snapshot(path, store.policy());
  if (!snap) return snap.err();
  // Version 2 keeps the store's own ticks (the Unix clock's): put back as
  // they were. Version 1 counted from its process's boot: its moment is
  // placed at its wall-clock time on this store's clock, or at now if that
  // lies ahead (a wall clock that went back: no time passed); states_at
  // refuses what that cannot carry exactly.
  const tick at = snap->info().version == 1 ? std::min<tick>(snap->info().wall_ns, store.now()) : snap->info().taken_at;
  return restore_from(store, path, *snap, at);
}

tick restore_instant(const snapshot_info& info, tick now, std::int64_t wall_now_ns) noexcept {
  const detail::i128 elapsed = static_cast<detail::i128>(wall_now_ns) - info.wall_ns;
  if (elapsed <= 0) return now;
  const detail::i128 at = static_cast<detail::i128>(now) - elapsed;
  return at < std::numeric_limits<tick>::min() ? std::numeric_limits<tick>::min() : static_cast<tick>(at);
}

}  // namespace sluice
