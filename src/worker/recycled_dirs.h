// RecycledDirs: the attempts' checkpoint dirs, recycled through a spare pool, and tree removal.
//
// An emptied checkpoint dir is renamed into WORK_DIR/spare/ and renamed back for the next
// attempt: on ext4, allocating fresh inodes after many deletions (mkdir) was the largest
// per-task cost of short tasks; a rename allocates nothing. Only checkpoint dirs: a task dir is
// always new (it is the working dir a process that escaped its group keeps, and a reused one
// would let it write into another task's outputs). Tasks address checkpoint dirs by path, which
// a rename invalidates.
//
// Any thread; one mutex guards the spare list. Errors: kInternal when a dir cannot be made.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"

namespace idlepool::worker {

class RecycledDirs {
 public:
  explicit RecycledDirs(std::string work_dir) : work_dir_(std::move(work_dir)) {}

  // Creates the empty dir `path`, from a spare when one is empty and can be renamed.
  [[nodiscard]] absl::Status Make(const std::string& path);
  // Empties `path` and keeps it as a spare (or removes it when the pool is full).
  void Recycle(const std::string& path);

  // Removes everything below `dir` (not `dir` itself), also subdirs a task made read-only,
  // never following a link (platform/remove_beneath.h).
  static void RemoveContents(const std::filesystem::path& dir);
  // Gives `dir` and everything below it (links themselves, never followed) to uid:gid.
  // kInternal naming the path that could not be changed.
  [[nodiscard]] static absl::Status ChownTree(const std::string& dir, uid_t uid, gid_t gid);
  // Removes `dir` and everything below it; logs a failure.
  static void RemoveTree(const std::filesystem::path& dir);

 private:
  static constexpr size_t kMaxSpareDirs = 256;
  const std::string work_dir_;
  std::mutex mu_;
  std::vector<std::string> spare_ ABSL_GUARDED_BY(mu_);
  uint64_t next_spare_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace idlepool::worker
