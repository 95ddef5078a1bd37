// Opening what a task left in its dirs without being led out of them.
//
// A task controls everything inside its task and checkpoint dirs and may change it while the
// worker reads them: swap a file for a symbolic link to a file of the lending machine between a
// check and an open, link a subdirectory to /etc, or give a file it could never read a second
// name in its dir (`ln ~/.ssh/id_rsa out.txt`: the same inode, a hard link). So nothing here
// checks a path and then opens it: a name is opened relative to a directory fd and what was
// opened is checked on the fd itself.
//
// Resolution: openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS and
// O_NOFOLLOW: no symbolic link is followed anywhere on the way, nor at the end, and nothing
// resolves outside the dir. Where the kernel has no openat2 (before Linux 5.6: ENOSYS, or a
// seccomp filter that answers EPERM) the same by a walk, one openat(O_NOFOLLOW | O_DIRECTORY)
// per directory component from the dir fd; the walk also names the component at fault when
// openat2 refuses. Mount points below the dir are crossed (a task cannot make one the worker
// sees).
//
// Paths: `rel` is relative and normalized: not empty, no leading '/', no empty, "." or ".."
// component, at most 4096 bytes; anything else is refused before the file system is touched.
//
// Errors: messages start with the quoted part of `rel` at fault, so that a caller can put its
// own noun in front ("output 'out.txt' is a symbolic link"):
//   kInvalidArgument     `rel` is not a normalized relative path;
//   kFailedPrecondition  refused: "'a' is a symbolic link", "'x' has 2 hard links", "'x' is a
//                        directory" (a FIFO, a socket, a device), "'a' is not a directory";
//   kNotFound            no such file or directory;
//   kResourceExhausted   out of file descriptors (EMFILE, ENFILE);
//   kInternal            anything else (the errno text).
// Threads: any; the only shared state is a process-wide flag remembering that openat2 is
// missing. Ownership: returned descriptors are the caller's (UniqueFd), all O_CLOEXEC.
#pragma once

#include <sys/stat.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "platform/unique_fd.h"

namespace idlepool::platform {

// The '/'-separated components of `path` (views into it; "a//b" has an empty one).
[[nodiscard]] std::vector<std::string_view> SplitPath(std::string_view path);

// OK when `rel` is a normalized relative path (above), else kInvalidArgument saying why.
[[nodiscard]] absl::Status CheckRelativePath(std::string_view rel);

// kWalk: the component walk even where openat2 exists (tests of the fallback).
enum class Resolver { kAuto, kWalk };

// The directory at `path`, the root for the calls below. `path` is the caller's own (a task or
// checkpoint dir it made), resolved normally.
[[nodiscard]] absl::StatusOr<UniqueFd> OpenDirectory(const std::string& path);

struct OpenedFile {
  UniqueFd fd;        // O_RDONLY | O_NONBLOCK | O_NOCTTY: a FIFO swapped in never blocks
  struct stat st {};  // fstat of `fd`: a regular file with st_nlink == 1
};

// Opens `rel` beneath `dir_fd` for reading when it is a regular file with a single link.
[[nodiscard]] absl::StatusOr<OpenedFile> OpenFileBeneath(int dir_fd, std::string_view rel,
                                                         Resolver resolver = Resolver::kAuto);

// Opens directory `rel` beneath `dir_fd` (O_PATH: a dir fd for *at() calls and ListDirectory).
[[nodiscard]] absl::StatusOr<UniqueFd> OpenDirectoryBeneath(int dir_fd, std::string_view rel,
                                                            Resolver resolver = Resolver::kAuto);

// What a directory entry is, as lstat(2) sees it: a symbolic link is never followed.
enum class EntryKind { kRegular, kDirectory, kSymlink, kOther };

struct DirEntry {
  std::string name;
  EntryKind kind = EntryKind::kOther;
};

// The entries of directory `dir_fd` (read through a fresh open of "."; `dir_fd` itself is
// untouched), "." and ".." left out, sorted by name (bytes). The kind comes from d_type, or
// from fstatat(AT_SYMLINK_NOFOLLOW) where the file system does not fill it in; an entry gone
// meanwhile is left out.
[[nodiscard]] absl::StatusOr<std::vector<DirEntry>> ListDirectory(int dir_fd);

// The kind of entry `name` (one component) of `dir_fd`; kNotFound when there is none.
[[nodiscard]] absl::StatusOr<EntryKind> KindOf(int dir_fd, const std::string& name);

// "is a symbolic link", "is a directory", "is a FIFO", ... for messages.
[[nodiscard]] std::string_view DescribeKind(mode_t mode);

}  // namespace idlepool::platform
