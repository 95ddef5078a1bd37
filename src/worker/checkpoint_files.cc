#include "worker/checkpoint_files.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "blob/blob.h"

namespace idlepool::worker {
namespace {

int64_t MtimeNs(const struct stat& st) {
  return (std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec))
      .count();
}

// A depth-first walk; every directory below the root is opened beneath it by its whole path.
class Lister {
 public:
  Lister(int root_fd, size_t max_files) : root_(root_fd), max_files_(max_files) {}

  void Dir(int dir_fd, const std::string& prefix) {
    absl::StatusOr<std::vector<platform::DirEntry>> entries = platform::ListDirectory(dir_fd);
    if (!entries.ok()) {
      if (!prefix.empty()) Refuse(prefix, "cannot be read");
      return;
    }
    for (const platform::DirEntry& e : *entries) {
      if (out_.truncated) return;
      const std::string rel = prefix.empty() ? e.name : absl::StrCat(prefix, "/", e.name);
      if (e.kind == platform::EntryKind::kSymlink) {
        Refuse(rel, "is a symbolic link");
      } else if (e.kind == platform::EntryKind::kDirectory) {
        absl::StatusOr<platform::UniqueFd> sub = platform::OpenDirectoryBeneath(root_, rel);
        if (sub.ok()) {
          Dir(sub->get(), rel);
        } else if (!absl::IsNotFound(sub.status())) {
          out_.refused.emplace_back(sub.status().message());
        }
      } else {
        File(dir_fd, e.name, rel);
      }
    }
  }

  CheckpointListing Take() {
    std::sort(out_.files.begin(), out_.files.end(),
              [](const CheckpointFile& a, const CheckpointFile& b) { return a.rel < b.rel; });
    std::sort(out_.refused.begin(), out_.refused.end());
    return std::move(out_);
  }

 private:
  void Refuse(const std::string& rel, std::string_view why) {
    out_.refused.push_back(absl::StrCat("'", rel, "' ", std::string(why)));
  }

  void File(int dir_fd, const std::string& name, const std::string& rel) {
    struct stat st;
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;  // gone
    if (!S_ISREG(st.st_mode)) return Refuse(rel, platform::DescribeKind(st.st_mode));
    if (st.st_nlink != 1) return Refuse(rel, absl::StrCat("has ", st.st_nlink, " hard links"));
    out_.files.push_back(CheckpointFile{rel, static_cast<uint64_t>(st.st_size), MtimeNs(st)});
    if (out_.files.size() > max_files_) out_.truncated = true;
  }

  const int root_;
  const size_t max_files_;
  CheckpointListing out_;
};

}  // namespace

CheckpointListing ListCheckpoint(const std::string& dir, size_t max_files) {
  absl::StatusOr<platform::UniqueFd> root = platform::OpenDirectory(dir);
  if (!root.ok()) return {};
  Lister lister(root->get(), max_files);
  lister.Dir(root->get(), "");
  return lister.Take();
}

std::string Fingerprint(const CheckpointListing& listing) {
  std::string f;
  for (const auto& e : listing.files)
    absl::StrAppend(&f, e.rel, "\n", e.size, " ", e.mtime_ns, "\n");
  for (const auto& r : listing.refused) absl::StrAppend(&f, "refused ", r, "\n");
  return f;
}

absl::StatusOr<OpenedCheckpointFile> OpenListed(int dir_fd, const CheckpointFile& f) {
  absl::StatusOr<platform::OpenedFile> opened = platform::OpenFileBeneath(dir_fd, f.rel);
  if (!opened.ok()) return opened.status();
  const auto changed = [&f](const char* when) {
    return absl::UnavailableError(absl::StrCat("checkpoint file ", f.rel, " changed ", when));
  };
  if (static_cast<uint64_t>(opened->st.st_size) != f.size || MtimeNs(opened->st) != f.mtime_ns) {
    return changed("since it was listed");
  }
  absl::StatusOr<blob::FileDigest> digest = blob::HashFd(opened->fd.get(), f.rel);
  if (!digest.ok()) return digest.status();
  struct stat after;
  if (::fstat(opened->fd.get(), &after) != 0 || static_cast<uint64_t>(after.st_size) != f.size ||
      MtimeNs(after) != f.mtime_ns || digest->size != f.size) {
    return changed("while it was read");
  }
  OpenedCheckpointFile out;
  out.fd = std::move(opened->fd);
  out.file.set_path(f.rel);
  out.file.set_sha256(digest->sha256);
  out.file.set_size(digest->size);
  return out;
}

}  // namespace idlepool::worker
