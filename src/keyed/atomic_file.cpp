// Replacing a file safely (sluice/atomic_file.hpp): resolve symbolic links,
// refuse anything but a regular file, write a temporary file beside the
// target with the target's mode, fsync, rename, fsync the folder.
#include "sluice/keyed/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

namespace sluice {
namespace {

std::string quoted(const std::string& path) { return "'" + path + "'"; }

std::string sys_reason(int e) { return std::strerror(e); }

/// What a file that is not regular is, for the message.
const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

/// The folder part of `path` ("." when it has none) and the name after it.
std::pair<std::string, std::string> split(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

struct target {
  std::string path;  // after following links
  bool exists = false;
  struct stat st {};
};

result<target> resolve(const std::string& path) {
  const std::string q = quoted(path);
  if (path.empty()) return error{"", "cannot write '': the file name is empty"};
  target t;
  t.path = path;
  for (int links = 0;; ++links) {
    if (t.path.back() == '/') return error{"", "cannot write " + q + ": not a file name (it ends with '/')"};
    if (::lstat(t.path.c_str(), &t.st) != 0) {
      const int e = errno;
      if (e != ENOENT) return error{"", "cannot write " + q + ": " + sys_reason(e)};
      // A new file: its folder must be there and writable.
      const std::string dir = split(t.path).first;
      struct stat ds {};
      if (::stat(dir.c_str(), &ds) != 0) return error{"", "cannot write " + q + ": " + sys_reason(errno)};
      if (!S_ISDIR(ds.st_mode)) return error{"", "cannot write " + q + ": " + sys_reason(ENOTDIR)};
      if (::access(dir.c_str(), W_OK | X_OK) != 0) return error{"", "cannot write " + q + ": " + sys_reason(errno)};
      return t;
    }
    if (!S_ISLNK(t.st.st_mode)) break;
    if (links == 40) return error{"", "cannot write " + q + ": " + sys_reason(ELOOP)};
    std::string link(4096, '\0');
    const ssize_t n = ::readlink(t.path.c_str(), link.data(), link.size());
    if (n < 0) return error{"", "cannot write " + q + ": " + sys_reason(errno)};
    link.resize(static_cast<std::size_t>(n));
    if (link.empty()) return error{"", "cannot write " + q + ": an empty symbolic link"};
    if (link.front() != '/') {
      const std::size_t slash = t.path.find_last_of('/');
      if (slash != std::string::npos) link = t.path.substr(0, slash + 1) + link;
    }
    t.path = link;
  }
  t.exists = true;
  if (!S_ISREG(t.st.st_mode)) {
    const std::string via = t.path == path ? "" : " (through links to " + quoted(t.path) + ")";
    return error{"", "cannot write " + q + via + ": it is " + kind_of(t.st.st_mode) +
                         ", not a regular file; sluice replaces only regular files"};
  }
  return t;
}

/// A file descriptor closed on scope exit.
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

/// Creates `.<base>.sluice-tmp-XXXXXX` beside the target with `mode` (the
/// umask applies), never opening an existing file.
int create_temporary(const std::string& dir_prefix, const std::string& base, unsigned mode, std::string& name) {
  static constexpr char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::mt19937_64 g(std::random_device{}() ^
                    static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                    static_cast<std::uint64_t>(::getpid()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    name = dir_prefix + "." + base + ".sluice-tmp-";
    for (int i = 0; i < 6; ++i) name += letters[g() % (sizeof letters - 1)];
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, static_cast<mode_t>(mode));
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

result<std::string> resolve_write_target(const std::string& path) {
  auto t = resolve(path);
  if (!t) return t.err();
  return t->path;
}

result<std::string> write_file_atomically(const std::string& path, const std::function<bool(const byte_sink&)>& produce,
                                          atomic_write_options options) {
  auto resolved = resolve(path);
  if (!resolved) return resolved.err();
  const target& t = *resolved;
  const std::string q = quoted(path);
  const auto [dir, base] = split(t.path);
  const std::size_t slash = t.path.find_last_of('/');
  const std::string dir_prefix = slash == std::string::npos ? std::string() : t.path.substr(0, slash + 1);
  // An existing file keeps its permission bits; a new one gets the
  // options' mode less the umask (open applies it).
  const unsigned mode = t.exists ? static_cast<unsigned>(t.st.st_mode & 07777) : (options.new_file_mode & 07777);
  std::string tmp;
  fd_guard f;
  f.fd = create_temporary(dir_prefix, base, t.exists ? 0600 : mode, tmp);
  if (f.fd < 0) return error{"", "cannot write " + q + ": " + sys_reason(errno)};
  const auto fail = [&](int e) -> result<std::string> {
    ::unlink(tmp.c_str());
    return error{"", "cannot write " + q + ": " + sys_reason(e)};
  };
  if (t.exists) {
    // The old file's owner where the process may set it (root, or the same
    // owner), then its mode (after chown, which may clear set-id bits).
    if (t.st.st_uid != ::geteuid() || t.st.st_gid != ::getegid()) (void)!::fchown(f.fd, t.st.st_uid, t.st.st_gid);
    if (::fchmod(f.fd, static_cast<mode_t>(mode)) != 0) return fail(errno);
  }
  int write_error = 0;
  const int fd = f.fd;
  const byte_sink sink = [fd, &write_error](std::string_view b) {
    if (write_all(fd, b.data(), b.size())) return true;
    write_error = errno;
    return false;
  };
  errno = 0;
  if (!produce(sink)) return fail(write_error != 0 ? write_error : (errno != 0 ? errno : EIO));
  if (::fsync(f.fd) != 0) return fail(errno);
  const int closed = ::close(f.fd);
  f.fd = -1;
  if (closed != 0) return fail(errno);
  if (::rename(tmp.c_str(), t.path.c_str()) != 0) return fail(errno);
  fd_guard d;
  d.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d.fd < 0 || ::fsync(d.fd) != 0)
    return error{"", "wrote " + q + " but could not sync its folder: " + sys_reason(errno)};
  return t.path;
}

}  // namespace sluice
