// The files of an attempt's checkpoint dir, as the checkpointer (checkpointer.h) saves them:
// listed and opened beneath the dir (platform/beneath.h), so that a task, which controls the
// dir and may change it while the worker reads, cannot lead the worker to a file of the lending
// machine.
//
// A checkpoint holds regular files with a single link. Symbolic links (wherever they point),
// files with more than one link (`ln ~/.ssh/id_rsa state`), FIFOs, sockets and devices are
// left out and listed as refused, for the worker's log; a linked directory is never entered.
//
// Threads: any; no shared state. Units: bytes, nanoseconds since the epoch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "idlepool.pb.h"
#include "platform/beneath.h"

namespace idlepool::worker {

struct CheckpointFile {
  std::string rel;  // relative to the dir
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

struct CheckpointListing {
  std::vector<CheckpointFile> files;  // sorted by rel
  std::vector<std::string> refused;   // "'rel' is a symbolic link", ... sorted
  bool truncated = false;             // stopped after `max_files` + 1 files
};

// Lists `dir` (its regular files: what identifies their content cheaply, size and mtime),
// stopping once it holds more than `max_files`. A dir that cannot be opened lists as empty.
[[nodiscard]] CheckpointListing ListCheckpoint(const std::string& dir, size_t max_files);

// The listing as one string: equal fingerprints mean nothing to upload.
[[nodiscard]] std::string Fingerprint(const CheckpointListing& listing);

// A listed file opened for upload: hashed from the descriptor that will be uploaded.
struct OpenedCheckpointFile {
  platform::UniqueFd fd;
  v1::OutputFile file;  // path, sha256, size
};

// Opens `f` beneath `dir_fd` and hashes it. kUnavailable when it changed since it was listed
// or while it was read (a later pass tries again); beneath.h's errors when it is no longer a
// regular file with a single link.
[[nodiscard]] absl::StatusOr<OpenedCheckpointFile> OpenListed(int dir_fd, const CheckpointFile& f);

}  // namespace idlepool::worker
