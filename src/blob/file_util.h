// File helpers shared by the blob module's sources (not part of its public API).
//
// All functions are thread-safe (they share no state). Errors: kNotFound for a missing path,
// kResourceExhausted when the disk is full, kInternal otherwise; messages name the path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace idlepool::blob::internal {

absl::Status ErrnoStatus(const std::string& what, int err);

// Opens `path` read-only if it is a regular file (kFailedPrecondition otherwise); never blocks
// on a FIFO; with follow_symlinks = false a symlink is refused too.
absl::StatusOr<int> OpenRegularFile(const std::string& path, bool follow_symlinks);

// Reads exactly `n` bytes at `offset` unless the file ends first; returns the bytes read.
absl::StatusOr<size_t> PreadFull(int fd, void* buf, size_t n, uint64_t offset,
                                 const std::string& path);
absl::Status PwriteFull(int fd, std::string_view data, uint64_t offset, const std::string& path);

// fsync of the directory holding `path` (makes a rename or unlink in it durable).
void FsyncParentDir(const std::string& path);

// Writes `bytes` to `path` atomically: a unique temp file next to it, fsync, rename.
absl::Status WriteFileAtomic(const std::string& path, std::string_view bytes);

// Whole contents of a small file (at most `max_bytes`, kOutOfRange beyond).
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes);

// The newest modification time of the files that exist among `a` and `b` (wall clock, Unix ms);
// 0 when neither exists. Defined in store_space.cc.
int64_t LastWriteMs(const std::string& a, const std::string& b);

}  // namespace idlepool::blob::internal
