// Replacing a file safely: the one way sluice writes a file (snapshots, the
// command's --save-state and --plot). The target must be a regular file or
// not exist yet; a symbolic link is followed to its final target, which is
// replaced (the link stays a link); the new file is written next to the
// target under a temporary name, synced and renamed over it, so readers see
// the old file or the new one and never a torn one. Part of sluice::keyed
// (it uses POSIX files).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "sluice/core/result.hpp"

namespace sluice {

/// How `write_file_atomically` creates a file that does not exist yet.
struct atomic_write_options {
  /// Permission bits of a new file, before the process's umask; an existing
  /// file keeps its own mode (and, where the process may, its owner).
  unsigned new_file_mode = 0666;
};

/// Where a write to `path` lands: `path` itself, or the final target of the
/// symbolic links it names (at most 40 links). Error (field empty) when the
/// target exists and is not a regular file ("'p' is a FIFO, not a regular
/// file"), when `path` is empty or names no file ("ends with '/'"), or when
/// a link cannot be read; the message names `path` and says why.
result<std::string> resolve_write_target(const std::string& path);

/// A sink for bytes: returns false when they could not be written (errno
/// says why).
using byte_sink = std::function<bool(std::string_view)>;

/// Replaces the file at `path` (after `resolve_write_target`) with the bytes
/// `produce` passes to the sink it is given: a temporary file in the target's
/// folder (`.<name>.sluice-tmp-XXXXXX`), then fsync, rename over the target
/// and fsync of the folder. `produce` returns false to give up (a failed
/// sink). On any error the temporary file is removed and the target is left
/// as it was; the message (field empty) is "cannot write 'path': <reason>"
/// with the system's reason. Returns the path written (the link's target).
result<std::string> write_file_atomically(const std::string& path, const std::function<bool(const byte_sink&)>& produce,
                                          atomic_write_options options = {});

}  // namespace sluice
