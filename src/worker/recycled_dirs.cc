#include "worker/recycled_dirs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "platform/beneath.h"
#include "platform/remove_beneath.h"
#include "spdlog/spdlog.h"

namespace idlepool::worker {
namespace fs = std::filesystem;

absl::Status RecycledDirs::Make(const std::string& path) {
  while (true) {
    std::string spare;
    {
      std::lock_guard lock(mu_);
      if (spare_.empty()) break;
      spare = std::move(spare_.back());
      spare_.pop_back();
    }
    // Checked again at reuse: something that escaped its process group (setsid) may have
    // written into the dir after it was emptied. Such a dir is discarded, never reused.
    std::error_code ec;
    if (fs::is_empty(spare, ec) && !ec && ::rename(spare.c_str(), path.c_str()) == 0) {
      return absl::OkStatus();
    }
    RemoveTree(spare);
  }
  if (::mkdir(path.c_str(), 0755) == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
}

// The dir itself is the worker's path; below it, nothing is followed (platform/remove_beneath.h).
void RecycledDirs::RemoveContents(const fs::path& dir) {
  std::error_code ec;
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
  absl::StatusOr<platform::UniqueFd> fd = platform::OpenDirectory(dir.string());
  if (!fd.ok()) return;  // gone, or RemoveTree's remove says why
  if (absl::Status st = platform::RemoveContentsBeneath(fd->get()); !st.ok()) {
    spdlog::warn("cannot empty {}: {}", dir.string(), std::string(st.message()));
  }
}

absl::Status RecycledDirs::ChownTree(const std::string& dir, uid_t uid, gid_t gid) {
  auto give = [&](const std::string& path) {
    if (::lchown(path.c_str(), uid, gid) == 0) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("cannot give ", path, " to the slot's user ", uid, ": ",
                                            std::strerror(errno)));
  };
  if (absl::Status st = give(dir); !st.ok()) return st;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (absl::Status st = give(it->path().string()); !st.ok()) return st;
  }
  if (ec) return absl::InternalError(absl::StrCat("cannot walk ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

void RecycledDirs::RemoveTree(const fs::path& dir) {
  RemoveContents(dir);
  std::error_code ec;
  fs::remove(dir, ec);
  if (ec) spdlog::warn("cannot remove {}: {}", dir.string(), ec.message());
}

void RecycledDirs::Recycle(const std::string& path) {
  RemoveContents(path);
  std::error_code ec;
  if (fs::is_empty(path, ec) && !ec) {
    std::lock_guard lock(mu_);
    if (spare_.size() < kMaxSpareDirs) {
      std::string spare = absl::StrCat(work_dir_, "/spare/", next_spare_++);
      if (::rename(path.c_str(), spare.c_str()) == 0) {
        spare_.push_back(std::move(spare));
        return;
      }
    }
  }
  RemoveTree(path);
}

}  // namespace idlepool::worker
